"""``allocate``: queue → job → task → node, all-or-nothing per gang (volcano.md §5.2).

The loop pops the queue that should be served first, then its first job, and fills a
:class:`Statement` with that job's pending tasks until the gang is ready. A ready job is
committed (its pods bind) and, if it still has pending tasks, goes back for one more task
per later pop; a job that is only *pipelined* (fits once releasing resources are freed)
keeps its placements in the session without binding; any other job is discarded. An
overused queue is dropped for the rest of the action.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import numpy as np

from member_agent.scheduler.actions.allocate_subgroups import allocate_sub_groups, allocate_sub_groups_flat
from member_agent.scheduler.actions.allocate_topology import Domain, allocate_hard
from member_agent.scheduler.actions.pq import PriorityQueue
from member_agent.scheduler.framework.arguments import Argument
from member_agent.scheduler.framework.dims import fits
from member_agent.scheduler.framework.hypernode_state import state_of
from member_agent.scheduler.framework.infos import JobInfo, TaskInfo
from member_agent.scheduler.framework.node_search import NodeSearch
from member_agent.scheduler.framework.session import Session
from member_agent.scheduler.framework.statement import Statement
from member_agent.scheduler.framework.status import TaskStatus

NAME = "allocate"
ARGUMENTS = (Argument("predicateErrorCacheEnable", bool, True),)
S = TaskStatus
_PENDING = TaskStatus.PENDING  # a module constant: an enum member read through its class costs ~0.3 us, per task here


class Allocate:
    name = NAME

    def __init__(self, args: dict[str, Any]) -> None:
        self.cache_errors = bool(args["predicateErrorCacheEnable"])

    def execute(self, ssn: Session) -> None:
        ssn.log(5, "Enter Allocate ...")
        search = NodeSearch(ssn, self.cache_errors)
        topology = state_of(ssn)  # None without HyperNodes: the flat path only
        queues: PriorityQueue[str] = PriorityQueue(ssn.queue_order)
        jobs_by_queue: dict[str, PriorityQueue[JobInfo]] = {}
        worksheets: dict[str, deque[TaskInfo]] = {}
        for job in ssn.jobs.values():
            if job.is_pending():
                if ssn.enqueue_configured:
                    continue
                job.phase = "Inqueue"  # without enqueue, allocate admits every job
            reason = ssn.job_valid(job)
            if reason:
                job.job_fit_error = reason
                continue
            if job.queue not in ssn.queues:
                continue
            tasks = [t for t in job.tasks if t.status == _PENDING and not t.spec.gated and not t.spec.best_effort]
            if not tasks:
                continue
            worksheets[job.uid] = deque(ssn.sorted_tasks(tasks))
            pq = jobs_by_queue.get(job.queue)
            if pq is None:
                pq = jobs_by_queue[job.queue] = PriorityQueue(ssn.job_order)
                queues.push(job.queue)
            pq.push(job)
            ssn.log(4, f"Added Job <{job.uid}> into Queue <{job.queue}>")
        ssn.log(3, f"Try to allocate resource to {len(jobs_by_queue)} Queues")
        while queues:
            queue = queues.pop()
            jobs = jobs_by_queue.get(queue)
            if ssn.overused(queue):
                ssn.log(3, f"Queue <{queue}> is overused, ignore it.")
                while jobs:
                    waiting = jobs.pop()
                    if not waiting.is_ready():
                        waiting.job_fit_error = waiting.job_fit_error or f"queue {queue} overused"
                continue
            if not jobs:
                continue
            job = jobs.pop()
            worksheet = worksheets[job.uid]
            limit = topology.limit(job) if topology is not None else None
            if topology is not None and job.spec.sub_group_policy:  # actions/allocate_subgroups.py
                stmt = allocate_sub_groups(self, ssn, search, job, worksheet, topology, limit)
            elif job.spec.sub_group_policy:  # no HyperNodes or no plugin: the cluster is the one domain
                stmt = allocate_sub_groups_flat(ssn, search, job, worksheet)
            elif limit is not None and topology is not None:  # hard topology (soft converted at the top tier): actions/allocate_topology.py
                stmt = allocate_hard(self, ssn, search, job, worksheet, topology, limit)
            else:
                stmt = self._allocate_tasks(ssn, search, job, worksheet)
            if stmt is not None and ssn.job_ready(job):
                stmt.commit()
                if worksheet:
                    jobs.push(job)
            # A merely pipelined job keeps its operations; it is not pushed back.
            queues.push(queue)
        ssn.log(5, "Leaving Allocate ...")

    def _allocate_tasks(self, ssn: Session, search: NodeSearch, job: JobInfo,
                        tasks: deque[TaskInfo], domain: Domain | None = None) -> Statement | None:
        stmt = Statement(ssn)
        while tasks:
            task = tasks.popleft()
            if not ssn.allocatable(job.queue, task):
                ssn.log(3, f"Queue <{job.queue}> is overused when considering task <{task.name}>, ignore it.")
                task.fit_error = f"queue {job.queue} overused"
                continue
            if job.roles_with_fit_errors and job.has_role_fit_error(task):  # no call while no role failed
                task.fit_error = f"Task {task.key} with role spec {task.spec.role} has already predicated failed, skip"
                continue
            error = ssn.pre_predicate(task)
            if error:
                task.fit_error = error
                job.roles_with_fit_errors.add(task.spec.role)
                if job.need_continue_allocating():
                    continue
                break
            row = self._nominated(ssn, search, task) if task.spec.nominated_node else None  # most have none: no call
            if row is not None and domain is not None and not _inside(domain, row):
                row = None
            if row is None and domain is not None:
                candidates, message = domain.feasible(ssn, search, task)
                if message:
                    task.fit_error = message
                    job.roles_with_fit_errors.add(task.spec.role)
                    if job.need_continue_allocating():
                        continue
                    break
                row, fit_idle = search.best_feasible(task, candidates)
                fit_future = True  # a domain's feasible rows are current in the shape cache too
            elif row is None:
                planned = search.planned(task)  # decided with an earlier sibling's search
                if planned is not None:
                    row, fit_idle = planned
                else:
                    candidates, fit_errors = search.feasible(task, plan=True)
                    if fit_errors is not None:
                        task.fit_error = fit_errors.message()
                        job.roles_with_fit_errors.add(task.spec.role)
                        if job.need_continue_allocating():
                            continue
                        break
                    row, fit_idle = search.best_feasible(task, candidates)
                fit_future = True
            else:  # the nominated node
                fit_idle, fit_future = search.fits_resources(task, row)
            if fit_idle:
                stmt.allocate(task, row)
            elif fit_future:
                stmt.pipeline(task, row)
            if ssn.job_ready(job):
                break
        if ssn.job_ready(job) or ssn.job_pipelined(job):
            return stmt
        stmt.discard()
        return None

    @staticmethod
    def _nominated(ssn: Session, search: NodeSearch, task: TaskInfo) -> int | None:
        name = task.spec.nominated_node
        if not name:
            return None
        row = ssn.nodes.index.get(name)
        if row is None or not fits(task.spec.request, ssn.future_idle(row), ssn.dims.always):
            return None
        return row if search.fits_on(task, row) else None


def _inside(domain: Domain, row: int) -> bool:
    i = int(np.searchsorted(domain.rows, row))
    return i < len(domain.rows) and int(domain.rows[i]) == row


def new(args: dict[str, Any]) -> Allocate:
    return Allocate(args)
