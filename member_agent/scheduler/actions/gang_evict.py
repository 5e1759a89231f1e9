"""What ``gangpreempt`` and ``gangreclaim`` share: job-level eviction plans (volcano.md §5.6).

``preempt`` and ``reclaim`` never take a victim job below its minMember, so a gang whose
minAvailable equals its replicas can never give anything up. The gang variants work per
*preemptor job* instead of per task, and may evict whole victim gangs:

1. the starving job's pending tasks need ``need = Σ request``;
2. candidate victims (per variant: same queue and strictly lower job priority, or Running
   pods of other ``reclaimable`` queues) are grouped per victim job into *bundles*: a *safe*
   bundle (tasks the job can lose while staying at or above minMember, lowest task priority
   first) and a *whole* bundle (the rest: taking it breaks the victim gang);
3. bundles are taken safe first, then in victim order (the victim job that sorts last, or
   the victim queue that sorts last), larger first; once the cluster's FutureIdle plus what
   the selected bundles free covers ``need``, a plan is tried: evict the selected victims,
   pipeline every pending task on the best node that now fits it (predicates included);
   the plan is kept only if the job is then pipelined, else undone and more bundles are
   added.

Plans are made inside one network domain at a time (:mod:`.evict_domains`: the cluster, or
the job's HyperNodes for eviction, widest first); victims, FutureIdle and the pipelined
tasks' nodes all come from that domain. Plugins' votes filter candidates:
conformance (never critical pods), and for reclaim proportion/capacity (the victim queue is
above its deserved share) plus the guarantee floor.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cmp_to_key
from typing import TYPE_CHECKING, Callable

import numpy as np

from member_agent.scheduler.actions.evict_domains import victim_domains
from member_agent.scheduler.actions.pq import PriorityQueue
from member_agent.scheduler.framework.dims import Vector, fits
from member_agent.scheduler.framework.node_search import NodeSearch, shape_cache
from member_agent.scheduler.framework.statement import Statement
from member_agent.scheduler.framework.status import TaskStatus
from member_agent.scheduler.framework.subgroups import split_safe_victims

if TYPE_CHECKING:
    from member_agent.scheduler.framework.infos import JobInfo, TaskInfo
    from member_agent.scheduler.framework.session import Session

S = TaskStatus


@dataclass
class Bundle:
    job: JobInfo
    tasks: list[TaskInfo]
    safe: bool
    request: Vector = field(default_factory=lambda: np.zeros(0))


def pending_tasks(job: JobInfo) -> list[TaskInfo]:
    return [t for t in job.tasks if t.status == S.PENDING and not t.spec.gated and not t.spec.best_effort]


def preemptor_jobs(ssn: Session) -> list[JobInfo]:
    """Starving, valid, admitted jobs with pending work, queue by queue in queue order."""
    queues: PriorityQueue[str] = PriorityQueue(ssn.queue_order)
    by_queue: dict[str, PriorityQueue[JobInfo]] = {}
    for job in ssn.jobs.values():
        if job.is_pending() or job.queue not in ssn.queues or ssn.job_valid(job) or not ssn.job_starving(job):
            continue
        if not pending_tasks(job):
            continue
        if job.queue not in by_queue:
            by_queue[job.queue] = PriorityQueue(ssn.job_order)
            queues.push(job.queue)
        by_queue[job.queue].push(job)
    out = []
    while queues:
        jobs = by_queue[queues.pop()]
        while jobs:
            out.append(jobs.pop())
    return out


def make_bundles(ssn: Session, candidates: list[TaskInfo], allow_whole: bool) -> list[Bundle]:
    by_job: dict[str, list[TaskInfo]] = {}
    for task in candidates:
        by_job.setdefault(task.job.uid, []).append(task)
    bundles = []
    for tasks in by_job.values():
        tasks.sort(key=lambda t: (t.spec.priority, t.spec.uid))
        job = tasks[0].job
        surplus = job.ready_num - job.min_available
        safe, whole = (tasks, []) if surplus < 0 else split_safe_victims(job, tasks, surplus)
        for part, is_safe in ((safe, True), (whole, False)):
            if part and (is_safe or allow_whole):
                request = sum((t.spec.request for t in part), ssn.dims.zeros())
                bundles.append(Bundle(job, part, is_safe, request))
    return bundles


def order_bundles(ssn: Session, bundles: list[Bundle], preemptor: JobInfo,
                  need: Vector) -> list[Bundle]:
    wanted = need > 0
    wanted[ssn.dims.PODS] = False

    def compare(left: Bundle, right: Bundle) -> int:
        if left.safe != right.safe:
            return -1 if left.safe else 1
        if left.job is not right.job:
            if left.job.queue != right.job.queue:
                result = ssn.victim_queue_order(left.job.queue, right.job.queue, preemptor.queue)
            else:
                result = -ssn.job_order(left.job, right.job)
            if result:
                return result
        lv = float(np.minimum(left.request[wanted], need[wanted]).sum())
        rv = float(np.minimum(right.request[wanted], need[wanted]).sum())
        return 0 if lv == rv else (-1 if lv > rv else 1)

    return sorted(bundles, key=cmp_to_key(compare))


def try_plan(ssn: Session, stmt: Statement, job: JobInfo, victims: list[TaskInfo], reason: Callable[[TaskInfo, JobInfo], str],
             search: NodeSearch, inside: np.ndarray | None = None) -> bool:
    """Evict ``victims`` and pipeline the job's pending tasks; keep it only if the job is pipelined."""
    for victim in victims:
        stmt.evict(victim, reason(victim, job))
    for task in ssn.sorted_tasks(pending_tasks(job)):
        cache = shape_cache(ssn, task)
        rows = cache.ok_rows
        if inside is not None:
            rows = rows[inside[rows]]
        if len(rows) == 0:
            continue
        # Pipelined, not allocated: a partly bound gang must not start before its victims are gone.
        stmt.pipeline(task, search.best_node(task, rows), True)
    if ssn.job_pipelined(job):
        return True
    stmt.discard()
    return False


def plan_for_job(ssn: Session, job: JobInfo, candidates: list[TaskInfo], allow_whole: bool,
                 reason: Callable[[TaskInfo, JobInfo], str], search: NodeSearch,
                 max_domains: int = 8) -> Statement | None:
    """Per domain in order, add bundles until a plan works; the returned statement holds it
    (uncommitted)."""
    pending = pending_tasks(job)
    need = sum((t.spec.request for t in pending), ssn.dims.zeros())
    if not candidates:
        return None
    future_rows = ssn.idle + ssn.releasing - ssn.pipelined
    for name, rows in victim_domains(ssn, job, max_domains, need):
        inside = None
        local = candidates
        future = future_rows.sum(axis=0)
        if rows is not None:
            inside = np.zeros(len(ssn.node_names), dtype=bool)
            inside[rows] = True
            local = [t for t in candidates if t.node is not None and inside[t.node]]
            future = future_rows[rows].sum(axis=0)
        stmt = _plan_in_domain(ssn, job, local, allow_whole, reason, search, need, future, inside)
        if stmt is not None:
            if name:
                ssn.log(3, f"Gang eviction: job {job.uid} planned in hyperNode {name}")
            return stmt
    return None


def _plan_in_domain(ssn: Session, job: JobInfo, candidates: list[TaskInfo], allow_whole: bool,
                    reason: Callable[[TaskInfo, JobInfo], str], search: NodeSearch, need: Vector,
                    future: Vector, inside: np.ndarray | None) -> Statement | None:
    if not candidates:
        return None
    selected: list[TaskInfo] = []
    freed = ssn.dims.zeros()
    for bundle in order_bundles(ssn, make_bundles(ssn, candidates, allow_whole), job, need):
        selected.extend(bundle.tasks)
        freed += bundle.request
        if not fits(need, future + freed, ssn.dims.always):
            continue
        stmt = Statement(ssn)
        if try_plan(ssn, stmt, job, list(selected), reason, search, inside):
            return stmt
    return None
