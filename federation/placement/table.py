"""All clusters of a snapshot as numpy rows, with per-shape estimates cached.

A controller builds the cluster tuple once per change of cluster state and places many jobs
against it; the table (and every per-shape estimate on it) is built once per tuple and
reused, so the per-job cost is a dictionary lookup per task shape.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import replace
from typing import Sequence

import numpy as np

from federation.placement.estimate import (
    Component,
    Groups,
    apply_assumed,
    general_estimate,
    general_sets,
    groups_of,
    max_sets,
    per_node_fit,
    request_vector,
    resource_index,
)
from federation.placement.request import AssumedWorkload, ClusterState, Labels, Resources, resources
from policies.lru import LRU

NO_ESTIMATE = -1


class ClusterTable:
    def __init__(self, clusters: tuple[ClusterState, ...]) -> None:
        self.clusters = clusters
        self.by_name = {c.name: c for c in clusters}
        self.position = {c.name: i for i, c in enumerate(clusters)}
        self.index = resource_index(clusters)
        self.groups: dict[str, Groups] = {
            c.name: groups_of(c, self.index) for c in clusters if c.node_shapes is not None
        }
        owners, frees, counts, labels = [], [], [], []
        for c in clusters:
            g = self.groups.get(c.name)
            if g is None:
                continue
            owners.extend([self.position[c.name]] * len(g.counts))
            frees.append(g.free)
            counts.append(g.counts)
            labels.extend(g.labels)
        self.owner = np.array(owners, dtype=np.int64)
        self.free = np.vstack(frees) if frees else np.zeros((0, len(self.index)))
        self.counts = np.concatenate(counts) if counts else np.zeros(0, dtype=np.int64)
        self.labels = labels
        self.has_shapes = np.array([c.node_shapes is not None for c in clusters], dtype=bool)
        self._cache: dict[tuple[Resources, Labels], np.ndarray] = {}
        #: groups after a cluster's assumed workloads, and gang-set answers, per (cluster,
        #: assumed on it[, components, upper]): a burst re-asks them for every task and share
        self._after: LRU[tuple[str, tuple[AssumedWorkload, ...]], Groups | None] = LRU(256)
        self._sets: LRU[tuple[object, ...], tuple[int, int, str]] = LRU(8192)
        self._sets_idle: LRU[tuple[object, ...], dict[str, tuple[int, int, str]]] = LRU(1024)

    def task_estimates(self, request: Resources, selector: Labels) -> np.ndarray:
        """Pods of this shape that fit, per cluster in table order (exact, or general)."""
        key = (request, selector)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        n = len(self.clusters)
        exact = np.zeros(n, dtype=np.int64)
        vec = request_vector(self.index, request)
        if vec is not None and len(self.counts):
            fit = per_node_fit(self.free, vec)
            if selector:
                fit = fit * np.array([all(lab.get(k) == v for k, v in selector) for lab in self.labels])
            exact = np.bincount(self.owner, weights=np.minimum(fit, 1 << 40) * self.counts, minlength=n)
            exact = exact.astype(np.int64)
        out = np.where(self.has_shapes, exact, NO_ESTIMATE)
        for i, cluster in enumerate(self.clusters):
            if cluster.node_shapes is None:
                general = general_estimate(cluster, request)
                out[i] = NO_ESTIMATE if general is None else general
        out = np.maximum(out, NO_ESTIMATE)
        out.setflags(write=False)
        self._cache[key] = out
        return out

    def cluster_groups(self, name: str, assumed: Sequence[AssumedWorkload]) -> Groups | None:
        """The cluster's node groups after its assumed workloads (shared: do not modify)."""
        groups = self.groups.get(name)
        if groups is None:
            return None
        mine = tuple(a for a in assumed if a.cluster == name)
        if not mine:
            return groups
        key = (name, mine)
        hit = self._after.get(key)
        if hit is None:
            hit = apply_assumed(groups, mine)
            self._after.put(key, hit)
        return hit

    def summary_after(self, name: str, assumed: Sequence[AssumedWorkload]) -> ClusterState:
        """The cluster with its assumed workloads counted as ``allocating`` in resourceSummary."""
        cluster = self.by_name[name]
        mine = [a for a in assumed if a.cluster == name]
        if not mine or cluster.summary is None:
            return cluster
        pending = dict(cluster.summary.allocating)
        for work in mine:
            for request, replicas in work.components:
                for res, amount in request:
                    pending[res] = pending.get(res, 0.0) + amount * replicas
        summary = replace(cluster.summary, allocating=resources(pending))
        return replace(cluster, summary=summary)

    def estimate_on(self, name: str, request: Resources, selector: Labels,
                    assumed: Sequence[AssumedWorkload]) -> int:
        """One shape on one cluster after its assumed workloads (the slow, exact path)."""
        groups = self.cluster_groups(name, assumed)
        cluster = self.summary_after(name, assumed)
        if groups is not None:
            vec = groups.vector(request)
            return 0 if vec is None else int((groups.fits(vec, selector) * groups.counts).sum())
        general = general_estimate(cluster, request)
        return NO_ESTIMATE if general is None else general

    def sets_on(self, name: str, components: Sequence[Component],
                assumed: Sequence[AssumedWorkload], upper: int) -> tuple[int, int, str]:
        """(whole sets, pods of the next set placed, estimator kind) on one cluster (cached per
        cluster, its assumed workloads, the components and the bound)."""
        key = (name, tuple(a for a in assumed if a.cluster == name), tuple(components), upper)
        hit = self._sets.get(key)
        if hit is not None:
            return hit
        groups = self.cluster_groups(name, assumed)
        if groups is None:
            general = general_sets(self.summary_after(name, assumed), components)
            answer = (0, 0, "none") if general is None else (min(general, upper), 0, "general")
        else:
            sets, partial = max_sets(groups, components, upper)
            answer = (sets, partial, "exact")
        self._sets.put(key, answer)
        return answer


    def sets_for(self, names: Sequence[str], components: Sequence[Component],
                 assumed: Sequence[AssumedWorkload], upper: int) -> list[tuple[int, int, str]]:
        """:meth:`sets_on` for several clusters; one cache lookup per cluster without assumed work."""
        busy = {a.cluster for a in assumed}
        comps = tuple(components)
        key = (comps, upper)
        per_cluster = self._sets_idle.get(key)
        if per_cluster is None:
            per_cluster = {}
            self._sets_idle.put(key, per_cluster)
        out = []
        for name in names:
            if name in busy:
                out.append(self.sets_on(name, comps, assumed, upper))
                continue
            hit = per_cluster.get(name)
            if hit is None:
                hit = per_cluster[name] = self.sets_on(name, comps, (), upper)
            out.append(hit)
        return out


class TableCache:
    """Tables by cluster tuple identity (the tuple is kept alive, so ids are not reused)."""

    def __init__(self, size: int = 8) -> None:
        self.size = size
        self._tables: OrderedDict[int, ClusterTable] = OrderedDict()

    def get(self, clusters: tuple[ClusterState, ...]) -> ClusterTable:
        key = id(clusters)
        table = self._tables.get(key)
        if table is not None and table.clusters is clusters:
            self._tables.move_to_end(key)
            return table
        table = ClusterTable(clusters)
        self._tables[key] = table
        while len(self._tables) > self.size:
            self._tables.popitem(last=False)
        return table
