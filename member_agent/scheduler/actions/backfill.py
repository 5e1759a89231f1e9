"""``backfill``: place BestEffort tasks (no requests) wherever predicates pass (§5.3)."""

from __future__ import annotations

from functools import cmp_to_key
from typing import Any

from member_agent.scheduler.framework.arguments import Argument
from member_agent.scheduler.framework.infos import JobInfo, TaskInfo
from member_agent.scheduler.framework.node_search import NodeSearch
from member_agent.scheduler.framework.session import Session
from member_agent.scheduler.framework.status import TaskStatus

NAME = "backfill"
ARGUMENTS = (Argument("predicateErrorCacheEnable", bool, True),)
S = TaskStatus


class Backfill:
    name = NAME

    def __init__(self, args: dict[str, Any]) -> None:
        self.cache_errors = bool(args["predicateErrorCacheEnable"])

    def execute(self, ssn: Session) -> None:
        ssn.log(5, "Enter Backfill ...")
        search = NodeSearch(ssn, self.cache_errors)
        for task in self._tasks(ssn):
            error = ssn.pre_predicate(task)
            if error:
                task.fit_error = error
                continue
            candidates, fit_errors = search.feasible(task, check_resources=False)
            if fit_errors is not None:
                task.fit_error = fit_errors.message()
                continue
            ssn.allocate_now(task, search.best_node(task, candidates))
        ssn.log(5, "Leaving Backfill ...")

    @staticmethod
    def _tasks(ssn: Session) -> list[TaskInfo]:
        by_queue: dict[str, list[JobInfo]] = {}
        for job in ssn.jobs.values():
            # Only jobs with a best-effort task give backfill work: sorting every job of a queue each
            # session cost a sixth of a trace replay. A subset sorts in the same relative order
            # (job order is a total order), and JobValid (gang) has no side effect to keep.
            if not _has_best_effort(job):
                continue
            if job.is_pending() or job.queue not in ssn.queues or ssn.job_valid(job):
                continue
            by_queue.setdefault(job.queue, []).append(job)
        out: list[TaskInfo] = []
        for queue in sorted(by_queue, key=cmp_to_key(ssn.queue_order)):
            for job in sorted(by_queue[queue], key=cmp_to_key(ssn.job_order)):
                tasks = []
                for task in job.tasks:
                    if not task.spec.best_effort:
                        continue
                    if task.status == S.PIPELINED:
                        ssn.unplace(task)
                    if task.status == S.PENDING and not task.spec.gated:
                        tasks.append(task)
                out.extend(ssn.sorted_tasks(tasks))
        return out


def _has_best_effort(job: JobInfo) -> bool:
    """Whether the job has a best-effort task (a function of its spec, memoised there)."""
    memo = job.spec.memo
    found = memo.get("has_best_effort")
    if found is None:
        found = memo["has_best_effort"] = any(t.best_effort for t in job.spec.tasks)
    return bool(found)


def new(args: dict[str, Any]) -> Backfill:
    return Backfill(args)
