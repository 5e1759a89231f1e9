"""Which watch events could make a waiting (unschedulable) job fit: pure, on wire dicts.

The scheduling queue (:mod:`federation.controllers.sched_queue`) moves every unschedulable
binding back to its activeQ on such an event, so freed capacity is used within one status
report instead of after a backoff timer. The answers are a reason (logged and kept as the
queue's ``last_move``) or ``None`` (the event cannot help a waiting job):

* a Cluster joins, becomes Ready, loses a taint, or reports more free capacity than before in any
  resource (``resourceSummary`` allocatable − allocated − allocating, or a node shape's ``free``,
  or more preemptible capacity);
* a Job finishes (Completed/Failed/Terminated/Aborted) or is deleted: its shares stop counting as
  assumed and its clusters will report the capacity free;
* a (Cluster)PropagationPolicy is added, changed or deleted (another policy may now govern a job);
* a Cluster report releases shares still deducted as assumed while the reported capacity stayed
  the same (the report already counted them: placement had counted them twice).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from federation.controllers import common as c
from policies.resources import ResourceVector

Obj = Mapping[str, Any]
#: tolerance for "grew": a report that only rounds differently is not an event
EPSILON = 1e-6


def _ready(cluster: Obj | None) -> bool:
    for cond in ((cluster or {}).get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return cond.get("status") == "True"
    return False


def _taints(cluster: Obj | None) -> set[tuple[str, str, str]]:
    return {(str(t.get("key", "")), str(t.get("value", "")), str(t.get("effect", "")))
            for t in ((cluster or {}).get("spec") or {}).get("taints") or []}


def _vector(resource_list: Mapping[str, Any] | None) -> ResourceVector:
    try:
        return ResourceVector.from_resource_list(resource_list or {})
    except Exception:  # a malformed report is no evidence of growth
        return ResourceVector({})


def free_summary(cluster: Obj | None) -> dict[str, float]:
    """allocatable − allocated − allocating per resource (internal units)."""
    summary = ((cluster or {}).get("status") or {}).get("resourceSummary") or {}
    free = dict(_vector(summary.get("allocatable")))
    for used in (summary.get("allocated"), summary.get("allocating")):
        for name, amount in _vector(used).items():
            free[name] = free.get(name, 0.0) - amount
    return free


def shape_free(cluster: Obj | None, field: str = "nodeShapes") -> dict[str, float]:
    """Σ count × free per resource over the reported node shapes."""
    total: dict[str, float] = {}
    for shape in ((cluster or {}).get("status") or {}).get(field) or []:
        count = int(shape.get("count") or 0)
        for name, amount in _vector(shape.get("free")).items():
            total[name] = total.get(name, 0.0) + count * amount
    return total


def _largest_shape(cluster: Obj | None) -> dict[str, float]:
    """Per resource, the most any one reported node has free (a gang pod needs one node)."""
    best: dict[str, float] = {}
    for shape in ((cluster or {}).get("status") or {}).get("nodeShapes") or []:
        if int(shape.get("count") or 0) > 0:
            for name, amount in _vector(shape.get("free")).items():
                best[name] = max(best.get(name, 0.0), amount)
    return best


def _grew(old: Mapping[str, float], new: Mapping[str, float]) -> str | None:
    for name, amount in sorted(new.items()):
        if amount > old.get(name, 0.0) + EPSILON:
            return name
    return None


def cluster_event(kind: str, new: Obj, old: Obj | None) -> str | None:
    """Why a Cluster watch event could let a waiting job fit (None: it cannot)."""
    name = (new.get("metadata") or {}).get("name", "")
    if kind == "DELETED":
        return None
    if kind == "ADDED" or old is None:
        return f"cluster {name} joined"
    if (new.get("metadata") or {}).get("deletionTimestamp"):
        return None
    if _ready(new) and not _ready(old):
        return f"cluster {name} became Ready"
    if _taints(old) - _taints(new):
        return f"cluster {name} lost a taint"
    for label, before, after in (("free", free_summary(old), free_summary(new)),
                                 ("node shapes", shape_free(old), shape_free(new)),
                                 ("largest node", _largest_shape(old), _largest_shape(new))):
        grown = _grew(before, after)
        if grown is not None:
            return f"cluster {name} reports more {grown} ({label})"
    old_pre = ((old.get("status") or {}).get("preemptibleShapes")) or []
    new_pre = ((new.get("status") or {}).get("preemptibleShapes")) or []
    if new_pre != old_pre and new_pre:
        return f"cluster {name} reports other preemptible capacity"
    return None


def job_event(kind: str, new: Obj, old: Obj | None) -> str | None:
    """Why a Job watch event frees capacity for waiting jobs (None: it does not)."""
    meta = new.get("metadata") or {}
    ref = f"{meta.get('namespace', '')}/{meta.get('name', '')}"
    if kind == "DELETED":
        return f"job {ref} deleted"
    phase = (((new.get("status") or {}).get("state")) or {}).get("phase")
    before = ((((old or {}).get("status") or {}).get("state")) or {}).get("phase")
    if phase in c.FINISHED_JOB_PHASES and before not in c.FINISHED_JOB_PHASES:
        return f"job {ref} {str(phase).lower()}"
    if meta.get("deletionTimestamp") and not ((old or {}).get("metadata") or {}).get("deletionTimestamp"):
        return f"job {ref} being deleted"
    return None


def policy_event(kind: str, new: Obj, old: Obj | None) -> str | None:
    """Any change of a policy's spec may change which jobs it governs and where they may go."""
    meta = new.get("metadata") or {}
    ref = f"{new.get('kind', 'policy')} {meta.get('namespace', '') + '/' if meta.get('namespace') else ''}" \
          f"{meta.get('name', '')}"
    if kind in ("ADDED", "DELETED") or old is None:
        return f"{ref} {'deleted' if kind == 'DELETED' else 'added'}"
    if (new.get("spec") or {}) != (old.get("spec") or {}):
        return f"{ref} changed"
    return None


def assumed_released(new: Obj, old: Obj | None, released: int) -> str | None:
    """Why releasing ``released`` assumed shares on a Cluster report could let a waiting job fit:
    when the report's capacity did not shrink, those shares were deducted on top of a report that
    already counted them, so the federation's view of the cluster grows (None otherwise)."""
    if not released or old is None:
        return None
    for before, after in ((free_summary(old), free_summary(new)), (shape_free(old), shape_free(new))):
        if any(after.get(name, 0.0) < amount - EPSILON for name, amount in before.items()):
            return None  # the report took the shares' capacity itself: nothing new is free
    name = (new.get("metadata") or {}).get("name", "")
    return f"cluster {name} reports {released} share(s) already counted as assumed"
