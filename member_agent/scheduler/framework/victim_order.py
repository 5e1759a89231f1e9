"""Volcano's ``BuildVictimsPriorityQueue`` (volcano.md §3): the order victims are evicted in.

Shared by the preempt/reclaim actions (eviction order) and by plugins whose victim vote
depends on the order it walks candidates in: capacity's ``ReclaimableFn`` subtracts each
accepted victim from its queue's working allocation, so which victims it accepts depends on
walking them in eviction order, as Volcano's does.
"""

from __future__ import annotations

from functools import cmp_to_key
from typing import TYPE_CHECKING, Callable, Iterable

if TYPE_CHECKING:
    from member_agent.scheduler.framework.infos import TaskInfo
    from member_agent.scheduler.framework.session import Session


def victim_order(ssn: Session, preemptor: TaskInfo) -> Callable[[TaskInfo, TaskInfo], int]:
    """Comparator: negative when ``left`` is evicted before ``right``. Within a job the task
    that sorts last goes first; between jobs of one queue the job that sorts last; between
    queues ``VictimQueueOrderFn`` (default: reverse queue order)."""
    def compare(left: TaskInfo, right: TaskInfo) -> int:
        if left.job is right.job:
            return -ssn.task_order(left, right)
        if left.job.queue == right.job.queue:
            result = -ssn.job_order(left.job, right.job)
        else:
            result = ssn.victim_queue_order(left.job.queue, right.job.queue, preemptor.job.queue)
        return result if result else -ssn.task_order(left, right)

    return compare


def ordered_victims(ssn: Session, preemptor: TaskInfo, victims: Iterable[TaskInfo]) -> list[TaskInfo]:
    return sorted(victims, key=cmp_to_key(victim_order(ssn, preemptor)))
