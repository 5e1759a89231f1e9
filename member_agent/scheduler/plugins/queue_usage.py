"""Per-queue usage shared by proportion, capacity and overcommit (volcano.md §6.6, §6.13).

* ``allocated`` — Σ request of tasks in an allocated status;
* ``request``   — allocated + Σ request of Pending tasks;
* ``inqueue``   — what admitted (Inqueue, or Running-but-still-growing) PodGroups reserve
  beyond what they already hold (``GetInqueueResource``);
* ``elastic``   — what jobs hold above their ``minResources``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from member_agent.scheduler.framework.dims import Vector
from member_agent.scheduler.framework.infos import JobInfo
from member_agent.scheduler.framework.session import Session
from member_agent.scheduler.framework.snapshot import JobSpec
from member_agent.scheduler.framework.status import ALLOCATED_STATUSES, TaskStatus


@dataclass
class Usage:
    allocated: Vector
    request: Vector
    inqueue: Vector
    elastic: Vector


def job_allocated(job: JobInfo, zeros: Vector) -> Vector:
    total = zeros.copy()
    for t in job.tasks:
        if t.status in ALLOCATED_STATUSES:
            total += t.spec.request
    return total


def gated_request(job: JobInfo, zeros: Vector) -> Vector:
    total = zeros.copy()
    for t in job.tasks:
        if t.spec.gated and t.status == TaskStatus.PENDING:
            total += t.spec.request
    return total


def deduct_gated(job: JobInfo, amount: Vector) -> Vector:
    """``DeductSchGatedResources``: what gated pods would need is not reserved."""
    return np.maximum(amount - gated_request(job, np.zeros_like(amount)), 0.0)


def inqueue_resource(job: JobInfo, allocated: Vector) -> Vector:
    """``GetInqueueResource``: per dim of minResources, the part not yet allocated."""
    assert job.spec.min_resources is not None
    return np.maximum(job.spec.min_resources - allocated, 0.0)


def allocated_count(job: JobInfo) -> int:
    return job.count(ALLOCATED_STATUSES)


@dataclass(frozen=True)
class _TaskSums:
    """A job's task sums at some statuses: the same additions, in the same order, as a walk."""

    allocated: Vector
    pending: tuple[Vector, ...]  # requests of Pending tasks, added one by one as a walk adds them
    allocated_count: int
    gated: Vector

    @classmethod
    def of(cls, job: JobInfo, zeros: Vector) -> _TaskSums:
        pending = tuple(t.spec.request for t in job.tasks if t.status == TaskStatus.PENDING)
        return cls(job_allocated(job, zeros), pending, allocated_count(job), gated_request(job, zeros))


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


@dataclass(frozen=True)
class _Terms:
    """What one job adds to its queue's four sums."""

    queue: str
    allocated: Vector
    request: tuple[Vector, ...]  # allocated, then each Pending task's request
    elastic: Vector
    inqueue: Vector | None
    #: the four sums' terms as rows (request summed, inqueue zero when none), and whether every
    #: value is a whole number: then any order of addition gives the same floats
    block: np.ndarray
    integral: bool

    @classmethod
    def of(cls, job: JobInfo, zeros: Vector, full_min_for_inqueue: bool) -> _Terms:
        sums = _task_sums(job, zeros)
        allocated = sums.allocated
        min_res = job.spec.min_resources
        # GetElasticResources: allocated above minResources (all of it without minResources).
        elastic = np.maximum(allocated - (min_res if min_res is not None else zeros), 0.0)
        inqueue = None
        if min_res is not None and job.phase == "Inqueue":
            reserve = min_res if full_min_for_inqueue else inqueue_resource(job, allocated)
            inqueue = np.maximum(reserve - sums.gated, 0.0)
        elif min_res is not None and job.phase == "Running" and sums.allocated_count >= job.min_available:
            inqueue = np.maximum(inqueue_resource(job, allocated) - sums.gated, 0.0)
        request = (allocated, *sums.pending)
        block = np.array([allocated, _in_order(zeros, list(request)), elastic,
                          inqueue if inqueue is not None else zeros])
        parts = np.array([*request, elastic, *(() if inqueue is None else (inqueue,))])
        integral = bool(np.isfinite(parts).all() and (np.floor(parts) == parts).all())
        return cls(job.queue, allocated, request, elastic, inqueue, block, integral)


def _terms(job: JobInfo | JobSpec, zeros: Vector, full_min_for_inqueue: bool) -> _Terms:
    if isinstance(job, JobInfo) and (job.status_changes or job.phase != job.spec.phase):
        return _Terms.of(job, zeros, full_min_for_inqueue)
    spec = job.spec if isinstance(job, JobInfo) else job
    key = ("queue_terms", full_min_for_inqueue)
    terms: _Terms | None = spec.memo.get(key)
    if terms is None:
        info = job if isinstance(job, JobInfo) else JobInfo.at_snapshot(spec)  # a quiescent job's spec
        terms = spec.memo[key] = _Terms.of(info, zeros, full_min_for_inqueue)
    return terms


def _all_jobs(ssn: Session, full_min_for_inqueue: bool = False) -> list[JobInfo | JobSpec | _Terms]:
    """Every job in snapshot order: the session's, and the quiescent ones it left out (whose
    terms come from their spec's memo, read here directly when already known)."""
    if not ssn.quiescent:
        return list(ssn.jobs.values())
    key = ("queue_terms", full_min_for_inqueue)
    jobs = ssn.jobs
    return [jobs.get(spec.uid) or spec.memo.get(key) or spec for spec in ssn.snapshot.jobs]


def _in_order(zeros: Vector, terms: list[Vector]) -> Vector:
    """``zeros`` plus each term in turn, as ``+=`` in a loop adds them (``cumsum`` is sequential,
    so the floats are exactly the loop's), in one numpy call instead of one per term."""
    if not terms:
        return zeros.copy()
    total: Vector = np.cumsum(np.array([zeros, *terms]), axis=0)[-1]
    return total


#: From this many jobs the whole-number path is taken (below, the loop is cheaper).
SCATTER_FROM = 8
#: Whole numbers below this add exactly in any order (float64's 53-bit significand).
_EXACT = float(2 ** 53)


def _whole_number_usage(all_terms: list[_Terms]) -> dict[str, Usage] | None:
    """The per-queue sums in one scatter-add, when every term is a whole number and no partial
    sum can leave the exact range: then they equal the sequential sums bit for bit (requests are
    integers in base units, millicores and bytes, unless a pod asks a fraction of a GPU)."""
    if not all(t.integral for t in all_terms):
        return None
    blocks = np.array([t.block for t in all_terms])
    if np.abs(blocks).sum(axis=0).max(initial=0.0) >= _EXACT:
        return None
    queues = list(dict.fromkeys(t.queue for t in all_terms))  # first appearance, as the loop's dict
    slot = {queue: i for i, queue in enumerate(queues)}
    totals = np.zeros((len(queues), *blocks.shape[1:]))
    np.add.at(totals, np.fromiter((slot[t.queue] for t in all_terms), dtype=np.intp, count=len(all_terms)),
              blocks)
    return {queue: Usage(allocated=totals[i, 0], request=totals[i, 1], inqueue=totals[i, 3],
                         elastic=totals[i, 2]) for i, queue in enumerate(queues)}


def queue_usage(ssn: Session, *, full_min_for_inqueue: bool = False) -> dict[str, Usage]:
    """Usage of every queue that has at least one job in the session."""
    zeros = ssn.dims.zeros()
    all_terms = [job if isinstance(job, _Terms) else _terms(job, zeros, full_min_for_inqueue)
                 for job in _all_jobs(ssn, full_min_for_inqueue)]
    fast = _whole_number_usage(all_terms) if len(all_terms) > SCATTER_FROM else None
    if fast is not None:
        return fast
    by_queue: dict[str, tuple[list[Vector], list[Vector], list[Vector], list[Vector]]] = {}
    for terms in all_terms:
        lists = by_queue.get(terms.queue)
        if lists is None:
            lists = by_queue[terms.queue] = ([], [], [], [])
        lists[0].append(terms.allocated)
        lists[1].extend(terms.request)
        lists[2].append(terms.elastic)
        if terms.inqueue is not None:
            lists[3].append(terms.inqueue)
    return {queue: Usage(allocated=_in_order(zeros, allocated), request=_in_order(zeros, request),
                         inqueue=_in_order(zeros, inqueue), elastic=_in_order(zeros, elastic))
            for queue, (allocated, request, elastic, inqueue) in by_queue.items()}
