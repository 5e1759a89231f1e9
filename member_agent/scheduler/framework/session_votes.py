"""A session's orders and votes: how the callbacks plugins registered on each extension point
combine (the rules of :mod:`tiers`), as methods of :class:`Session` (its base class here).

The votes asked per task or per comparison (job and queue order, JobReady, Allocatable,
PrePredicate) read a flat tuple of every tier's callbacks in order, kept in ``_flat_fns`` until
the next registration (``Session.add`` clears it): the tier rules over it are an AND or the
first non-zero answer in the same order, and reading the point's table and walking its tiers
cost as much as the vote.
"""

from __future__ import annotations

from functools import cmp_to_key
from typing import TYPE_CHECKING, Any, Callable, Iterable

from member_agent.scheduler.framework import tiers as votes
from member_agent.scheduler.framework.points import Point

if TYPE_CHECKING:
    from member_agent.scheduler.framework.infos import JobInfo, TaskInfo
    from member_agent.scheduler.framework.snapshot import QueueSpec

_JOB_ORDER, _QUEUE_ORDER, _JOB_READY, _ALLOCATABLE = Point.JOB_ORDER, Point.QUEUE_ORDER, Point.JOB_READY, Point.ALLOCATABLE
_PRE_PREDICATE = Point.PRE_PREDICATE


class SessionVotes:
    """The order and vote methods of :class:`Session` (which sets these three attributes)."""

    callbacks: dict[Point, list[list[tuple[str, Callable[..., Any]]]]]
    queues: dict[str, QueueSpec]
    #: Point -> its callbacks of every tier in order (``_flat``), for the votes asked per task or per
    #: comparison.
    _flat_fns: dict[Point, tuple[Callable[..., Any], ...]]

    # ------------------------------------------------------------------ ordering
    def job_order(self, left: JobInfo, right: JobInfo) -> int:
        # ``votes.first_nonzero`` over the flat callbacks: the first non-zero answer, in tier order
        fns = self._flat_fns.get(_JOB_ORDER)  # the kept tuple without a call; built once
        for fn in fns if fns is not None else self._flat(_JOB_ORDER):
            result = fn(left, right)
            if result != 0:
                return int(result)
        if left.spec.creation != right.spec.creation:
            return -1 if left.spec.creation < right.spec.creation else 1
        return -1 if left.uid < right.uid else (1 if left.uid > right.uid else 0)

    def queue_order(self, left: str, right: str) -> int:
        fns = self._flat_fns.get(_QUEUE_ORDER)
        for fn in fns if fns is not None else self._flat(_QUEUE_ORDER):  # as job_order
            result = fn(left, right)
            if result != 0:
                return int(result)
        lq, rq = self.queues[left], self.queues[right]
        if lq.creation != rq.creation:
            return -1 if lq.creation < rq.creation else 1
        return -1 if left < right else (1 if left > right else 0)

    def task_order(self, left: TaskInfo, right: TaskInfo) -> int:
        result = votes.first_nonzero(self.callbacks[Point.TASK_ORDER], left, right)
        if result:
            return result
        return compare_task(left, right)

    def sorted_tasks(self, tasks: Iterable[TaskInfo]) -> list[TaskInfo]:
        """Tasks in TaskOrder. When every task-order callback also offers an equivalent
        ``sort_key`` and every pod name carries an index, sort by keys (same order, fewer
        Python comparisons); otherwise by the comparator."""
        items = list(tasks)
        fns = [fn for tier in self.callbacks[Point.TASK_ORDER] for _name, fn in tier]
        keys: list[Callable[[TaskInfo], Any]] = [k for fn in fns if (k := getattr(fn, "sort_key", None)) is not None]
        specs = [t.spec for t in items]
        indices = [_name_index(spec.name) for spec in specs]
        if len(keys) == len(fns) and None not in indices:
            # Each task's (callback keys, name index, creation, uid, position), built a column at a
            # time (a generator per task for its key tuple cost more than the sort): the same tuples.
            n = len(items)
            key_tuples = list(zip(*[list(map(k, items)) for k in keys], strict=True)) if keys else [()] * n
            decorated = list(zip(key_tuples, indices, [spec.creation for spec in specs], [spec.uid for spec in specs],
                                 range(n), strict=True))
            decorated.sort()
            return [items[d[-1]] for d in decorated]
        return sorted(items, key=cmp_to_key(self.task_order))

    # ------------------------------------------------------------------ job and queue votes
    def job_valid(self, job: JobInfo) -> str:
        for tier in self.callbacks[Point.JOB_VALID]:
            for _name, fn in tier:
                reason = fn(job)
                if reason:
                    return str(reason)
        return ""

    def job_ready(self, job: JobInfo) -> bool:
        # ``votes.all_true`` over the tiers: an AND of the flat callbacks in order (asked per placement)
        fns = self._flat_fns.get(_JOB_READY)
        for fn in fns if fns is not None else self._flat(_JOB_READY):  # noqa: SIM110 (``all`` over a generator: a frame per call)
            if not fn(job):
                return False
        return True

    def job_pipelined(self, job: JobInfo) -> bool:
        return votes.tier_vote(self.callbacks[Point.JOB_PIPELINED], job)

    def job_enqueueable(self, job: JobInfo) -> tuple[bool, str]:
        return votes.tier_vote_reasons(self.callbacks[Point.JOB_ENQUEUEABLE], job)

    def job_enqueued(self, job: JobInfo) -> None:
        for tier in self.callbacks[Point.JOB_ENQUEUED]:
            for _name, fn in tier:
                fn(job)

    def job_starving(self, job: JobInfo) -> bool:
        return votes.starving(self.callbacks[Point.JOB_STARVING], job)

    def overused(self, queue: str) -> bool:
        return votes.any_true(self.callbacks[Point.OVERUSED], queue)

    def allocatable(self, queue: str, task: TaskInfo) -> bool:
        fns = self._flat_fns.get(_ALLOCATABLE)
        for fn in fns if fns is not None else self._flat(_ALLOCATABLE):  # noqa: SIM110 (as job_ready)
            if not fn(queue, task):
                return False
        return True

    def _flat(self, point: Point) -> tuple[Callable[..., Any], ...]:
        """Every tier's callbacks on ``point`` in order, kept until the next registration."""
        fns = self._flat_fns.get(point)
        if fns is None:
            fns = self._flat_fns[point] = tuple(fn for tier in self.callbacks[point] for _name, fn in tier)
        return fns

    def preemptive(self, queue: str, tasks: list[TaskInfo]) -> bool:
        return votes.all_true(self.callbacks[Point.PREEMPTIVE], queue, tasks)

    def preemptable(self, preemptor: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo] | None:
        return votes.tiered_victims(self.callbacks[Point.PREEMPTABLE], _uid, preemptor, candidates)

    def reclaimable(self, reclaimer: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo] | None:
        return votes.tiered_victims(self.callbacks[Point.RECLAIMABLE], _uid, reclaimer, candidates)

    def victim_queue_order(self, left: str, right: str, preemptor_queue: str) -> int:
        result = votes.first_nonzero(self.callbacks[Point.VICTIM_QUEUE_ORDER], left, right, preemptor_queue)
        return result if result else -self.queue_order(left, right)

    def pre_predicate(self, task: TaskInfo) -> str:
        fns = self._flat_fns.get(_PRE_PREDICATE)
        for fn in fns if fns is not None else self._flat(_PRE_PREDICATE):  # asked per task: the flat callbacks, in tier order
            error = fn(task)
            if error:
                return str(error)
        return ""


def _uid(task: TaskInfo) -> str:
    return task.spec.uid


def _name_index(name: str) -> int | None:
    parts = name.split("-")
    if len(parts) < 3:
        return None
    try:
        return int(parts[-1])
    except ValueError:
        return None


def compare_task(left: TaskInfo, right: TaskInfo) -> int:
    """Volcano's fallback task order: pod index, then creation time, then UID."""
    li, ri = _name_index(left.spec.name), _name_index(right.spec.name)
    if li is not None and ri is not None and li != ri:
        return -1 if li < ri else 1
    if left.spec.creation != right.spec.creation:
        return -1 if left.spec.creation < right.spec.creation else 1
    lu, ru = left.spec.uid, right.spec.uid
    return -1 if lu < ru else (1 if lu > ru else 0)
