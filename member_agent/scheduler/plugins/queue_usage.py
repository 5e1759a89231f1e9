"""Per-queue usage shared by proportion, capacity and overcommit (volcano.md §6.6, §6.13).

* ``allocated`` — Σ request of tasks in an allocated status;
* ``request``   — allocated + Σ request of Pending tasks;
* ``inqueue``   — what admitted (Inqueue, or Running-but-still-growing) PodGroups reserve
  beyond what they already hold (``GetInqueueResource``);
* ``elastic``   — what jobs hold above their ``minResources``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from member_agent.scheduler.framework.dims import Vector
from member_agent.scheduler.framework.infos import JobInfo
from member_agent.scheduler.framework.session import Session
from member_agent.scheduler.framework.snapshot import JobSpec
from member_agent.scheduler.framework.status import ALLOCATED_STATUSES, TaskStatus
from member_agent.scheduler.plugins.queue_terms import _Terms, _terms


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
    deducted: Vector = np.maximum(amount - gated_request(job, np.zeros_like(amount)), 0.0)
    return deducted


def inqueue_resource(job: JobInfo, allocated: Vector) -> Vector:
    """``GetInqueueResource``: per dim of minResources, the part not yet allocated."""
    assert job.spec.min_resources is not None
    left: Vector = np.maximum(job.spec.min_resources - allocated, 0.0)
    return left


def _all_jobs(ssn: Session, full_min_for_inqueue: bool = False) -> list[JobInfo | JobSpec | _Terms]:
    """Every job in snapshot order: the session's, and the quiescent ones it left out (whose
    terms come from their spec's memo, read here directly when already known)."""
    if not ssn.left_out:
        return list(ssn.jobs.values())
    key = ("queue_terms", full_min_for_inqueue)
    jobs = ssn.jobs
    return [jobs.get(spec.uid) or spec.memo.get(key) or spec for spec in ssn.snapshot.jobs]


def _in_order(zeros: Vector, terms: list[Vector]) -> Vector:
    """``zeros`` plus each term in turn, as ``+=`` in a loop adds them: for a few terms that
    loop, for more one ``cumsum`` (sequential, so the floats are exactly the loop's)."""
    if len(terms) <= _FEW_TERMS:
        total = zeros.copy()
        for term in terms:
            total += term
        return total
    summed: Vector = np.cumsum(np.array([zeros, *terms]), axis=0)[-1]
    return summed


_FEW_TERMS = 4  # up to here a numpy add per term costs less than building the array for cumsum


#: From this many jobs the whole-number path is taken (below, the loop is cheaper).
SCATTER_FROM = 8
#: Whole numbers below this add exactly in any order (float64's 53-bit significand).
_EXACT = float(2 ** 53)


def _past_exact(absolute: np.ndarray) -> bool:
    """``absolute.max(initial=0.0) >= _EXACT`` over Python floats (a few dozen values, where numpy's
    reduction cost several times more) for the carried sums' absolute values, which are finite: they
    add only terms whose every value is a whole number (``float.is_integer`` is False for inf and NaN),
    so ``max`` picks the same value in any order."""
    return max(absolute.ravel().tolist(), default=0.0) >= _EXACT


def _block_sums(all_terms: list[_Terms]) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Per queue (first appearance, as the loop's dict) the sum of the terms' blocks, in one
    scatter-add, and the sum of their absolute values."""
    blocks = np.array([t.block for t in all_terms])
    queues = list(dict.fromkeys(t.queue for t in all_terms))
    slot = {queue: i for i, queue in enumerate(queues)}
    totals = np.zeros((len(queues), *blocks.shape[1:]))
    np.add.at(totals, np.fromiter((slot[t.queue] for t in all_terms), dtype=np.intp, count=len(all_terms)),
              blocks)
    return queues, totals, np.abs(blocks).sum(axis=0)


def _usage(queue_blocks: dict[str, np.ndarray]) -> dict[str, Usage]:
    return {queue: Usage(allocated=block[0], request=block[1], inqueue=block[3], elastic=block[2])
            for queue, block in queue_blocks.items()}


def _whole_number_usage(all_terms: list[_Terms]) -> dict[str, Usage] | None:
    """The per-queue sums in one scatter-add, when every term is a whole number and no partial
    sum can leave the exact range: then they equal the sequential sums bit for bit (requests are
    integers in base units, millicores and bytes, unless a pod asks a fraction of a GPU)."""
    if not all(t.integral for t in all_terms):
        return None
    queues, totals, absolute = _block_sums(all_terms)
    if absolute.max(initial=0.0) >= _EXACT:
        return None
    return _usage(dict(zip(queues, totals, strict=True)))


class _CarriedTerms:
    """The terms of the jobs sessions leave out, summed per queue and kept by the ledger as such
    jobs come and go (framework/left_out.py). Whole numbers only: their sums are exact in any
    order, so adding and taking away as jobs change gives the loop's floats."""

    def __init__(self, zeros: Vector) -> None:
        self.zeros = zeros
        self.sums: dict[str, np.ndarray] = {}  # queue -> the four sums as rows
        self.members: dict[str, int] = {}
        self.absolute = np.zeros((4, len(zeros)))
        #: the four sums over every queue: what overcommit's total inqueue reads (whole numbers within
        #: the exact range add up to the same floats in any order, so also to the queues' sums added)
        self.grand = np.zeros((4, len(zeros)))
        self.fractional = 0  # jobs left out with a term that is not a whole number

    def add(self, spec: JobSpec, _found: object) -> None:
        terms = _terms(spec, self.zeros, False)
        if not terms.integral:
            self.fractional += 1
            return
        queue = terms.queue
        if queue in self.sums:
            self.sums[queue] += terms.block
            self.members[queue] += 1
        else:
            self.sums[queue] = terms.block.copy()
            self.members[queue] = 1
        self.absolute += np.abs(terms.block)
        self.grand += terms.block

    def remove(self, spec: JobSpec, _found: object) -> None:
        terms = _terms(spec, self.zeros, False)
        if not terms.integral:
            self.fractional -= 1
            return
        queue = terms.queue
        self.members[queue] -= 1
        if self.members[queue]:
            self.sums[queue] -= terms.block
        else:
            del self.sums[queue], self.members[queue]
        self.absolute -= np.abs(terms.block)
        self.grand -= terms.block


def _carried_usage(ssn: Session, zeros: Vector, full_min_for_inqueue: bool) -> dict[str, Usage] | None:
    """:func:`_carried_totals` as each queue's :class:`Usage`, arrays of the caller's own."""
    totals = _carried_totals(ssn, zeros, full_min_for_inqueue)
    if totals is None:
        return None
    return _usage({queue: totals[queue].copy() for queue in ssn.job_queues()})


def _carried_totals(ssn: Session, zeros: Vector, full_min_for_inqueue: bool) -> dict[str, np.ndarray] | None:
    """Per queue the four sums as rows (read-only to the caller), the left-out jobs' part read
    from the ledger and the session's jobs added: the whole-number path's answer, in work per
    session's job rather than per snapshot job.

    Computed once per session opening (``Session.open_memo``) and shared: overcommit asks with
    ``full_min_for_inqueue`` and proportion without. A left-out job is Running, whose terms do not
    depend on it (only an Inqueue job reserves its full minimum), so one tally serves both, and
    the session's Inqueue jobs with a minimum are the only terms the two sums differ in."""
    base = _base(ssn, zeros)
    if base is None:
        return None
    totals, absolute, _grand = base
    if full_min_for_inqueue:
        moves = _full_minimum_moves(ssn, zeros, absolute)
        if moves is None:
            return None
        totals = dict(totals)
        for queue, move in moves:
            # whole numbers within the exact range: taking out a summand and adding another is exact
            totals[queue] = totals[queue] + move
    return totals


def _full_minimum_moves(ssn: Session, zeros: Vector, absolute: np.ndarray) -> list[tuple[str, np.ndarray]] | None:
    """What ``full_min_for_inqueue`` adds to each session's Inqueue job with a minimum, in job order, as
    (queue, full terms minus partial terms): the only terms the sums with and without it differ in (a
    left-out job is Running). None when a full term is not a whole number or a sum may round
    (``absolute``, the terms' absolute values so far, with the full terms' added)."""
    moves: list[tuple[str, np.ndarray]] = []
    for job in ssn.jobs.values():
        if job.phase != "Inqueue" or job.spec.min_resources is None:
            continue  # the same terms under both
        part, full = _terms(job, zeros, False), _terms(job, zeros, True)
        if not full.integral:
            return None
        moves.append((job.queue, full.block - part.block))
        absolute = absolute + np.abs(full.block)
    if _past_exact(absolute):
        return None
    return moves


#: ``Session.open_memo`` key of :func:`_carried_base`'s answer.
_BASE = "queue_usage.carried"


def _carried_base(ssn: Session, zeros: Vector) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray] | None:
    """Per queue the four sums (without ``full_min_for_inqueue``), the sum of the terms' absolute
    values and the four sums over every queue, or None (the walk sums) when some term is not a whole
    number or a sum may round."""
    left = ssn.left_out
    assert left.ledger is not None
    carried = left.ledger.tally("queue_terms", lambda: _CarriedTerms(zeros))
    assert isinstance(carried, _CarriedTerms)
    if carried.fractional:  # counted exactly as such jobs come and go: the walk sums this session
        return None
    if _past_exact(carried.absolute):
        left.ledger.forget("queue_terms")  # its sums may have rounded: refilled, exact again, on next use
        return None
    # The tally's own arrays where no session job adds to a queue (read-only to every caller, and
    # the tally changes only when the ledger is next updated, after this opening): a copy only
    # for the few queues a session's jobs add to, not one per queue per session.
    totals = dict(carried.sums)
    absolute, grand = carried.absolute, carried.grand
    added: set[str] = set()
    for job in ssn.jobs.values():  # a few jobs a session: added one by one (whole numbers: any order is exact)
        terms = _terms(job, zeros, False)
        if not terms.integral:
            return None
        queue = terms.queue
        kept = totals.get(queue)
        if kept is None:
            totals[queue] = terms.block.copy()
        elif queue in added:
            kept += terms.block
        else:
            totals[queue] = kept + terms.block
        added.add(queue)
        absolute = absolute + np.abs(terms.block)
        grand = grand + terms.block
    if _past_exact(absolute):
        return None
    return totals, absolute, grand


def _base(ssn: Session, zeros: Vector,
          memo: dict[str, Any] | None = None) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray] | None:
    """:func:`_carried_base`'s answer, once per session opening (``Session.open_memo``, or the
    opening's memo a caller kept past ``finish_open`` while the state is still the opening's)."""
    if memo is None:
        memo = ssn.open_memo
    if _BASE not in memo:
        memo[_BASE] = _carried_base(ssn, zeros)
    base: tuple[dict[str, np.ndarray], np.ndarray, np.ndarray] | None = memo[_BASE]
    return base


def _carried_inqueue(ssn: Session, zeros: Vector, full_min_for_inqueue: bool,
                     memo: dict[str, Any] | None = None) -> Vector | None:
    """The ``inqueue`` of every queue added up, from the sums over every queue (an array of the
    caller's own), or None where :func:`_carried_totals` is None. Every term a whole number and
    every partial sum within the exact range (the same checks as :func:`_carried_totals`): the
    queues' sums added in their order are these exact sums, with no per-queue copy or ``cumsum``."""
    base = _base(ssn, zeros, memo)
    if base is None:
        return None
    _totals, absolute, grand = base
    inqueue: Vector = grand[3].copy()
    if full_min_for_inqueue:
        moves = _full_minimum_moves(ssn, zeros, absolute)
        if moves is None:
            return None
        for _queue, move in moves:
            inqueue += move[3]  # whole numbers within the exact range: exact
    return inqueue


def queue_usage(ssn: Session, *, full_min_for_inqueue: bool = False) -> dict[str, Usage]:
    """Usage of every queue that has at least one job in the session."""
    zeros = ssn.dims.zeros()
    if ssn.left_out and not ssn.left_out.clash:
        carried = _carried_usage(ssn, zeros, full_min_for_inqueue)
        if carried is not None:
            return carried
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


def queue_sums(ssn: Session) -> dict[str, np.ndarray]:
    """:func:`queue_usage`'s values as each queue's four rows (allocated, request, elastic, inqueue),
    read-only to the caller (some are the ledger's own arrays): without a :class:`Usage` and a copy
    per queue when the carried sums serve (proportion copies them all at once)."""
    zeros = ssn.dims.zeros()
    if ssn.left_out and not ssn.left_out.clash:
        totals = _carried_totals(ssn, zeros, False)
        if totals is not None:
            return {queue: totals[queue] for queue in ssn.job_queues()}
    return {queue: np.array([use.allocated, use.request, use.elastic, use.inqueue])
            for queue, use in queue_usage(ssn).items()}


def total_inqueue(ssn: Session, *, full_min_for_inqueue: bool = False, memo: dict[str, Any] | None = None) -> Vector:
    """The ``inqueue`` of every queue with a job, added in queue order (overcommit's reading),
    without building each queue's :class:`Usage` when the carried sums serve. ``memo``: the
    opening's ``Session.open_memo``, kept by a caller that asks after the opening while the
    session's state is still the opening's."""
    zeros = ssn.dims.zeros()
    if ssn.left_out and not ssn.left_out.clash:
        carried = _carried_inqueue(ssn, zeros, full_min_for_inqueue, memo)
        if carried is not None:
            return carried
    total = zeros.copy()
    for usage in queue_usage(ssn, full_min_for_inqueue=full_min_for_inqueue).values():
        total += usage.inqueue
    return total
