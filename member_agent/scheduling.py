"""One scheduling cycle for the agent: objects in, :class:`CycleResult` out.

The real work is the session scheduler's ``run_cycle(snapshot, conf, clock)``
(``member_agent/scheduler``, another engineer's area) on a snapshot built from the same wire
dicts by ``build_snapshot``. Until ``member_agent.scheduler`` exports ``run_cycle``, this module
falls back to :func:`standin_cycle`: Pending PodGroups go Inqueue; each Inqueue PodGroup's
pending pods are placed first-fit on the capacity estimator's node rows, all of the gang's
``minMember`` or nothing. No preemption, no fair share: it only keeps the agent usable.

This module runs in a worker thread: it must stay synchronous and touch no agent state.
"""

from __future__ import annotations

import logging
import time
from typing import Any, Callable, Optional, Sequence

from member_agent.cluster.gateway import (
    GROUP_NAME_ANNOTATION,
    Obj,
    pod_managed,
    pod_node,
    pod_phase,
    pod_terminal,
)
from member_agent.scheduler.framework.result import CycleResult, JobReport
from member_agent.scheduler.framework.session import SessionOptions
from member_agent.session_gc import relaxed_gc
from policies.capacity import NodeState, PodShape
from policies.scheduler_conf import SchedulerConf

log = logging.getLogger("caldera.agent.scheduling")
RunCycle = Callable[..., CycleResult]


def real_scheduler() -> Optional[tuple[RunCycle, Callable[..., Any]]]:
    """``(run_cycle, build_snapshot)`` when the session scheduler is available."""
    try:
        from member_agent.scheduler import run_cycle  # type: ignore[attr-defined]
        from member_agent.scheduler.framework.builder import build_snapshot
    except ImportError:
        return None
    return run_cycle, build_snapshot


def run_once(objects: Sequence[Obj], conf: SchedulerConf, clock: Any, use_real: bool = True,
             sync: Any = None, options: Optional[SessionOptions] = None) -> CycleResult:
    """One session over ``objects``; with ``sync`` (a ``member_agent.scheduler.object_sync.ObjectSync``) the
    snapshot comes from the incremental cache instead of a from-scratch build."""
    started = time.perf_counter()
    real = real_scheduler() if use_real else None
    if real is not None:
        run_cycle, build_snapshot = real
        if sync is not None:
            snapshot = sync.snapshot(objects)
        else:
            snapshot = build_snapshot(objects, scheduler_names=("volcano", "caldera"))
        with relaxed_gc():
            result = run_cycle(snapshot, conf, clock, options=options or SessionOptions())
    else:
        result = standin_cycle(objects)
    if not result.session_seconds:
        result.session_seconds = time.perf_counter() - started
    return result


def standin_cycle(objects: Sequence[Obj]) -> CycleResult:
    nodes = [o for o in objects if o.get("kind") == "Node"]
    pods = [o for o in objects if o.get("kind") == "Pod"]
    groups = [o for o in objects if o.get("kind") == "PodGroup"]
    queues = {(q.get("metadata") or {}).get("name") for q in objects if q.get("kind") == "Queue"} | {"default"}
    state = NodeState(nodes, pods)
    free = state.free.copy()
    result = CycleResult(logs=[f"Open Session with {len(groups)} Job and {len(queues)} Queues (stand-in scheduler)"])
    members: dict[str, list[Obj]] = {}
    for pod in pods:
        group = ((pod.get("metadata") or {}).get("annotations") or {}).get(GROUP_NAME_ANNOTATION)
        if group and pod_managed(pod):
            members.setdefault(f"{pod['metadata'].get('namespace')}/{group}", []).append(pod)
    for pg in sorted(groups, key=lambda g: (g.get("metadata") or {}).get("creationTimestamp") or ""):
        md = pg.get("metadata") or {}
        key = f"{md.get('namespace')}/{md.get('name')}"
        phase = ((pg.get("status") or {}).get("phase")) or "Pending"
        min_member = int((pg.get("spec") or {}).get("minMember", 1) or 0)
        queue = (pg.get("spec") or {}).get("queue") or "default"
        job_pods = members.get(key, [])
        scheduled = [p for p in job_pods if pod_node(p)]
        if phase == "Pending" and queue in queues:
            phase = "Inqueue"
            result.logs.append(f"PodGroup {key} is inqueue")
        pending = [p for p in job_pods if not pod_node(p) and pod_phase(p) == "Pending"]
        reason = ""
        if phase in ("Inqueue", "Running", "Unknown") and pending:
            trial = free.copy()
            placed: dict[str, str] = {}
            for pod in sorted(pending, key=lambda p: p["metadata"]["name"]):
                shape = PodShape.from_pod_spec(pod.get("spec") or {})
                fits = state.fit_per_node(shape, trial)
                hits = [i for i in range(len(fits)) if fits[i] > 0]
                if not hits:
                    continue
                row, _ = state.request_row(shape.request)
                trial[hits[0]] -= row
                placed[f"{md.get('namespace')}/{pod['metadata']['name']}"] = state.names[hits[0]]
            if len(scheduled) + len(placed) >= min_member:
                free = trial
                result.bindings.update(placed)
                for pod_key, node in placed.items():
                    result.logs.append(f"Binding Task {pod_key} to node {node}")
            else:
                reason = f"gang: {len(scheduled) + len(placed)}/{min_member} tasks fit"
        bound = len(scheduled) + sum(1 for p in pending if f"{md.get('namespace')}/{p['metadata']['name']}" in result.bindings)
        active = [p for p in scheduled if not pod_terminal(p)]
        if len(scheduled) >= min_member and scheduled:
            phase = "Completed" if not active else "Running"
        result.pod_groups[key] = phase
        result.jobs[key] = JobReport(job=key, queue=queue, phase=phase, min_available=min_member, tasks=len(job_pods),
                                     bound=bound, pipelined=0, pending=len(pending), reason=reason)
    return result
