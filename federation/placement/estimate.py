"""Step 2, estimate: how many pods of a shape, or whole gang sets, fit in each cluster.

* **Exact** (the cluster reports ``status.nodeShapes``): per node ``fit = min_r floor(free_r /
  request_r)`` bounded by free pod slots, summed over nodes (Karmada's accurate estimator,
  which models fragmentation). All clusters' node groups are rows of one numpy matrix, so
  one task shape is estimated for every cluster in a single vectorised pass.
* **General** (only ``status.resourceSummary``): ``min(free pods, min_r floor(free_r /
  request_r))`` with ``free = allocatable - allocated - allocating``; a requested resource
  the cluster lacks gives 0. Units are Caldera's, so Karmada's DecimalSI/BinarySI quirk is
  not reproduced.
* **Gang sets**: a first-fit simulation over node groups, component by component, with
  consumption carried from set to set (Karmada's ``MaxAvailableComponentSets``), computed per
  run of identical nodes with repeating periods jumped (:mod:`~federation.placement.component_sets`).

A cluster reporting node shapes is estimated exactly from them; resourceSummary is used only
when shapes are absent (the agent's summary may omit resources the shapes carry, such as
HAMi's ``nvidia.com/gpumem``). Placements assumed but not confirmed are first-fitted onto
their cluster's nodes (or added to ``allocating`` in the summary) before estimating.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from federation.placement.component_sets import max_component_sets
from federation.placement.request import (
    DEFAULT_MAX_PODS_PER_NODE,
    AssumedWorkload,
    ClusterState,
    Labels,
    Resources,
)

PODS = "pods"
#: The simulation's upper bound on gang sets (Karmada uses MaxInt32; nothing needs more).
MAX_SETS = 4096
_EPS = 1e-6


@dataclass(frozen=True)
class Component:
    request: Resources
    node_selector: Labels
    replicas: int

def request_vector(index: dict[str, int], request: Resources) -> np.ndarray | None:
    """``request`` laid over the columns in ``index``; None if it asks for a column that is absent."""
    vec = np.zeros(len(index))
    for name, amount in request:
        if amount <= 0:
            continue
        col = index.get(name)
        if col is None:
            return None
        vec[col] = amount
    return vec

class Groups:
    """One cluster's nodes as groups of identical nodes: ``counts[g]`` nodes with ``free[g]``."""

    __slots__ = ("counts", "free", "labels", "index")

    def __init__(self, counts: np.ndarray, free: np.ndarray, labels: list[dict[str, str]],
                 index: dict[str, int]) -> None:
        self.counts, self.free, self.labels, self.index = counts, free, labels, index

    def copy(self) -> "Groups":
        return Groups(self.counts.copy(), self.free.copy(), list(self.labels), self.index)

    def vector(self, request: Resources) -> np.ndarray | None:
        """The request over this table's columns; None if it needs a resource no node has."""
        return request_vector(self.index, request)

    def mask(self, selector: Labels) -> np.ndarray:
        if not selector:
            return np.ones(len(self.counts), dtype=bool)
        return np.array([all(lab.get(k) == v for k, v in selector) for lab in self.labels], dtype=bool)

    def fits(self, vec: np.ndarray, selector: Labels) -> np.ndarray:
        """Pods of this shape that fit on one node of each group."""
        return np.asarray(per_node_fit(self.free, vec) * self.mask(selector), dtype=np.int64)

    def place(self, component: Component) -> int:
        """First-fit ``component`` in node order; returns replicas left unplaced."""
        vec = self.vector(component.request)
        remaining = component.replicas
        if vec is None or remaining <= 0:
            return remaining
        fit = self.fits(vec, component.node_selector) * (self.counts > 0)
        for g in np.flatnonzero(fit):
            f, count = int(fit[g]), int(self.counts[g])
            full = min(count, remaining // f)
            partial = remaining - full * f if full < count else 0
            partial = min(partial, f)
            self._split(int(g), full, partial, vec, f)
            remaining -= full * f + partial
            if remaining == 0:
                break
        return remaining

    def _split(self, g: int, full: int, partial: int, vec: np.ndarray, f: int) -> None:
        """``full`` nodes of group ``g`` take ``f`` pods, one more takes ``partial``."""
        count = int(self.counts[g])
        pieces: list[tuple[int, np.ndarray]] = []
        if full:
            pieces.append((full, self.free[g] - f * vec))
        if partial:
            pieces.append((1, self.free[g] - partial * vec))
        rest = count - full - (1 if partial else 0)
        if rest:
            pieces.append((rest, self.free[g].copy()))
        if len(pieces) == 1 and pieces[0][0] == count:
            self.free[g] = pieces[0][1]
            return
        self.counts = np.concatenate([self.counts[:g], [n for n, _ in pieces], self.counts[g + 1:]])
        self.free = np.vstack([self.free[:g], np.array([v for _, v in pieces]), self.free[g + 1:]])
        self.labels = self.labels[:g] + [self.labels[g]] * len(pieces) + self.labels[g + 1:]


def per_node_fit(free: np.ndarray, vec: np.ndarray) -> np.ndarray:
    """``min_r floor(free_r / vec_r)`` over requested resources, per row (0 when negative)."""
    need = vec > 0
    if not need.any():
        return np.full(free.shape[0], np.iinfo(np.int64).max // 4, dtype=np.int64)
    ratios = np.floor((free[:, need] + _EPS) / vec[need])
    return np.asarray(np.clip(ratios.min(axis=1), 0, None), dtype=np.int64)


def groups_of(cluster: ClusterState, index: dict[str, int]) -> Groups:
    shapes = tuple(s for s in cluster.node_shapes or () if s.count > 0)
    free = np.zeros((len(shapes), len(index)))
    for g, shape in enumerate(shapes):
        free[g, index[PODS]] = DEFAULT_MAX_PODS_PER_NODE
        for name, amount in shape.free:
            free[g, index[name]] = amount
    counts = np.array([s.count for s in shapes], dtype=np.int64)
    return Groups(counts, free, [dict(s.labels) for s in shapes], index)


def resource_index(clusters: Sequence[ClusterState]) -> dict[str, int]:
    names = {PODS}
    for c in clusters:
        for shape in c.node_shapes or ():
            names.update(n for n, _ in shape.free)
    return {n: i for i, n in enumerate(sorted(names))}


def general_estimate(cluster: ClusterState, request: Resources) -> int | None:
    """Karmada's general estimate of one pod shape from resourceSummary (None: no summary)."""
    summary = cluster.summary
    if summary is None:
        return None
    alloc, used, pending = dict(summary.allocatable), dict(summary.allocated), dict(summary.allocating)
    best: float = float("inf")
    if PODS in alloc:
        best = max(alloc[PODS] - used.get(PODS, 0.0) - pending.get(PODS, 0.0), 0.0)
    for name, amount in request:
        if amount <= 0 or name == PODS:
            continue
        if name not in alloc:
            return 0
        free = alloc[name] - used.get(name, 0.0) - pending.get(name, 0.0)
        if free <= 0:
            return 0
        best = min(best, np.floor((free + _EPS) / amount))
    return int(min(best, np.iinfo(np.int32).max))


def general_sets(cluster: ClusterState, components: Sequence[Component]) -> int | None:
    """Karmada's general component-set estimate: summed per-set demand against free totals."""
    demand: dict[str, float] = {}
    for comp in components:
        for name, amount in comp.request:
            demand[name] = demand.get(name, 0.0) + amount * comp.replicas
    return general_estimate(cluster, tuple(sorted(demand.items())))


def max_sets(groups: Groups, components: Sequence[Component], upper: int = MAX_SETS) -> tuple[int, int]:
    """Whole sets that first-fit, and pods of the next (failed) set that were placed.

    Consumption persists from one set to the next; ``groups`` is left unchanged. Computed per
    run of identical nodes with periods jumped (:mod:`federation.placement.component_sets`).
    """
    vectors = []
    for comp in components:
        vec = groups.vector(comp.request)
        vectors.append(None if vec is None else tuple(vec.tolist()))
    return max_component_sets(
        groups.counts.tolist(), [tuple(row) for row in groups.free.tolist()],
        [groups.mask(c.node_selector).tolist() for c in components], vectors,
        [c.replicas for c in components], upper)


def apply_assumed(groups: Groups, assumed: Sequence[AssumedWorkload]) -> Groups:
    """Deduct placements not yet confirmed (each simulated once, as Karmada does)."""
    state = groups.copy()
    for work in assumed:
        selectors = work.node_selectors or tuple(() for _ in work.components)
        for (request, replicas), selector in zip(work.components, selectors, strict=False):
            state.place(Component(request, selector, replicas))
    return state
