"""``priority``: task and job order by priority, priority-based victims (volcano.md §6.1)."""

from __future__ import annotations

from typing import Any

from member_agent.scheduler.framework.infos import JobInfo, TaskInfo
from member_agent.scheduler.framework.interface import Point
from member_agent.scheduler.framework.session import Session
from member_agent.scheduler.framework.status import Vote

NAME = "priority"
ARGUMENTS = ()


def _desc(left: int, right: int) -> int:
    return 0 if left == right else (-1 if left > right else 1)


def task_order(left: TaskInfo, right: TaskInfo) -> int:
    return _desc(left.spec.priority, right.spec.priority)


task_order.sort_key = lambda t: -t.spec.priority  # type: ignore[attr-defined]


def _job_order(left: JobInfo, right: JobInfo) -> int:
    """``_desc`` of the jobs' priorities, written out: the job queues compare at every heap step."""
    lp, rp = left.priority, right.priority
    return 0 if lp == rp else (-1 if lp > rp else 1)


class PriorityPlugin:
    name = NAME

    def on_session_open(self, ssn: Session) -> None:
        ssn.add(Point.TASK_ORDER, NAME, task_order)
        ssn.add(Point.JOB_ORDER, NAME, _job_order)
        ssn.add(Point.PREEMPTABLE, NAME, self._preemptable)
        ssn.add(Point.JOB_STARVING, NAME, lambda j: j.ready_num + j.waiting_num < len(j.tasks))

    @staticmethod
    def _preemptable(preemptor: TaskInfo, preemptees: list[TaskInfo]) -> tuple[list[TaskInfo], Vote]:
        job: JobInfo = preemptor.job
        victims = []
        for task in preemptees:
            if task.job is not job:
                if task.job.priority < job.priority:
                    victims.append(task)
            elif task.spec.priority < preemptor.spec.priority:
                victims.append(task)
        return victims, Vote.PERMIT

    def on_session_close(self, ssn: Session) -> None:
        pass


def new(args: dict[str, Any]) -> PriorityPlugin:
    return PriorityPlugin()
