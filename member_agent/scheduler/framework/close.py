"""Closing a session: plugins' close hooks, PodGroup phases, reasons, the result."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from member_agent.scheduler.framework import quiescent
from member_agent.scheduler.framework.dims import fits
from member_agent.scheduler.framework.infos import JobInfo, TaskInfo
from member_agent.scheduler.framework.result import CycleResult, JobReport
from member_agent.scheduler.framework.session import Session
from member_agent.scheduler.framework.status import COMPLETED_STATUSES, READY_STATUSES, TaskStatus

S = TaskStatus
_BINDING, _PIPELINED, _RELEASING = S.BINDING, S.PIPELINED, S.RELEASING
_BOUND = frozenset({S.BOUND, S.RUNNING, S.SUCCEEDED, S.FAILED})
_WAITING = frozenset({S.PENDING, S.ALLOCATED})  # "pending" as the report counts it
_OPEN = frozenset({S.PENDING, S.PIPELINED})
POD_GROUP_NOT_READY = "pod group is not ready"
POD_GROUP_READY = "pod group is ready"


def task_scheduling_reason(job: JobInfo, task: TaskInfo) -> str:
    status = task.last_tx if task.last_tx is not None else task.status
    if status in (S.ALLOCATED, S.PIPELINED):
        return "Schedulable"
    if status == S.PENDING:
        return "Unschedulable"
    return status.label


def job_fit_error(job: JobInfo, ready: bool) -> str:
    """Volcano's ``JobInfo.FitError()`` text."""
    statuses = Counter(t.status.label for t in job.tasks)
    statuses["minAvailable"] = job.min_available
    message = f"{POD_GROUP_READY if ready else POD_GROUP_NOT_READY}, " + ", ".join(
        sorted(f"{n} {s}" for s, n in statuses.items())
    )
    pending = [t for t in job.tasks if t.status == S.PENDING]
    reasons = Counter(task_scheduling_reason(job, t) for t in pending)
    if reasons:
        message += "; Pending: " + ", ".join(sorted(f"{n} {r}" for r, n in reasons.items()))
    if job.job_fit_error:
        message += ". Origin reason is " + job.job_fit_error
    else:
        for t in pending:
            if t.fit_error:
                message += f". Origin reason is {t.name}: {t.fit_error}"
                break
    return message


@dataclass(frozen=True)
class _TaskWalk:
    """What closing reads from a job's tasks: a pure function of their statuses and nodes, kept in
    the spec's memo for a job no task of which changed in the session (most jobs, most sessions)."""

    node_names: tuple[str, ...]  # the node table the rows refer to
    owners: dict[str, str]  # "ns/pod" -> job
    bindings: dict[str, str]
    nominations: dict[str, str]
    pipelined_nodes: list[str]
    bound: int
    pipelined: int
    pending: int  # Pending or Allocated, as the report counts them
    releasing_scheduled: int
    all_completed: bool
    open_tasks: int  # Pending or Pipelined: short_reason has nothing to say without one
    nominated: bool  # a task carries a nomination: checked against this session's nodes, never memoised

    @classmethod
    def of(cls, job: JobInfo, names: tuple[str, ...]) -> _TaskWalk:
        owners, bindings, nominations, pipelined_nodes = {}, {}, {}, []
        bound = pipelined = pending = releasing = open_tasks = 0
        uid = job.uid
        # Statuses as module constants and sets: a member read through its enum class costs ~0.3 us,
        # and this ran several per task of every changed job.
        for task in job.tasks:
            key = task.spec.key
            owners[key] = uid
            status = task.status
            if status == _BINDING and task.node is not None:
                bindings[key] = names[task.node]
                bound += 1
            elif status in _BOUND:
                bound += 1
            elif status == _PIPELINED and task.node is not None:
                pipelined_nodes.append(names[task.node])
                pipelined += 1
                if task.evicted_for:
                    nominations[key] = task.evicted_for
            elif status in _WAITING:
                pending += 1
            if status == _RELEASING and task.node is not None:
                releasing += 1
            if status in _OPEN:
                open_tasks += 1
        return cls(names, owners, bindings, nominations, pipelined_nodes, bound, pipelined, pending, releasing,
                   all(t.status in COMPLETED_STATUSES for t in job.tasks), open_tasks,
                   any(t.spec.nominated_node for t in job.tasks))


def _task_walk(ssn: Session, job: JobInfo) -> _TaskWalk:
    if job.status_changes:
        return _TaskWalk.of(job, ssn.node_names)
    walk: _TaskWalk | None = job.spec.memo.get("close_walk")
    if walk is None or walk.node_names is not ssn.node_names:
        walk = job.spec.memo["close_walk"] = _TaskWalk.of(job, ssn.node_names)
    return walk


def pod_group_phase(ssn: Session, job: JobInfo, walk: _TaskWalk | None = None) -> str:
    """``getPodGroupPhase`` at close (volcano.md §2.3)."""
    if job.counts[S.RUNNING] > 0 and any(
        c.get("type") == "Unschedulable" and c.get("status") == "True" and c.get("transitionID") == ssn.uid
        for c in job.conditions
    ):
        return "Unknown"
    walk = walk or _TaskWalk.of(job, ssn.node_names)
    if job.scheduled_num + walk.releasing_scheduled >= job.min_available:
        return "Completed" if walk.all_completed else "Running"
    return "Inqueue" if job.phase == "Inqueue" else "Pending"


def short_reason(ssn: Session, job: JobInfo, walk: _TaskWalk | None = None) -> str:
    """The one-line "why not scheduled" shown by ``caldera schedule -o table``."""
    if job.job_fit_error:
        return job.job_fit_error
    if walk is not None and not walk.open_tasks:
        return ""
    pending = [t for t in job.tasks if t.status == S.PENDING]
    waiting = [t for t in job.tasks if t.status == S.PIPELINED]
    if not pending and not waiting:
        return ""
    node_reason = next((t.fit_error for t in pending if t.fit_error), "")
    placed = job.ready_num + job.waiting_num + sum(
        1 for t in pending if t.last_tx in (S.ALLOCATED, S.PIPELINED)
    )
    ready = job.is_ready() and job.check_task_ready()
    if not ready and job.min_available > 0 and (placed < job.min_available):
        text = f"gang: {placed}/{job.min_available} tasks fit"
        return f"{text}; {node_reason}" if node_reason else text
    if not ready and job.min_available >= job.task_min_total:
        for role, need in sorted(job.spec.min_task_member.items()):
            have = sum(
                1 for t in job.tasks if t.spec.role == role
                and (t.status in READY_STATUSES or t.status == S.PIPELINED or t.last_tx in (S.ALLOCATED, S.PIPELINED))
            )
            if have < need:
                text = f"gang: task {role} has {have}/{need} tasks fit"
                return f"{text}; {node_reason}" if node_reason else text
    if waiting and not ready:
        return f"pipelined: waiting for {len(waiting)} task(s) to get released resources"
    return node_reason or ("" if ready else "not scheduled this session")


def _nomination_holds(ssn: Session, task: TaskInfo) -> bool:
    """The nominated node still exists and the pod fits its FutureIdle (victims still leaving)."""
    row = ssn.nodes.index.get(task.spec.nominated_node)
    return row is not None and fits(task.spec.request, ssn.future_idle(row), ssn.dims.always)


def _close_left_out(ssn: Session, result: CycleResult) -> None:
    """What closing writes for the jobs the session left out (framework/quiescent.py), merged
    over them by the ledger (framework/left_out.py), in C loops: the jobs whose only condition
    is gang's Scheduled share the session's one list of it (the result is read, never edited).

    Called first, on a result whose mappings are still empty: each is a copy of the ledger's
    (``dict.copy`` clones the table of a dict with few deleted slots in one block; ``update``
    into an empty dict inserts item by item once the ledger's dicts have had deletions)."""
    assert not (result.pod_owner or result.pod_groups or result.conditions or result.jobs
                or result.steady_pod_groups)
    left = ssn.left_out
    result.pod_owner = left.owners.copy()
    result.pod_groups = left.running.copy()
    scheduled = quiescent.scheduled_condition(ssn.uid)
    conditions = dict.fromkeys(left.plain, [scheduled])
    conditions.update({uid: [*map(dict, kept), scheduled.copy()] for uid, kept in left.kept.items()})
    result.conditions = conditions
    result.jobs = left.reports.copy()
    result.steady_pod_groups = left.steady.copy()


def close_session(ssn: Session, seconds: float = 0.0) -> CycleResult:
    for plugin in ssn.plugins.values():
        plugin.on_session_close(ssn)
    result = CycleResult(session_uid=ssn.uid, problems=list(ssn.snapshot.problems), warnings=list(ssn.warnings),
                         last_processed_node_index=ssn.node_cursor)
    names = ssn.node_names
    for task, reason in ssn.evictions:
        result.evictions.append(task.key)
        result.eviction_reasons[task.key] = reason
        ssn.log(3, f"Evict task {task.key} from node {names[task.node or 0]}, because of {reason}")
    verbosity = ssn.options.verbosity
    left = ssn.left_out
    if left:
        _close_left_out(ssn, result)
    # every PodGroup left out steady (a replay's usual session): the others are the session's own
    moved: list[str] | None = [] if not left or len(left.running) == len(left.steady) else None
    for job in ssn.jobs.values():  # in snapshot order (the jobs left out are in the result already)
        walk = _task_walk(ssn, job)
        result.pod_owner.update(walk.owners)
        result.bindings.update(walk.bindings)
        result.nominations.update(walk.nominations)
        if walk.nominated:
            for task in job.tasks:
                if (task.status in (S.PENDING, S.ALLOCATED) and task.spec.nominated_node
                        and not _nomination_holds(ssn, task)):
                    result.nominations_cleared.append(task.key)
        if walk.pipelined_nodes:
            result.pipelined[job.uid] = sorted(walk.pipelined_nodes)
        phase = pod_group_phase(ssn, job, walk)
        result.pod_groups[job.uid] = phase
        if moved is not None:
            moved.append(job.uid)
        result.conditions[job.uid] = list(job.conditions)
        message = next((c.get("message", "") for c in job.conditions if c.get("type") == "Unschedulable"), "")
        reason = short_reason(ssn, job, walk)
        result.jobs[job.uid] = JobReport(
            job=job.uid, queue=job.queue, phase=phase, min_available=job.min_available, tasks=len(job.tasks),
            bound=walk.bound, pipelined=walk.pipelined, pending=walk.pending, reason=reason, message=message,
        )
        if phase in ("Pending", "Inqueue") and reason and verbosity >= 3:
            ssn.log(3, f"PodGroup {job.uid} is pending reason: {reason}")
    if verbosity >= 2:  # the lines are not built in a session that keeps none
        ssn.log(3, f"Close Session {ssn.uid}")
        ssn.log(2, f"Session Close {ssn.uid}")  # pairs with "Session Open" (the seed's troubleshooting grep)
        ssn.log(2, f"Session {ssn.uid} duration: {seconds:.6f}s")
    if moved is not None:
        result.moved, result.moved_of = moved, len(result.pod_groups)
    result.device_allocations = dict(ssn.device_allocations)
    result.pod_annotations = dict(ssn.pod_annotations)
    result.pod_group_annotations = dict(ssn.shared.get("pod-group-annotations") or {})
    result.logs = list(ssn.logs)
    result.session_seconds = seconds
    return result
