"""Every reported network domain of a cluster snapshot as rows of one matrix, built once per snapshot.

The clusters' ``status.topology`` (docs/protocol.md "Topology") lists, per tier, the roomiest
domains with their free node shapes; each cluster's top tier is the whole cluster (its node
shapes). :class:`DomainIndex` stacks the node shapes of every domain of every cluster into one
``free`` matrix (rows × resources) with ``counts`` and the domain of each row, so that for one
pod shape the pods each domain holds are one vectorised pass and one ``bincount``, whatever the
number of clusters (:meth:`DomainIndex.room`). Built per snapshot (the identity of the clusters
tuple, as :class:`~federation.placement.table.TableCache` does) and reused by every job.
"""

from __future__ import annotations

import numpy as np

from federation.placement.estimate import PODS, per_node_fit, request_vector
from federation.placement.request import (
    DEFAULT_MAX_PODS_PER_NODE,
    ClusterState,
    ClusterTopology,
    Labels,
    NodeShape,
    Resources,
)
from policies.lru import LRU

#: the name of a cluster's top-tier domain (the whole cluster), as the agent names it
CLUSTER_DOMAIN = "<cluster-top-hypernode>"


class DomainIndex:
    """Domains (``cluster``, ``tier``, ``name``, ``shapes``) and their node-shape rows."""

    def __init__(self, clusters: tuple[ClusterState, ...]) -> None:
        self.clusters = clusters
        self.cluster_names = [c.name for c in clusters]
        self.top_tier = np.array([(c.topology or ClusterTopology()).top_tier for c in clusters], dtype=np.int64)
        self.tier_names: list[dict[str, int]] = [
            {t.tier_name: t.tier for t in (c.topology or ClusterTopology()).tiers if t.tier_name} for c in clusters]
        domains: list[tuple[int, int, str, tuple[NodeShape, ...]]] = []  # (cluster, tier, name, shapes)
        for ci, cluster in enumerate(clusters):
            topology = cluster.topology or ClusterTopology()
            domains.extend((ci, t.tier, d.name, d.shapes) for t in topology.tiers for d in t.domains)
            domains.append((ci, topology.top_tier, CLUSTER_DOMAIN, cluster.node_shapes or ()))
        self.cluster_of = np.array([d[0] for d in domains], dtype=np.int64)
        self.tier = np.array([d[1] for d in domains], dtype=np.int64)
        self.names: list[str] = [d[2] for d in domains]
        self.shapes: list[tuple[NodeShape, ...]] = [d[3] for d in domains]
        self._rows(self.shapes)

    def _rows(self, shapes: list[tuple[NodeShape, ...]]) -> None:
        columns = {PODS} | {name for group in shapes for shape in group for name, _ in shape.free}
        self.index = {name: i for i, name in enumerate(sorted(columns))}
        rows = [(d, shape) for d, group in enumerate(shapes) for shape in group if shape.count > 0]
        self.free = np.zeros((len(rows), len(self.index)))
        self.free[:, self.index[PODS]] = DEFAULT_MAX_PODS_PER_NODE
        for r, (_, shape) in enumerate(rows):
            for name, amount in shape.free:
                self.free[r, self.index[name]] = amount
        self.counts = np.array([shape.count for _, shape in rows], dtype=np.int64)
        self.domain_of_row = np.array([d for d, _ in rows], dtype=np.int64)
        self.labels = [dict(shape.labels) for _, shape in rows]
        self._masks: dict[Labels, np.ndarray] = {}

    def mask(self, selector: Labels) -> np.ndarray:
        found = self._masks.get(selector)
        if found is None:
            found = np.array([all(lab.get(k) == v for k, v in selector) for lab in self.labels], dtype=bool)
            self._masks[selector] = found
        return found

    def room(self, request: Resources, selector: Labels) -> np.ndarray:
        """Per domain: pods of this shape its free node shapes hold (0 when a resource is missing)."""
        vec = request_vector(self.index, request)
        if vec is None or len(self.counts) == 0:
            return np.zeros(len(self.names), dtype=np.int64)
        fit = per_node_fit(self.free, vec) * self.counts
        if selector:
            fit = fit * self.mask(selector)
        return np.bincount(self.domain_of_row, weights=fit, minlength=len(self.names)).astype(np.int64)


class DomainCache:
    """The index of the last few snapshots, by the identity of the clusters tuple."""

    def __init__(self, size: int = 4) -> None:
        self._items: LRU[int, DomainIndex] = LRU(size)

    def get(self, clusters: tuple[ClusterState, ...]) -> DomainIndex:
        found = self._items.get(id(clusters))
        if found is not None and found.clusters is clusters:
            return found
        index = DomainIndex(clusters)
        self._items.put(id(clusters), index)
        return index
