"""Capacity of the member cluster: exact estimates on node rows, and the Cluster status summary.

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

import json
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
from policies.resources import GPU, PODS, TOLERANCE, to_internal, to_quantity_text
from policies.wire_objects import (
    TOPOLOGY_ANNOTATION,
    Obj,
    node_ready,
    pod_managed,
    pod_node,
    pod_terminal,
    pod_terminating,
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


# ------------------------------------------------------------------ Cluster status summary


def _quantities(columns: Sequence[str], values: np.ndarray) -> dict[str, str]:
    return {c: to_quantity_text(c, float(v)) for c, v in zip(columns, values, strict=True) if abs(float(v)) >= TOLERANCE}


def resource_summary(state: NodeState, pods: Iterable[Obj],
                     requests: Optional[Mapping[str, Mapping[str, float]]] = None) -> dict[str, Any]:
    """Karmada's ``resourceSummary``: allocatable of Ready nodes, allocated (bound, unfinished pods)
    and allocating (unbound, unfinished pods), pod counts included."""
    ready = state.ready
    allocatable = state.alloc[ready].sum(axis=0) if len(state.names) else np.zeros(len(state.columns))
    allocating = np.zeros(len(state.columns))
    allocated = state.used[ready].sum(axis=0) if len(state.names) else np.zeros(len(state.columns))
    for pod in pods:
        if pod_terminal(pod) or pod_node(pod):
            continue
        uid = (pod.get("metadata") or {}).get("uid", "")
        request = (requests or {}).get(uid) or pod_request(pod)
        for name, value in request.items():
            j = state.column.get(name)
            if j is not None:
                allocating[j] += value
    return {
        "allocatable": _quantities(state.columns, allocatable),
        "allocated": _quantities(state.columns, allocated),
        "allocating": _quantities(state.columns, allocating),
    }


def node_shapes(state: NodeState, rows: Optional[Iterable[int]] = None) -> list[dict[str, Any]]:
    """Schedulable Ready nodes (of ``rows``, default all) grouped by identical free vector and
    placement labels."""
    return _grouped_shapes(state, state.free, rows)


PREEMPTABLE_KEY = "volcano.sh/preemptable"
TASK_PRIORITY_KEY = "volcano.sh/task-priority"
#: the scheduler's priority for a pod that carries none (member_agent.scheduler.framework.builder)
DEFAULT_POD_PRIORITY = 1
#: at most this many ``preemptibleShapes`` entries (the highest thresholds: the ones the jobs
#: that preempt can use); lower thresholds are then left out, which only under-promises
MAX_PREEMPTION_THRESHOLDS = 8


def pod_priority(pod: Obj) -> int:
    """The pod's priority as the scheduler reads it: ``volcano.sh/task-priority``, else
    ``spec.priority``, else the scheduler's default."""
    meta = pod.get("metadata") or {}
    annotated = (meta.get("annotations") or {}).get(TASK_PRIORITY_KEY)
    if annotated is not None:
        try:
            return int(annotated)
        except ValueError:
            pass
    priority = (pod.get("spec") or {}).get("priority")
    return int(priority) if isinstance(priority, int) else DEFAULT_POD_PRIORITY


def preemptable_victim(pod: Obj) -> bool:
    """Whether the agent's scheduler could evict the pod for a higher-priority one: bound, not
    finished or leaving, scheduled by it, and not marked ``volcano.sh/preemptable: false``."""
    meta = pod.get("metadata") or {}
    flag = (meta.get("annotations") or {}).get(PREEMPTABLE_KEY, (meta.get("labels") or {}).get(PREEMPTABLE_KEY))
    if flag is not None and str(flag).strip().lower() not in ("true", "1", "t"):
        return False
    return pod_node(pod) is not None and pod_managed(pod) and not pod_terminal(pod) and not pod_terminating(pod)


def preemptible_shapes(state: NodeState, pods: Iterable[Obj],
                       requests: Optional[Mapping[str, Mapping[str, float]]] = None) -> list[dict[str, Any]]:
    """``status.preemptibleShapes``: for each distinct priority ``p`` of preemptable pods (the
    highest :data:`MAX_PREEMPTION_THRESHOLDS`), the node shapes were every preemptable pod of
    priority <= ``p`` evicted, as ``{belowPriority: p + 1, shapes}``, ascending. A job of
    priority ``P`` may count on the entry with the largest ``belowPriority <= P`` (victims
    must have strictly lower priority). Gang minimums and queues of the victims are not
    modelled: the entry is what preemption could free at most."""
    victims: list[tuple[int, int, Mapping[str, float]]] = []
    for pod in pods:
        node = pod_node(pod)
        if node is None or node not in state.index or not preemptable_victim(pod):
            continue
        uid = (pod.get("metadata") or {}).get("uid", "")
        victims.append((pod_priority(pod), state.index[node], (requests or {}).get(uid) or pod_request(pod)))
    if not victims:
        return []
    kept = sorted({p for p, _, _ in victims})[-MAX_PREEMPTION_THRESHOLDS:]
    freed = np.zeros((len(kept),) + state.used.shape)
    for priority, row, request in victims:
        if priority > kept[-1]:
            continue
        k = next(i for i, p in enumerate(kept) if priority <= p)  # counted from threshold k upwards
        for name, value in request.items():
            j = state.column.get(name)
            if j is not None:
                freed[k, row, j] += value
    cumulative = np.cumsum(freed, axis=0)
    return [{"belowPriority": p + 1, "shapes": _grouped_shapes(state, state.free + cumulative[k])}
            for k, p in enumerate(kept)]


def _grouped_shapes(state: NodeState, free: np.ndarray, rows: Optional[Iterable[int]] = None) -> list[dict[str, Any]]:
    """Schedulable Ready nodes (of ``rows``, default all) grouped by identical ``free`` vector and
    placement labels."""
    groups: dict[tuple[Any, ...], dict[str, Any]] = {}
    free = np.maximum(free, 0.0)
    for i in (range(len(state.names)) if rows is None else rows):
        if not state.ready[i] or state.unschedulable[i]:
            continue
        quantities = _quantities(state.columns, free[i])
        labels = {k: state.labels[i][k] for k in PLACEMENT_LABELS if k in state.labels[i]}
        key = (tuple(sorted(quantities.items())), tuple(sorted(labels.items())))
        if key in groups:
            groups[key]["count"] += 1
        else:
            groups[key] = {"count": 1, "free": quantities, **({"labels": labels} if labels else {})}
    return sorted(groups.values(), key=lambda g: (-g["count"], json.dumps(g, sort_keys=True)))


def gpu_summary(state: NodeState) -> list[dict[str, Any]]:
    j = state.column.get(GPU)
    if j is None:
        return []
    out: dict[str, dict[str, Any]] = {}
    free = np.maximum(state.free, 0.0)
    for i in range(len(state.names)):
        total = int(round(state.alloc[i, j] / 1000))
        if total <= 0 or not state.ready[i]:
            continue
        product = state.labels[i].get("nvidia.com/gpu.product", "unknown")
        entry = out.setdefault(product, {"product": product, "total": 0, "free": 0, "fragmented": 0})
        entry["total"] += total
        node_free = int(free[i, j] // 1000) if not state.unschedulable[i] else 0
        entry["free"] += node_free
        # free GPUs on a partly used node: a job that wants whole nodes cannot use them
        entry["fragmented"] += node_free if node_free < total else 0
    return sorted(out.values(), key=lambda e: e["product"])


def numa_summary(state: NodeState) -> list[dict[str, Any]]:
    """Nodes grouped by NUMA layout (from ``caldera.io/topology``, docs/topology.md)."""
    groups: dict[str, dict[str, Any]] = {}
    for node in state.nodes:
        raw = ((node.get("metadata") or {}).get("annotations") or {}).get(TOPOLOGY_ANNOTATION)
        if not raw:
            continue
        try:
            topo = json.loads(raw)
        except ValueError:
            continue
        numa = topo.get("numa") or []
        layout = {
            "numaNodes": len(numa),
            "cpusPerNuma": [int(n.get("cpuCount", 0)) for n in numa],
            "gpusPerNuma": [len(n.get("gpus") or []) for n in numa],
            "nvlinkDomains": [len(d) for d in topo.get("nvlink") or []],
            "cpuManagerPolicy": topo.get("cpuManagerPolicy", "none"),
            "topologyManagerPolicy": topo.get("topologyManagerPolicy", "none"),
        }
        key = json.dumps(layout, sort_keys=True)
        groups.setdefault(key, {"count": 0, **layout})["count"] += 1
    return sorted(groups.values(), key=lambda g: -g["count"])


def queue_summary(pods: Iterable[Obj], queue_of_pod: Mapping[str, str], queues: Iterable[Obj],
                  requests: Optional[Mapping[str, Mapping[str, float]]] = None) -> list[dict[str, Any]]:
    """Per queue: allocated (bound, unfinished pods of its jobs), deserved and capability as configured."""
    allocated: dict[str, dict[str, float]] = {}
    for pod in pods:
        uid = (pod.get("metadata") or {}).get("uid", "")
        queue = queue_of_pod.get(uid)
        if queue is None or pod_terminal(pod) or not pod_node(pod):
            continue
        bucket = allocated.setdefault(queue, {})
        for name, value in ((requests or {}).get(uid) or pod_request(pod)).items():
            bucket[name] = bucket.get(name, 0.0) + value
    out = []
    names = {(q.get("metadata") or {}).get("name") for q in queues} | set(allocated)
    spec_of = {(q.get("metadata") or {}).get("name"): (q.get("spec") or {}) for q in queues}
    for name in sorted(n for n in names if n):
        spec = spec_of.get(name, {})
        entry: dict[str, Any] = {"name": name,
                                 "allocated": {k: to_quantity_text(k, v) for k, v in sorted(allocated.get(name, {}).items())
                                               if abs(v) >= TOLERANCE}}
        for key in ("deserved", "capability", "guarantee"):
            configured: Any = spec.get(key)
            if key == "guarantee":
                configured = (configured or {}).get("resource")
            if configured:
                entry[key] = dict(configured)
        out.append(entry)
    return out


def cluster_status(state: NodeState, pods: Sequence[Obj], queue_of_pod: Optional[Mapping[str, str]] = None,
                   queues: Sequence[Obj] = (), requests: Optional[Mapping[str, Mapping[str, float]]] = None) -> dict[str, Any]:
    """The agent's part of ``Cluster.status`` (docs/protocol.md "Cluster status")."""
    return {
        "resourceSummary": resource_summary(state, pods, requests),
        "nodeSummary": {"totalNum": len(state.names), "readyNum": int(state.ready.sum())},
        "nodeShapes": node_shapes(state),
        **({"preemptibleShapes": shapes} if (shapes := preemptible_shapes(state, pods, requests)) else {}),
        "gpus": gpu_summary(state),
        "numa": numa_summary(state),
        "queues": queue_summary(pods, queue_of_pod or {}, queues, requests),
    }
