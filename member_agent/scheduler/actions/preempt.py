"""``preempt``: starving jobs evict lower-priority work of their own queue (volcano.md §5.4).

Per queue (in queue order):

1. **Between jobs.** Each starving job (JobOrder) tries its pending tasks one by one while
   it is still starving. A task looks at nodes where it passes predicates (a resolvable
   failure is fine: evictions may fix it), best score first. On a node, the candidates are
   Bound/Running preemptable tasks of *other* jobs of the *same* queue; the plugins'
   ``Preemptable`` votes pick the victims (priority: lower priority only; gang: never below
   a job's minMember; conformance: never critical pods). Victims are evicted in
   ``BuildVictimsPriorityQueue`` order only until the task fits, then the task is
   pipelined onto the node. The job's statement is committed only if the job is now
   pipelined (its gang can start once the victims are gone); otherwise everything is
   undone. When the task's inter-pod anti-affinity conflicts with pods on the node (either
   direction), those pods must be among the victims and are evicted first; a conflict with a
   pod that cannot be a victim, or one elsewhere in the topology domain, rules the node out.
2. **Inside a job.** Pending tasks of those jobs may evict lower-priority tasks of the same
   job; each such move is committed on its own.

Evictions carry a reason: ``preempt: evicted (priority 10 < 1000) for ns/job``.
With ``enableTopologyAwarePreemption: true`` step 1's per-node search is Volcano's
topology-aware mode instead (:mod:`.preempt_topology`: dry runs, reprieve, best node).
"""

from __future__ import annotations

from collections import deque
from typing import Any, Callable

from member_agent.scheduler.actions.pq import PriorityQueue
from member_agent.scheduler.actions.preempt_topology import preempt_topology_aware
from member_agent.scheduler.actions.victims import (
    EvictableIndex,
    FailureMemo,
    affinity_blockers,
    blockers_first,
    candidate_rows,
    covers,
    fits_now,
    guard,
    job_evictable,
    priority_text,
    ranked_rows,
    tiered_victims,
)
from member_agent.scheduler.framework.arguments import Argument
from member_agent.scheduler.framework.hypernode_state import state_of
from member_agent.scheduler.framework.infos import JobInfo, TaskInfo
from member_agent.scheduler.framework.interface import Point
from member_agent.scheduler.framework.session import Session
from member_agent.scheduler.framework.statement import Statement
from member_agent.scheduler.framework.status import PREEMPTABLE_STATUSES, TaskStatus
from member_agent.scheduler.framework.victim_order import ordered_victims

NAME = "preempt"
ARGUMENTS = (
    Argument("predicateErrorCacheEnable", bool, True),
    Argument("enableTopologyAwarePreemption", bool, False),
    Argument("topologyAwarePreemptWorkerNum", int, 16),
    Argument("minCandidateNodesPercentage", int, 10),
    Argument("minCandidateNodesAbsolute", int, 1),
    Argument("maxCandidateNodesAbsolute", int, 100),
)
S = TaskStatus
Filter = Callable[[TaskInfo], bool]


def eligible_victim(preemptor: TaskInfo, victim: TaskInfo) -> bool:
    """Status and kind rules every preempt victim must meet."""
    if victim.status not in PREEMPTABLE_STATUSES or not victim.spec.preemptable:
        return False
    return not (preemptor.spec.best_effort and not victim.spec.best_effort)


class Preempt:
    name = NAME

    def __init__(self, args: dict[str, Any]) -> None:
        self.topology_aware = bool(args["enableTopologyAwarePreemption"])
        self.candidate_limits = (int(args["minCandidateNodesPercentage"]), int(args["minCandidateNodesAbsolute"]),
                                 int(args["maxCandidateNodesAbsolute"]))

    def execute(self, ssn: Session) -> None:
        ssn.log(5, "Enter Preempt ...")
        with EvictableIndex(ssn, NAME, PREEMPTABLE_STATUSES) as index:
            self._run(ssn, index)
        ssn.log(5, "Leaving Preempt ...")

    def _run(self, ssn: Session, index: EvictableIndex) -> None:
        self.memo = FailureMemo(ssn)
        queues: PriorityQueue[str] = PriorityQueue(ssn.queue_order)
        jobs_by_queue: dict[str, PriorityQueue[JobInfo]] = {}
        tasks_by_job: dict[str, deque[TaskInfo]] = {}
        under_request: dict[str, list[JobInfo]] = {}
        topology = state_of(ssn)
        for job in ssn.jobs.values():
            if job.is_pending() or job.queue not in ssn.queues or ssn.job_valid(job):
                continue
            if not ssn.job_starving(job):
                continue
            if topology is not None and topology.limit(job) is not None:
                continue  # as Volcano: a job with network topology preempts through gangpreempt only
            pending = [t for t in job.tasks if t.status == S.PENDING and not t.spec.gated]
            if not pending:
                continue
            if job.queue not in jobs_by_queue:
                jobs_by_queue[job.queue] = PriorityQueue(ssn.job_order)
                under_request[job.queue] = []
                queues.push(job.queue)
            jobs_by_queue[job.queue].push(job)
            under_request[job.queue].append(job)
            tasks_by_job[job.uid] = deque(ssn.sorted_tasks(pending))
        while queues:
            queue = queues.pop()
            jobs = jobs_by_queue[queue]
            while jobs:
                job = jobs.pop()
                stmt = Statement(ssn)
                tasks = tasks_by_job[job.uid]
                while ssn.job_starving(job) and tasks:
                    task = tasks.popleft()
                    if task.status != S.PENDING:
                        continue
                    self.preempt(ssn, index, stmt, task, self._between_jobs(task))
                if ssn.job_pipelined(job):
                    stmt.commit()
                else:
                    if stmt.has_evictions():
                        self.memo.clear()
                    stmt.discard()
            for job in under_request[queue]:
                pending = [t for t in job.tasks if t.status == S.PENDING and not t.spec.gated]
                for task in ssn.sorted_tasks(pending):
                    stmt = Statement(ssn)
                    if not self.preempt(ssn, index, stmt, task, self._within_job(task)):
                        stmt.discard()
                        self.memo.clear()
                        break
                    stmt.commit()

    @staticmethod
    def _between_jobs(preemptor: TaskInfo) -> Filter:
        job = preemptor.job

        def accept(victim: TaskInfo) -> bool:
            return victim.job is not job and victim.job.queue == job.queue and eligible_victim(preemptor, victim)

        return accept

    @staticmethod
    def _within_job(preemptor: TaskInfo) -> Filter:
        job = preemptor.job

        def accept(victim: TaskInfo) -> bool:
            return victim.job is job and eligible_victim(preemptor, victim)

        accept.within_job = True  # type: ignore[attr-defined]  # own-job victims: no minMember floor
        return accept

    def preempt(self, ssn: Session, index: EvictableIndex, stmt: Statement, task: TaskInfo, accept: Filter) -> bool:
        """Try to make room for ``task`` on one node; on success its ops are in ``stmt``."""
        if task.spec.extras.preemption_policy == "Never":
            return False
        if ssn.pre_predicate(task):
            return False
        queue = task.job.queue
        within_job = accept is not None and getattr(accept, "within_job", False)
        if within_job:
            evictable = job_evictable(ssn, task.job, PREEMPTABLE_STATUSES)
        else:  # other jobs' victims: only lower-priority jobs above their minMember
            evictable = index.evictable([queue], below=task.job.priority)
        key = (task.spec.shape, task.job.uid if within_job else task.job.priority, queue, within_job)
        rows = self.memo.keep(key, candidate_rows(ssn, task, evictable))
        if self.topology_aware:  # dry runs, reprieve, best node (preempt_topology.py)
            return preempt_topology_aware(ssn, stmt, task, accept, rows.tolist(), self.candidate_limits)
        for row in ranked_rows(ssn, task, rows).tolist():
            preemptees = [t for t in ssn.node_tasks[row].values() if accept(t)]
            victims = guard(task, tiered_victims(ssn, Point.PREEMPTABLE, task, preemptees), lower_priority=True) if preemptees else []
            blockers = affinity_blockers(ssn, task, row, victims)
            if blockers is None or not covers(ssn, task, row, victims):
                self.memo.fail(key, row)
                continue
            node_stmt = Statement(ssn)
            queue_ok = ssn.allocatable(queue, task)
            pending = blockers_first(ordered_victims(ssn, task, victims), blockers)
            evicted = 0
            while not (queue_ok and fits_now(ssn, task, row)) and pending:
                victim = pending.pop(0)
                node_stmt.evict(victim, f"preempt: evicted ({priority_text(victim, task)}) for {task.job.uid}")
                evicted += 1
                queue_ok = ssn.allocatable(queue, task)
            if queue_ok and fits_now(ssn, task, row):
                node_stmt.pipeline(task, row, evicted > 0)
                stmt.merge(node_stmt)
                ssn.log(3, f"Preempted {evicted} task(s) on node {ssn.node_names[row]} for task {task.key}")
                return True
            node_stmt.discard()
        return False


def new(args: dict[str, Any]) -> Preempt:
    return Preempt(args)
