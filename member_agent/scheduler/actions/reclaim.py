"""``reclaim``: a queue below its share takes resources back from other queues (volcano.md §5.5).

Queues are visited in queue order; an overused queue is skipped. Each starving job of the
queue tries its pending tasks while it is starving; a task must pass ``Preemptive`` (the
queue may grow by it: proportion/capacity) and its pre-predicates. It then looks at nodes in
order: the candidates are *Running* preemptable tasks of jobs in *other* queues whose queue
is ``reclaimable: true`` (a ``reclaimable: false`` queue is never touched); the plugins'
``Reclaimable`` votes pick the victims (proportion/capacity: only from queues above their
deserved share; gang: never below minMember). Victims are evicted in victim order until the
task fits, and the task is pipelined there. The job's statement commits only if the job is
pipelined.

Three rules are added to Volcano's: a victim job never drops below its minMember (gang's
rule, kept even when a later tier names victims after gang named none); the queue-share
plugins (proportion, capacity, hierarchical drf) always vote, even from a later tier than
gang and conformance (otherwise tier 1 alone decides and deserved shares are ignored); and
a victim is skipped when evicting it would take its queue below its ``guarantee`` on a
resource it holds (capacity already checks this; proportion's vote only looks at the queue
before the eviction, so a large task could cross the line).
"""

from __future__ import annotations

from collections import deque
from typing import Any

import numpy as np

from member_agent.scheduler.actions.pq import PriorityQueue
from member_agent.scheduler.actions.victims import (
    EvictableIndex,
    FailureMemo,
    affinity_blockers,
    blockers_first,
    candidate_rows,
    covers,
    guard,
    tiered_victims,
    vote_filter,
    voters,
)
from member_agent.scheduler.framework.arguments import Argument
from member_agent.scheduler.framework.dims import fits
from member_agent.scheduler.framework.infos import JobInfo, TaskInfo
from member_agent.scheduler.framework.interface import Point
from member_agent.scheduler.framework.session import Session
from member_agent.scheduler.framework.statement import Statement
from member_agent.scheduler.framework.status import TaskStatus
from member_agent.scheduler.framework.victim_order import ordered_victims

NAME = "reclaim"
ARGUMENTS = (Argument("predicateErrorCacheEnable", bool, True),)
S = TaskStatus
RUNNING = frozenset({S.RUNNING})
#: Plugins whose Reclaimable vote encodes queue shares (deserved, guarantee).
SHARE_PLUGINS = frozenset({"proportion", "capacity", "drf"})


class Reclaim:
    name = NAME

    def __init__(self, args: dict[str, Any]) -> None:
        pass

    def execute(self, ssn: Session) -> None:
        ssn.log(5, "Enter Reclaim ...")
        with EvictableIndex(ssn, NAME, RUNNING) as index:
            self._run(ssn, index)
        ssn.log(5, "Leaving Reclaim ...")

    def _run(self, ssn: Session, index: EvictableIndex) -> None:
        self.memo = FailureMemo(ssn)
        queues: PriorityQueue[str] = PriorityQueue(ssn.queue_order)
        seen: set[str] = set()
        jobs_by_queue: dict[str, PriorityQueue[JobInfo]] = {}
        tasks_by_job: dict[str, deque[TaskInfo]] = {}
        for job in ssn.jobs.values():
            if job.is_pending() or job.queue not in ssn.queues or ssn.job_valid(job):
                continue
            if job.queue not in seen:
                seen.add(job.queue)
                queues.push(job.queue)
            if not ssn.job_starving(job):
                continue
            pending = [t for t in job.tasks if t.status == S.PENDING and not t.spec.gated]
            if not pending:
                continue
            jobs_by_queue.setdefault(job.queue, PriorityQueue(ssn.job_order)).push(job)
            tasks_by_job[job.uid] = deque(ssn.sorted_tasks(pending))
        while queues:
            queue = queues.pop()
            if ssn.overused(queue):
                ssn.log(3, f"Queue <{queue}> is overused, ignore it.")
                continue
            jobs = jobs_by_queue.get(queue)
            if not jobs:
                continue
            job = jobs.pop()
            stmt = Statement(ssn)
            tasks = tasks_by_job[job.uid]
            while ssn.job_starving(job) and tasks:
                task = tasks.popleft()
                if task.status != S.PENDING or task.spec.extras.preemption_policy == "Never":
                    continue
                if not ssn.preemptive(queue, [task]):
                    ssn.log(3, f"Queue <{queue}> can not reclaim by preempt others when considering task <{task.name}>")
                    continue
                if ssn.pre_predicate(task):
                    continue
                self.reclaim_for_task(ssn, index, stmt, task)
            if ssn.job_pipelined(job):
                stmt.commit()
            else:
                if stmt.has_evictions():
                    self.memo.clear()
                stmt.discard()
            if jobs:
                queues.push(queue)

    @staticmethod
    def _reclaimable_queues(ssn: Session, own: str) -> list[str]:
        return [name for name, q in ssn.queues.items() if name != own and q.reclaimable]

    def reclaim_for_task(self, ssn: Session, index: EvictableIndex, stmt: Statement, task: TaskInfo) -> bool:
        queue = task.job.queue
        donors = set(self._reclaimable_queues(ssn, queue))
        if not donors:
            return False
        key = (task.spec.shape, queue)
        keep_gangs = "gang" in voters(ssn, Point.RECLAIMABLE)
        rows = self.memo.keep(key, candidate_rows(ssn, task, index.evictable(donors, open_only=keep_gangs)))
        for row in rows.tolist():
            reclaimees = [
                t for t in ssn.node_tasks[row].values()
                if t.status == S.RUNNING and t.spec.preemptable and t.job.queue in donors
            ]
            if not reclaimees:
                self.memo.fail(key, row)
                continue
            victims = guard(task, tiered_victims(ssn, Point.RECLAIMABLE, task, reclaimees), lower_priority=False,
                            keep_gangs=keep_gangs)
            # the queue-share plugins' vote applies whatever tier they sit in: with the usual tiers gang
            # and conformance (tier 1) decide alone and would ignore deserved shares
            victims = vote_filter(ssn, Point.RECLAIMABLE, SHARE_PLUGINS, task, ordered_victims(ssn, task, victims))
            blockers = affinity_blockers(ssn, task, row, victims)  # anti-affinity conflicts go first
            if blockers is None or not covers(ssn, task, row, victims):
                self.memo.fail(key, row)
                continue
            must = {b.key for b in blockers}
            node_stmt = Statement(ssn)
            for victim in blockers_first(victims, blockers):
                if victim.key not in must and fits(task.spec.request, ssn.future_idle(row), ssn.dims.always):
                    break
                if self._below_guarantee(ssn, index, victim):
                    continue
                node_stmt.evict(victim, f"reclaim: evicted (queue {victim.job.queue} is above its deserved share) "
                                        f"for {task.job.uid} in queue {queue}")
            resolved = all(b.status == S.RELEASING for b in blockers)
            if resolved and fits(task.spec.request, ssn.future_idle(row), ssn.dims.always):
                node_stmt.pipeline(task, row, len(node_stmt) > 0)
                stmt.merge(node_stmt)
                return True
            node_stmt.discard()
            self.memo.fail(key, row)
        return False

    @staticmethod
    def _below_guarantee(ssn: Session, index: EvictableIndex, victim: TaskInfo) -> bool:
        guarantee = ssn.queues[victim.job.queue].guarantee
        if not guarantee:
            return False
        floor = ssn.dims.vector(guarantee)
        after = index.queue_allocated(victim.job.queue) - victim.spec.request
        held = (victim.spec.request > 0) & (floor > 0) & ~ssn.dims.is_pods
        return bool(np.any(after[held] < floor[held] - 0.1))


def new(args: dict[str, Any]) -> Reclaim:
    return Reclaim(args)
