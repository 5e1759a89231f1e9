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


def new(args: dict[str, Any]) -> Backfill:
    return Backfill(args)
