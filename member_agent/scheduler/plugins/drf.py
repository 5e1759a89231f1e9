"""``drf``: dominant-resource fairness between jobs (volcano.md §6.5).

A job's share is its largest ``allocated / cluster total`` over every cluster dimension
(``pods`` included). Jobs with a lower share go first; a victim's job must not end with a
lower share than the preemptor's. With ``enableHierarchy`` the queue order follows
hierarchical DRF over the ``volcano.sh/hierarchy`` annotation (see :mod:`.hdrf`).
"""

from __future__ import annotations

from typing import Any

from member_agent.scheduler.framework.dims import Vector
from member_agent.scheduler.framework.infos import JobInfo, TaskInfo
from member_agent.scheduler.framework.interface import Point
from member_agent.scheduler.framework.session import Session
from member_agent.scheduler.framework.status import Vote
from member_agent.scheduler.plugins.drf_shares import DominantShares
from member_agent.scheduler.plugins.hdrf import HierarchicalDrf
from member_agent.scheduler.plugins.queue_usage import job_allocated

NAME = "drf"
ARGUMENTS = ()
SHARE_DELTA = 1e-6


class DrfPlugin:
    name = NAME

    def __init__(self) -> None:
        self.shares: DominantShares  # set by on_session_open (a placeholder cost a session a few numpy calls)
        self.hierarchy: HierarchicalDrf | None = None

    def on_session_open(self, ssn: Session) -> None:
        self.shares = DominantShares(ssn.total)
        zeros = ssn.dims.zeros()
        for job in ssn.jobs.values():
            self.shares.track(job.uid, job_allocated(job, zeros))
        ssn.add(Point.JOB_ORDER, NAME, self._job_order)
        ssn.add(Point.PREEMPTABLE, NAME, self._preemptable)
        ssn.add_event_handler(NAME, self._on_allocate, self._on_deallocate)
        option = next((p for t in ssn.conf.tiers for p in t.plugins if p.name == NAME), None)
        if option is not None and option.enabled("enableHierarchy"):
            self.hierarchy = HierarchicalDrf(ssn, self.shares)
            ssn.add(Point.QUEUE_ORDER, NAME, self.hierarchy.queue_order)
            ssn.add(Point.RECLAIMABLE, NAME, self.hierarchy.reclaimable)

    def _job_order(self, left: JobInfo, right: JobInfo) -> int:
        shares = self.shares  # known shares read straight from the table (a comparison per heap step)
        ls, rs = shares.share[left.uid], shares.share[right.uid]
        if ls is None:
            ls = shares.current(left.uid)
        if rs is None:
            rs = shares.current(right.uid)
        if ls == rs:
            return 0
        return -1 if ls < rs else 1

    def _preemptable(self, preemptor: TaskInfo, preemptees: list[TaskInfo]) -> tuple[list[TaskInfo], Vote]:
        job = preemptor.job
        ls = self.shares.share_of(self.shares.allocated[job.uid] + preemptor.spec.request)
        working: dict[str, Vector] = {}
        victims = []
        for task in preemptees:
            uid = task.job.uid
            if uid not in self.shares.allocated:
                continue
            alloc = working.setdefault(uid, self.shares.allocated[uid].copy())
            alloc -= task.spec.request
            rs = self.shares.share_of(alloc)
            if ls < rs or abs(ls - rs) <= SHARE_DELTA:
                victims.append(task)
        return victims, Vote.PERMIT

    def _update(self, task: TaskInfo, sign: float) -> None:
        alloc = self.shares.add(task.job.uid, task.spec.request, sign)
        if self.hierarchy is not None:
            self.hierarchy.update_job(task.job, alloc)

    def _on_allocate(self, task: TaskInfo) -> None:
        # ``_update(task, 1.0)`` written out: a handler runs for every placement.
        uid = task.job.uid
        shares = self.shares
        alloc = shares.allocated[uid]
        alloc += task.spec.request
        shares.share[uid] = None
        if self.hierarchy is not None:
            self.hierarchy.update_job(task.job, alloc)

    def _on_deallocate(self, task: TaskInfo) -> None:
        self._update(task, -1.0)

    def on_session_close(self, ssn: Session) -> None:
        pass


def new(args: dict[str, Any]) -> DrfPlugin:
    return DrfPlugin()
