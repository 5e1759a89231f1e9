"""``gang``: all-or-nothing by ``minMember``, ``minTaskMember`` and ``minSubGroups`` (volcano.md §6.2)."""

from __future__ import annotations

from typing import Any

from member_agent.scheduler.framework import quiescent
from member_agent.scheduler.framework.close import job_fit_error
from member_agent.scheduler.framework.infos import JobInfo, TaskInfo
from member_agent.scheduler.framework.interface import Point
from member_agent.scheduler.framework.session import Session
from member_agent.scheduler.framework.status import ALLOCATED_STATUSES, TaskStatus, Vote
from member_agent.scheduler.framework.subgroups import (
    check_sub_job_pipelined,
    check_sub_job_ready,
    check_sub_job_valid,
)

NAME = "gang"
ARGUMENTS = ()
S = TaskStatus


def job_valid(job: JobInfo) -> str:
    if not job.check_task_valid():
        return "NotEnoughPodsOfTask: Not enough valid pods of each task for gang-scheduling"
    if not check_sub_job_valid(job):
        return "NotEnoughPodsOfTask: Not enough valid subGroups of each task for gang-scheduling"
    valid = job.valid_num
    if valid < job.min_available:
        return f"NotEnoughTasks: Not enough valid tasks for gang-scheduling, valid: {valid}, min: {job.min_available}"
    return ""


def job_ready(job: JobInfo) -> bool:
    # check_sub_job_*: True at once for a job without subGroupPolicy (framework/subgroups.py)
    return (job.check_task_ready() and (not job.spec.sub_group_policy or check_sub_job_ready(job))
            and job.is_ready())


def job_pipelined(job: JobInfo) -> Vote:
    ok = (job.check_task_pipelined() and (not job.spec.sub_group_policy or check_sub_job_pipelined(job))
          and job.is_pipelined())
    return Vote.PERMIT if ok else Vote.REJECT


def job_order(left: JobInfo, right: JobInfo) -> int:
    lr, rr = left.is_ready(), right.is_ready()
    if lr == rr:
        return 0
    return 1 if lr else -1


def victims(_preemptor: TaskInfo, preemptees: list[TaskInfo]) -> tuple[list[TaskInfo], Vote]:
    """Never break a gang: a job gives up tasks only while it stays above minMember."""
    remaining: dict[str, int] = {}
    out = []
    for task in preemptees:
        job = task.job
        left = remaining.setdefault(job.uid, job.ready_num)
        if left > job.min_available:
            remaining[job.uid] = left - 1
            out.append(task)
    return out, Vote.PERMIT


class GangPlugin:
    name = NAME

    def on_session_open(self, ssn: Session) -> None:
        ssn.add(Point.JOB_VALID, NAME, job_valid)
        ssn.add(Point.PREEMPTABLE, NAME, victims)
        ssn.add(Point.RECLAIMABLE, NAME, victims)
        ssn.add(Point.JOB_ORDER, NAME, job_order)
        ssn.add(Point.JOB_READY, NAME, job_ready)
        ssn.add(Point.JOB_PIPELINED, NAME, job_pipelined)
        ssn.add(Point.JOB_STARVING, NAME, lambda j: j.is_starving())

    def on_session_close(self, ssn: Session) -> None:
        for job in ssn.jobs.values():
            if not job.tasks:
                continue
            if job_ready(job) or _releasing_holds_gang(job):
                _set_condition(job, *quiescent.SCHEDULED, ssn.uid)
                continue
            tentative = sum(1 for t in job.tasks if t.status == S.PENDING and t.last_tx in ALLOCATED_STATUSES)
            unready = job.min_available - (job.ready_num + tentative)
            message = f"{unready}/{len(job.tasks)} tasks in gang unschedulable: {job_fit_error(job, False)}"
            _set_condition(job, "Unschedulable", "NotEnoughResources", message, ssn.uid)


def _releasing_holds_gang(job: JobInfo) -> bool:
    releasing = sum(1 for t in job.tasks if t.status == S.RELEASING and t.node is not None)
    open_tasks = job.counts[S.PENDING] + job.counts[S.PIPELINED]
    return releasing > 0 and open_tasks == 0 and job.scheduled_num + releasing >= job.min_available


def _set_condition(job: JobInfo, kind: str, reason: str, message: str, uid: str) -> None:
    job.conditions = [c for c in job.conditions if c.get("type") != kind]
    job.conditions.append(quiescent.condition(kind, reason, message, uid))


def new(args: dict[str, Any]) -> GangPlugin:
    return GangPlugin()
