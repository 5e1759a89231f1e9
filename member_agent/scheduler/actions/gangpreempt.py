"""``gangpreempt``: a starving gang evicts whole lower-priority gangs of its queue (volcano.md §5.6).

Victims: Bound/Running preemptable pods of *other* jobs of the *same* queue with a strictly
lower job priority, not protected by conformance. Unlike ``preempt``, a victim job may be
broken (its *whole* bundle) when its spare pods (*safe* bundle) are not enough; safe
bundles always go first. The plan (evictions + the preemptor's pipelined tasks) commits only
if the preemptor job becomes pipelined. See :mod:`.gang_evict`.
"""

from __future__ import annotations

from typing import Any

from member_agent.scheduler.actions.gang_evict import pending_tasks, plan_for_job, preemptor_jobs
from member_agent.scheduler.actions.victims import vote_filter
from member_agent.scheduler.framework.arguments import Argument
from member_agent.scheduler.framework.infos import JobInfo, TaskInfo
from member_agent.scheduler.framework.interface import Point
from member_agent.scheduler.framework.node_search import NodeSearch
from member_agent.scheduler.framework.session import Session
from member_agent.scheduler.framework.status import PREEMPTABLE_STATUSES

NAME = "gangpreempt"
ARGUMENTS = (Argument("maxDomains", int, 8), Argument("allowWholeBundle", bool, True))
VOTERS = frozenset({"conformance"})


def reason(victim: TaskInfo, job: JobInfo) -> str:
    return f"gangpreempt: evicted (priority {victim.job.priority} < {job.priority}) for {job.uid}"


class GangPreempt:
    name = NAME

    def __init__(self, args: dict[str, Any]) -> None:
        self.allow_whole = bool(args["allowWholeBundle"])
        self.max_domains = int(args["maxDomains"])

    def execute(self, ssn: Session) -> None:
        ssn.log(5, "Enter GangPreempt ...")
        search = NodeSearch(ssn, cache_errors=False)
        for job in preemptor_jobs(ssn):
            candidates = self.candidates(ssn, job)
            if not candidates:
                continue
            candidates = vote_filter(ssn, Point.PREEMPTABLE, VOTERS, pending_tasks(job)[0], candidates)
            stmt = plan_for_job(ssn, job, candidates, self.allow_whole, reason, search, self.max_domains)
            if stmt is not None:
                ssn.log(3, f"GangPreempt: job {job.uid} is pipelined after evictions")
                stmt.commit()
        ssn.log(5, "Leaving GangPreempt ...")

    @staticmethod
    def candidates(ssn: Session, job: JobInfo) -> list[TaskInfo]:
        out: list[TaskInfo] = []
        for other in ssn.jobs.values():
            if other is job or other.queue != job.queue or other.priority >= job.priority:
                continue
            out.extend(t for t in other.tasks
                       if t.status in PREEMPTABLE_STATUSES and t.spec.preemptable and t.node is not None)
        return out


def new(args: dict[str, Any]) -> GangPreempt:
    return GangPreempt(args)
