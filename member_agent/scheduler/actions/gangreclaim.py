"""``gangreclaim``: a starving gang takes whole gangs back from other queues (volcano.md §5.6).

Victims: Running preemptable pods of jobs in *other* queues with ``reclaimable: true``,
accepted by conformance and by the queue-share plugins (proportion/capacity: the victim
queue is above its deserved share), never taking a queue below its ``guarantee``. The
preemptor's queue must not be overused and must pass ``Preemptive`` for the pending tasks.
Safe bundles (spare pods) go before whole gangs; the plan commits only if the job becomes
pipelined. See :mod:`.gang_evict`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from member_agent.scheduler.actions.gang_evict import pending_tasks, plan_for_job, preemptor_jobs
from member_agent.scheduler.actions.victims import vote_filter
from member_agent.scheduler.framework.arguments import Argument
from member_agent.scheduler.framework.infos import JobInfo, TaskInfo
from member_agent.scheduler.framework.interface import Point
from member_agent.scheduler.framework.node_search import NodeSearch
from member_agent.scheduler.framework.session import Session
from member_agent.scheduler.framework.status import ALLOCATED_STATUSES, TaskStatus

NAME = "gangreclaim"
ARGUMENTS = (Argument("maxDomains", int, 8), Argument("allowWholeBundle", bool, True))
VOTERS = frozenset({"conformance", "proportion", "capacity", "drf"})


def reason(victim: TaskInfo, job: JobInfo) -> str:
    return f"gangreclaim: evicted (queue {victim.job.queue} is above its deserved share) for {job.uid} in queue {job.queue}"


class GangReclaim:
    name = NAME

    def __init__(self, args: dict[str, Any]) -> None:
        self.allow_whole = bool(args["allowWholeBundle"])
        self.max_domains = int(args["maxDomains"])

    def execute(self, ssn: Session) -> None:
        ssn.log(5, "Enter GangReclaim ...")
        search = NodeSearch(ssn, cache_errors=False)
        for job in preemptor_jobs(ssn):
            if ssn.overused(job.queue):
                continue
            pending = pending_tasks(job)
            if not ssn.preemptive(job.queue, pending):
                ssn.log(3, f"Queue <{job.queue}> can not reclaim for job <{job.uid}>")
                continue
            candidates = self.candidates(ssn, job)
            if not candidates:
                continue
            candidates = self._within_guarantee(ssn, vote_filter(ssn, Point.RECLAIMABLE, VOTERS, pending[0], candidates))

            stmt = plan_for_job(ssn, job, candidates, self.allow_whole, reason, search, self.max_domains)
            if stmt is not None:
                stmt.commit()
        ssn.log(5, "Leaving GangReclaim ...")

    @staticmethod
    def candidates(ssn: Session, job: JobInfo) -> list[TaskInfo]:
        out: list[TaskInfo] = []
        for other in ssn.jobs.values():
            queue = ssn.queues.get(other.queue)
            if other.queue == job.queue or queue is None or not queue.reclaimable:
                continue
            out.extend(t for t in other.tasks if t.status == TaskStatus.RUNNING and t.spec.preemptable and t.node is not None)
        return out

    @staticmethod
    def _within_guarantee(ssn: Session, candidates: list[TaskInfo]) -> list[TaskInfo]:
        """Drop candidates whose eviction (with those kept before them) would take their queue
        below its guarantee on a resource they hold."""
        left: dict[str, np.ndarray] = {}
        out = []
        for task in candidates:
            queue = task.job.queue
            floor = ssn.dims.vector(ssn.queues[queue].guarantee)
            if queue not in left:
                left[queue] = sum((t.spec.request for j in ssn.queue_jobs(queue) for t in j.tasks
                                   if t.status in ALLOCATED_STATUSES), ssn.dims.zeros())
            after = left[queue] - task.spec.request
            held = (task.spec.request > 0) & (floor > 0) & ~ssn.dims.is_pods
            if np.any(after[held] < floor[held] - 0.1):
                continue
            left[queue] = after
            out.append(task)
        return out


def new(args: dict[str, Any]) -> GangReclaim:
    return GangReclaim(args)
