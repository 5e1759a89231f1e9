"""Capacity of the member cluster: exact estimates on node rows (the Cluster status summary built
on them is :mod:`policies.capacity_summary`).

Estimates follow Karmada's accurate estimator (reference/karmada.md §4.3–4.4):

* :meth:`NodeState.max_replicas` — for one pod shape (requests, nodeSelector, required node
  affinity, tolerations): keep the Ready nodes that match and whose NoSchedule/NoExecute
  taints are tolerated (``spec.unschedulable`` needs a toleration for
  ``node.kubernetes.io/unschedulable``), then Σ over nodes of
  ``min over requested r of floor(free_r / request_r)``, free pod slots included. A requested
  resource a node lacks gives 0 on that node. Fragmentation is therefore modelled.
* :meth:`NodeState.max_component_sets` — whole sets of a gang's components, first-fit: each set
  places every component in order on the matching nodes in order, taking as many replicas as
  fit on each node; consumption persists; the first set that fails ends the count.

Amounts are in Volcano units (:mod:`policies.resources`): cpu milli-cores, memory bytes, pods
whole, scalars milli-units. Nodes are rows of numpy matrices; per shape the work is a handful
of vector operations, not a loop over pods.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Optional, Sequence

import numpy as np
from pydantic import ValidationError

from policies.k8s import node_selector
from policies.k8s import tolerations as k8s_tolerations
from policies.k8s.node_selector import NodeSelectorTerm
from policies.k8s.tolerations import HARD_EFFECTS, Taint, Toleration
from policies.models.core import Pod, PodSpec
from policies.models.pod_resources import pod_spec_request
from policies.resources import PODS, TOLERANCE, to_internal
from policies.wire_objects import (
    Obj,
    node_ready,
    pod_node,
    pod_terminal,
)

PLACEMENT_LABELS = ("nvidia.com/gpu.product", "topology.kubernetes.io/zone", "topology.kubernetes.io/region",
                    "caldera.io/pool")
UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
UNSCHEDULABLE = Taint(UNSCHEDULABLE_TAINT, effect="NoSchedule")
MAX_SETS = 2**31 - 1


# ------------------------------------------------------------------ pod shapes


@dataclass(frozen=True)
class PodShape:
    """What the estimator needs of a pod: its request and where it may go."""

    request: Mapping[str, float]
    node_selector: Mapping[str, str] = field(default_factory=dict)
    #: ``requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms`` (OR of terms), or None.
    required_terms: Optional[tuple[NodeSelectorTerm, ...]] = None
    tolerations: tuple[Toleration, ...] = ()

    @classmethod
    def from_pod_spec(cls, spec: Mapping[str, Any]) -> "PodShape":
        request = dict(pod_spec_request(validate_pod_spec(dict(spec))))
        affinity = ((spec.get("affinity") or {}).get("nodeAffinity") or {})
        required = affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
        return cls(
            request=request,
            node_selector=dict(spec.get("nodeSelector") or {}),
            required_terms=node_selector.terms(required),
            tolerations=k8s_tolerations.tolerations(spec.get("tolerations")),
        )


def pod_request(pod: Obj) -> dict[str, float]:
    return dict(pod_spec_request(validate_pod_spec(pod.get("spec") or {})))


def validate_pod_spec(spec: Any) -> PodSpec:
    """``PodSpec.model_validate(spec)``, through the Pod model's validator: the agent validates
    pods anyway (the job controller), and PodSpec's own validator would be a second copy of the whole
    pod spec schema (~0.25 MiB). A spec that fails is validated again on its own, so the error
    names the spec's fields as before."""
    try:
        return Pod.model_validate({"metadata": {}, "spec": spec}).spec
    except ValidationError:
        return PodSpec.model_validate(spec)


# ------------------------------------------------------------------ node rows


class NodeState:
    """Nodes as rows: allocatable and used per resource column, plus what filters read."""

    def __init__(self, nodes: Iterable[Obj], pods: Iterable[Obj], requests: Optional[Mapping[str, Mapping[str, float]]] = None) -> None:
        node_list = sorted(nodes, key=lambda n: n["metadata"]["name"])
        self.nodes = node_list
        self.names = [n["metadata"]["name"] for n in node_list]
        self.index = {name: i for i, name in enumerate(self.names)}
        allocatable = [self._allocatable(n) for n in node_list]
        columns = {PODS}
        for a in allocatable:
            columns.update(a)
        self.columns = sorted(columns)
        self.column = {c: j for j, c in enumerate(self.columns)}
        self.alloc = np.zeros((len(node_list), len(self.columns)))
        for i, a in enumerate(allocatable):
            for name, value in a.items():
                self.alloc[i, self.column[name]] = value
        self.used = np.zeros_like(self.alloc)
        self.pod_count = np.zeros(len(node_list), dtype=np.int64)
        self.labels = [dict((n.get("metadata") or {}).get("labels") or {}) for n in node_list]
        #: each node's taints that filter (NoSchedule/NoExecute; spec.unschedulable adds kube's taint)
        self.taints = [[t for t in (Taint.from_wire(raw) for raw in (n.get("spec") or {}).get("taints") or [])
                        if t.effect in HARD_EFFECTS] for n in node_list]
        self.ready = np.array([node_ready(n) for n in node_list], dtype=bool)
        self.unschedulable = np.array([bool((n.get("spec") or {}).get("unschedulable")) for n in node_list], dtype=bool)
        for pod in pods:
            node = pod_node(pod)
            if node is None or node not in self.index or pod_terminal(pod):
                continue
            uid = (pod.get("metadata") or {}).get("uid", "")
            request = (requests or {}).get(uid) or pod_request(pod)
            self._charge(self.index[node], request)

    @staticmethod
    def _allocatable(node: Obj) -> dict[str, float]:
        status = node.get("status") or {}
        raw = status.get("allocatable") or status.get("capacity") or {}
        return {str(k): to_internal(str(k), v) for k, v in raw.items() if not str(k).startswith("count/")}

    def _charge(self, row: int, request: Mapping[str, float]) -> None:
        self.pod_count[row] += 1
        for name, value in request.items():
            j = self.column.get(name)
            if j is not None:
                self.used[row, j] += value

    @property
    def free(self) -> np.ndarray:
        return self.alloc - self.used

    def request_row(self, request: Mapping[str, float]) -> tuple[np.ndarray, bool]:
        """The request as a column vector (pods at least 1), and whether every name is a column."""
        row = np.zeros(len(self.columns))
        known = True
        for name, value in request.items():
            if value <= 0:
                continue
            j = self.column.get(name)
            if j is None:
                known = False
            else:
                row[j] = value
        row[self.column[PODS]] = max(row[self.column[PODS]], 1.0)
        return row, known

    def matching(self, shape: PodShape) -> np.ndarray:
        """Boolean mask of the nodes the shape may use (Karmada's estimator filters)."""
        mask = self.ready.copy()
        for i in range(len(self.names)):
            if not mask[i]:
                continue
            labels = self.labels[i]
            if any(labels.get(k) != str(v) for k, v in shape.node_selector.items()):
                mask[i] = False
                continue
            if not node_selector.any_term_matches(shape.required_terms, labels, self.names[i]):
                mask[i] = False
                continue
            taints = self.taints[i] + ([UNSCHEDULABLE] if self.unschedulable[i] else [])
            if k8s_tolerations.untolerated(taints, shape.tolerations):
                mask[i] = False
        return mask

    def fit_per_node(self, shape: PodShape, free: Optional[np.ndarray] = None,
                     mask: Optional[np.ndarray] = None) -> np.ndarray:
        """Replicas of ``shape`` each node can take now (0 on nodes that do not match)."""
        row, known = self.request_row(shape.request)
        n = len(self.names)
        if not known or n == 0:
            return np.zeros(n, dtype=np.int64)
        available = self.free if free is None else free
        asked = row > 0
        ratios = np.floor((np.maximum(available[:, asked], 0.0) + TOLERANCE) / row[asked])
        fit: np.ndarray = ratios.min(axis=1).astype(np.int64)
        fit[~(self.matching(shape) if mask is None else mask)] = 0
        return fit

    def max_replicas(self, shape: PodShape) -> int:
        return int(self.fit_per_node(shape).sum())

    def max_component_sets(self, components: Sequence[tuple[PodShape, int]], limit: int = MAX_SETS) -> int:
        """Whole sets of ``(shape, replicas)`` components that fit, first-fit as Karmada simulates it."""
        active = [(shape, replicas) for shape, replicas in components if replicas > 0]
        if not active:
            return 0
        masks = [self.matching(shape) for shape, _ in active]
        rows = [self.request_row(shape.request) for shape, _ in active]
        if any(not known for _, known in rows):
            return 0
        free = self.free.copy()
        # Upper bound: no set can place a component beyond what fits for it alone.
        bound = limit
        for (shape, replicas), mask in zip(active, masks, strict=True):
            bound = min(bound, int(self.fit_per_node(shape, free, mask).sum()) // replicas)
        sets = 0
        while sets < bound:
            trial = free.copy()
            for (shape, replicas), mask, (row, _) in zip(active, masks, rows, strict=True):
                fits = self.fit_per_node(shape, trial, mask)
                placed_before = np.cumsum(fits) - fits
                take = np.clip(replicas - placed_before, 0, fits)
                if int(take.sum()) < replicas:
                    return sets
                trial -= take[:, None] * row[None, :]
            free = trial
            sets += 1
        return sets
