"""What one job adds to its queue's sums (``plugins/queue_usage.py``): its task sums at their statuses
and its four terms (allocated, request, elastic, inqueue), kept in its spec's memo while the job is as
its snapshot has it.

Worked out on Python floats: a replay's job has one or two tasks, and every session's jobs are specs
no session saw before (a new PodGroup, its pod created, its pod bound), where a dozen numpy calls per
job on 4-value vectors cost several times the arithmetic. The operations are the vector code's, on the
same doubles in the same order (``np.maximum(x, 0.0)`` is :func:`_at_least_zero`).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain

import numpy as np

from member_agent.scheduler.framework.dims import Vector
from member_agent.scheduler.framework.infos import JobInfo
from member_agent.scheduler.framework.snapshot import JobSpec, TaskSpec
from member_agent.scheduler.framework.status import ALLOCATED_STATUSES, TaskStatus


def allocated_count(job: JobInfo) -> int:
    return job.count(ALLOCATED_STATUSES)


_PENDING = TaskStatus.PENDING  # read per task: a member read through its enum class costs ~0.3 us


@dataclass(frozen=True)
class _TaskSums:
    """A job's task sums at some statuses, as Python floats: the same additions, in the same order,
    as a walk over numpy vectors (IEEE sums of doubles either way). A job of a replay has one or two
    tasks, where a dozen numpy calls on 4-value vectors cost several times the arithmetic."""

    allocated: list[float]
    pending: tuple[Vector, ...]  # requests of Pending tasks, added one by one as a walk adds them
    allocated_count: int
    gated: list[float]
    #: The request sum (allocated, then each Pending request, in turn) and whether all those values are
    #: whole numbers: the same for both readings of the terms (with and without the full minimum for
    #: Inqueue jobs), so worked out once for the two (a session's first opening did it twice per job).
    request_sum: list[float]
    request_whole: bool

    @classmethod
    def of(cls, job: JobInfo, zeros: Vector) -> _TaskSums:
        return cls.over([(t.status, t.spec) for t in job.tasks], allocated_count(job), zeros)

    @classmethod
    def over(cls, tasks: list[tuple[TaskStatus, TaskSpec]], count: int, zeros: Vector) -> _TaskSums:
        """The sums of ``tasks`` (status, spec) in order, ``count`` of them in an allocated status."""
        start = zeros.tolist()
        allocated = gated = start
        pending = []
        for status, spec in tasks:
            if status in ALLOCATED_STATUSES:  # job_allocated's terms
                allocated = [a + r for a, r in zip(allocated, spec.request.tolist(), strict=True)]
            elif status == _PENDING:
                pending.append(spec.request)
                if spec.gated:  # gated_request's terms
                    gated = [g + r for g, r in zip(gated, spec.request.tolist(), strict=True)]
        parts = [allocated, *(request.tolist() for request in pending)]
        request_sum = start
        for part in parts:
            request_sum = [total + r for total, r in zip(request_sum, part, strict=True)]
        return cls(allocated, tuple(pending), count, gated, request_sum, all(map(float.is_integer, chain.from_iterable(parts))))


def _task_sums(job: JobInfo, zeros: Vector) -> _TaskSums:
    """Read from the spec's memo while every task is at its snapshot status (the common case at
    session open: most jobs are unchanged since the last session, and walking their tasks was
    most of proportion's opening)."""
    if job.status_changes:
        return _TaskSums.of(job, zeros)
    sums: _TaskSums | None = job.spec.memo.get("task_sums")
    if sums is None:
        sums = job.spec.memo["task_sums"] = _TaskSums.of(job, zeros)
    return sums


def _spec_task_sums(spec: JobSpec, zeros: Vector) -> _TaskSums:
    """:func:`_task_sums` of a job at its snapshot statuses, read from its spec without wrapping it
    (a quiescent job's spec: the same memo, the same sums as a :class:`JobInfo` of it gives)."""
    sums: _TaskSums | None = spec.memo.get("task_sums")
    if sums is None:
        tasks = [(t.status, t) for t in spec.tasks]
        count = sum(status in ALLOCATED_STATUSES for status, _ in tasks)
        sums = spec.memo["task_sums"] = _TaskSums.over(tasks, count, zeros)
    return sums


def _at_least_zero(value: float) -> float:
    """``np.maximum(value, 0.0)`` of one value: NaN stays, ``-0.0`` becomes ``0.0``."""
    return value if value > 0.0 or value != value else 0.0


@dataclass(frozen=True)
class _Terms:
    """What one job adds to its queue's four sums."""

    queue: str
    allocated: Vector
    request: tuple[Vector, ...]  # allocated, then each Pending task's request
    elastic: Vector
    inqueue: Vector | None
    #: the four sums' terms as rows (request summed, inqueue zero when none), read-only, and whether
    #: every value is a whole number: then any order of addition gives the same floats
    block: np.ndarray
    integral: bool

    @classmethod
    def of(cls, job: JobInfo, zeros: Vector, full_min_for_inqueue: bool) -> _Terms:
        return cls.made(job.queue, job.phase, job.min_available, job.spec.min_resources, _task_sums(job, zeros),
                        zeros, full_min_for_inqueue)

    @classmethod
    def made(cls, queue: str, phase: str, min_available: int, min_res: Vector | None, sums: _TaskSums,
             zeros: Vector, full_min_for_inqueue: bool) -> _Terms:
        """The terms on Python floats, each value through the vector operations' float operations
        (``np.maximum(x, 0.0)`` is :func:`_at_least_zero`); one array of the four rows at the end."""
        allocated = sums.allocated
        floor = min_res.tolist() if min_res is not None else zeros.tolist()
        # GetElasticResources: allocated above minResources (all of it without minResources).
        elastic = [_at_least_zero(a - m) for a, m in zip(allocated, floor, strict=True)]
        inqueue = None
        if min_res is not None and phase == "Inqueue":
            reserve = floor if full_min_for_inqueue else [_at_least_zero(m - a) for m, a in zip(floor, allocated, strict=True)]
            inqueue = [_at_least_zero(r - g) for r, g in zip(reserve, sums.gated, strict=True)]
        elif min_res is not None and phase == "Running" and sums.allocated_count >= min_available:
            inqueue = [_at_least_zero(_at_least_zero(m - a) - g) for m, a, g in zip(floor, allocated, sums.gated, strict=True)]
        block = np.array([allocated, sums.request_sum, elastic, inqueue if inqueue is not None else zeros.tolist()],
                         dtype=float)
        block.setflags(write=False)
        integral = sums.request_whole and all(map(float.is_integer, chain(elastic, inqueue or ())))
        return cls(queue, block[0], (block[0], *sums.pending), block[2], None if inqueue is None else block[3], block,
                   integral)


def whole_numbers(parts: list[Vector]) -> bool:
    """Whether every value of ``parts`` is a finite whole number. ``float.is_integer`` over Python
    floats (False for inf and NaN): a job's terms are a few dozen values, where building one array
    of them and reducing it cost several times more."""
    return all(map(float.is_integer, chain.from_iterable(part.tolist() for part in parts)))


def _terms(job: JobInfo | JobSpec, zeros: Vector, full_min_for_inqueue: bool) -> _Terms:
    if isinstance(job, JobInfo) and (job.status_changes or job.phase != job.spec.phase):
        return _Terms.of(job, zeros, full_min_for_inqueue)
    spec = job.spec if isinstance(job, JobInfo) else job
    key = ("queue_terms", full_min_for_inqueue)
    terms: _Terms | None = spec.memo.get(key)
    if terms is None:
        terms = spec.memo[key] = (
            _Terms.of(job, zeros, full_min_for_inqueue) if isinstance(job, JobInfo)
            else _Terms.made(spec.queue, spec.phase, spec.min_available, spec.min_resources,  # a quiescent job's spec
                             _spec_task_sums(spec, zeros), zeros, full_min_for_inqueue))
    return terms
