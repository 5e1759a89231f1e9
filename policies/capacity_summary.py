"""The member cluster's Cluster status summary, computed on the node rows of :mod:`policies.capacity`.

Karmada's ``resourceSummary`` (allocatable, allocated, allocating), the node shapes (Ready, schedulable
nodes grouped by identical free vector and placement labels) the federation's estimator reads, the
shapes that preempting pods of each priority could free (``preemptibleShapes``), GPU and NUMA
summaries and per-queue usage; :func:`cluster_status` puts them together.
"""

from __future__ import annotations

import json
from typing import Any, Iterable, Mapping, Optional, Sequence

import numpy as np

from policies.capacity import PLACEMENT_LABELS, NodeState, pod_request
from policies.resources import GPU, TOLERANCE, to_quantity_text
from policies.wire_objects import (
    TOPOLOGY_ANNOTATION,
    Obj,
    pod_managed,
    pod_node,
    pod_terminal,
    pod_terminating,
)


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
