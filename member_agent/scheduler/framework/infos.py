"""Session-local, mutable views of tasks and jobs (Volcano's ``TaskInfo``/``JobInfo``).

The snapshot's specs stay frozen; a session wraps each in one of these and changes only
status, node and the counters below. Counters are kept incrementally so every gang
question (ready? pipelined? starving?) is O(1) per job.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from operator import attrgetter
from typing import TYPE_CHECKING, Callable

from member_agent.scheduler.framework.status import (
    READY_STATUSES,
    SCHEDULED_STATUSES,
    VALID_STATUSES,
    TaskStatus,
)

if TYPE_CHECKING:
    from member_agent.scheduler.framework.snapshot import JobSpec, TaskSpec

S = TaskStatus


class TaskInfo:
    __slots__ = ("spec", "job", "status", "node", "last_tx", "fit_error", "evicted_for", "index")

    def __init__(self, spec: TaskSpec, job: JobInfo, node: int | None, index: int) -> None:
        self.spec = spec
        self.job = job
        self.status: TaskStatus = spec.status
        self.node: int | None = node  # row in the node table
        #: Status of the last discarded transaction (explains "why pending").
        self.last_tx: TaskStatus | None = None
        self.fit_error: str = ""
        self.evicted_for: str = ""
        self.index = index  # position in its job, for stable ordering

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def key(self) -> str:
        return self.spec.key

    @property
    def request(self):  # type: ignore[no-untyped-def]
        return self.spec.request

    def __repr__(self) -> str:
        return f"Task({self.spec.key}, {self.status.label})"


class JobInfo:
    """A PodGroup with its tasks and incremental status counters."""

    #: Job-level reason it could not proceed this session (enqueue rejection, JobValid...).
    job_fit_error = ""
    #: Task status changes since the session opened (0: every task is at its snapshot status,
    #: so values derived from the spec alone still hold, e.g. ``queue_usage``'s per-job sums).
    status_changes = 0
    allocated = None  # per-job allocated vector, owned by drf
    # (Immutable defaults live on the class: a session builds a JobInfo per job, so every
    # attribute set in __init__ is paid for every job in every session.)

    def __init__(self, spec: JobSpec) -> None:
        self.spec = spec
        self.uid = spec.uid
        self.queue = spec.queue
        self.min_available = spec.min_available
        self.priority = spec.priority
        self.phase = spec.phase
        self.tasks: list[TaskInfo] = []
        self.counts: Counter[TaskStatus]
        self.role_counts: dict[str, Counter[TaskStatus]]
        # Per role, kept incrementally like valid_num/ready_num: the gang checks run for every job
        # in every session, and re-summing counters there cost ~15 % of a trace replay.
        self.role_valid: dict[str, int]  # ValidTaskNum of the role
        self.role_ready: dict[str, int]  # allocated + succeeded
        self.role_pending_best_effort: dict[str, int]
        self.pending_best_effort: int
        self.ready_num: int  # ReadyTaskNum, kept incrementally
        self.valid_num: int  # ValidTaskNum
        self.scheduled_num: int  # ScheduledTaskNum
        _EMPTY.share_with(self)
        #: The counters are a tally's own objects (read-only) until the first change.
        self._shared_counters = True
        #: The tally's memo of the role checks (valid, ready, pipelined), None for a job built by add().
        self._tally_answers: list[bool | None] | None = None
        self.task_min_total = sum(spec.min_task_member.values()) if spec.min_task_member else 0
        self.roles_with_fit_errors: set[str] = set()
        self.conditions: list[dict[str, str]] = [dict(c) for c in spec.conditions]

    def __repr__(self) -> str:
        return f"Job({self.uid})"

    @property
    def name(self) -> str:
        return self.spec.name

    @classmethod
    def at_snapshot(cls, spec: JobSpec) -> JobInfo:
        """``spec`` wrapped with every task at its snapshot status and on no node row (for values
        derived from the spec alone, outside a session)."""
        job = cls(spec)
        job.adopt([TaskInfo(t, job, None, i) for i, t in enumerate(spec.tasks)])
        return job

    # ---------------------------------------------------------------- bookkeeping
    def adopt(self, tasks: list[TaskInfo]) -> None:
        """Take ``tasks``, one per spec task in order and still at its snapshot status; the
        counters come from the spec's memo (the same numbers :meth:`add` would count)."""
        self.tasks = tasks
        tally: _Tally | None = self.spec.memo.get("tally")
        if tally is None:
            tally = self.spec.memo["tally"] = _Tally.counted(tasks)
        tally.share_with(self)
        self._tally_answers = tally.answers

    def add(self, task: TaskInfo) -> None:
        self.tasks.append(task)
        self._count(task, task.status, 1)

    def set_status(self, task: TaskInfo, status: TaskStatus) -> None:
        """Move ``task`` to ``status``: the counters change as ``_count(old, -1)`` then
        ``_count(new, +1)`` would change them, with a counter skipped when both statuses
        count in it alike (a status change per task placement made this a hot path)."""
        old = task.status
        if old == status:
            return
        self.status_changes += 1
        if self._shared_counters:
            self._unshare()
        task.status = status
        counts = self.counts
        counts[old] -= 1
        counts[status] += 1
        spec = task.spec
        name = spec.role
        # ``_move`` for one task, written out (a placement per task made the call and its loop
        # over one role a fifth of this method): the same counters changed by the same deltas.
        role = self.role_counts.get(name)
        if role is None:
            role = self.role_counts[name] = Counter()
        role[old] -= 1
        role[status] += 1
        d_ready, d_valid, d_scheduled = _DELTAS[old, status]
        if d_ready:
            self.role_ready[name] = self.role_ready.get(name, 0) + d_ready
            self.ready_num += d_ready
        if d_valid:
            self.role_valid[name] = self.role_valid.get(name, 0) + d_valid
            self.valid_num += d_valid
        if d_scheduled:
            self.scheduled_num += d_scheduled
        if spec.best_effort and (old == S.PENDING or status == S.PENDING):
            delta = 1 if status == S.PENDING else -1
            self.pending_best_effort += delta
            self.role_pending_best_effort[name] = self.role_pending_best_effort.get(name, 0) + delta

    def set_statuses(self, tasks: list[TaskInfo], status: TaskStatus) -> None:
        """:meth:`set_status` for each of ``tasks`` (this job's), the counters changed once per role
        when every task moves from one status other than Pending (a commit's Allocated -> Binding):
        the same integer sums, and counters' keys met in the same order (one role after another,
        as each role's first task comes). Any other mix goes task by task."""
        old = tasks[0].status if tasks else status
        if old == status or old == S.PENDING or status == S.PENDING or any(t.status != old for t in tasks):
            for task in tasks:
                self.set_status(task, status)
            return
        if self._shared_counters:
            self._unshare()
        per_role: dict[str, int] = {}
        for task in tasks:
            task.status = status
            name = task.spec.role
            per_role[name] = per_role.get(name, 0) + 1
        moved = len(tasks)
        self.status_changes += moved
        counts = self.counts
        counts[old] -= moved
        counts[status] += moved
        self._move(old, status, per_role.items(), moved)

    def _move(self, old: TaskStatus, status: TaskStatus, per_role: Iterable[tuple[str, int]], moved: int) -> None:
        """``moved`` tasks going from ``old`` to ``status``, ``k`` of them in each role of ``per_role``
        (in the order the roles' first tasks come): the role counters and the ready, valid and
        scheduled numbers, each skipped where both statuses count in it alike."""
        ready0, valid0, scheduled0 = _FLAGS[old]
        ready1, valid1, scheduled1 = _FLAGS[status]
        for name, k in per_role:
            role = self.role_counts.get(name)
            if role is None:
                role = self.role_counts[name] = Counter()
            role[old] -= k
            role[status] += k
            if ready0 != ready1:
                self.role_ready[name] = self.role_ready.get(name, 0) + (ready1 - ready0) * k
            if valid0 != valid1:
                self.role_valid[name] = self.role_valid.get(name, 0) + (valid1 - valid0) * k
        if ready0 != ready1:
            self.ready_num += (ready1 - ready0) * moved
        if valid0 != valid1:
            self.valid_num += (valid1 - valid0) * moved
        if scheduled0 != scheduled1:
            self.scheduled_num += (scheduled1 - scheduled0) * moved

    def _unshare(self) -> None:
        """Own copies of the counters shared with the spec's tally, before the first change."""
        self.counts = _copy(self.counts)
        self.role_counts = {role: _copy(c) for role, c in self.role_counts.items()}
        self.role_valid = dict(self.role_valid)
        self.role_ready = dict(self.role_ready)
        self.role_pending_best_effort = dict(self.role_pending_best_effort)
        self._shared_counters = False

    def _count(self, task: TaskInfo, status: TaskStatus, delta: int) -> None:
        if self._shared_counters:
            self._unshare()
        self.counts[status] += delta
        if status in READY_STATUSES:
            self.ready_num += delta
        if status in VALID_STATUSES:
            self.valid_num += delta
        if status in SCHEDULED_STATUSES:
            self.scheduled_num += delta
        name = task.spec.role
        role = self.role_counts.get(name)
        if role is None:
            role = self.role_counts[name] = Counter()
        role[status] += delta
        if status in VALID_STATUSES:
            self.role_valid[name] = self.role_valid.get(name, 0) + delta
        if status in READY_STATUSES:
            self.role_ready[name] = self.role_ready.get(name, 0) + delta
        if status == S.PENDING and task.spec.best_effort:
            self.pending_best_effort += delta
            self.role_pending_best_effort[name] = self.role_pending_best_effort.get(name, 0) + delta

    def count(self, statuses: frozenset[TaskStatus]) -> int:
        c = self.counts
        return sum(c[s] for s in statuses)

    # ---------------------------------------------------------------- gang arithmetic (volcano.md §1.4)
    @property
    def waiting_num(self) -> int:
        return self.counts[S.PIPELINED]

    def is_ready(self) -> bool:
        return self.ready_num + self.pending_best_effort >= self.min_available

    def is_pipelined(self) -> bool:
        return self.waiting_num + self.ready_num + self.pending_best_effort >= self.min_available

    def is_starving(self) -> bool:
        return self.waiting_num + self.ready_num < self.min_available

    def is_pending(self) -> bool:
        return self.phase in ("", "Pending")

    def _roles_enforced(self) -> bool:
        return self.min_available >= self.task_min_total

    def _role_check(self, which: int, check: Callable[[], bool]) -> bool:
        """``check()``, read from the spec's tally while this job still shares its counters (the
        answer is then a function of the spec alone; it is asked for every job every session)."""
        if not self._shared_counters:
            return check()
        answers = self._tally_answers
        if answers is None:
            return check()
        known = answers[which]
        if known is None:
            known = answers[which] = check()
        return known

    def check_task_valid(self) -> bool:
        return self._role_check(0, self._check_task_valid)

    def _check_task_valid(self) -> bool:
        if not self.spec.min_task_member or not self._roles_enforced():
            return True
        valid = self.role_valid
        return all(valid.get(role, 0) >= need for role, need in self.spec.min_task_member.items() if need > 0)

    def _role_ready(self, with_pipelined: bool) -> bool:
        if not self.spec.min_task_member or not self._roles_enforced():
            return True
        for role, need in self.spec.min_task_member.items():
            if need <= 0:
                continue
            # READY_STATUSES is allocated + succeeded; pending best-effort pods count as ready.
            have = self.role_ready.get(role, 0) + self.role_pending_best_effort.get(role, 0)
            if with_pipelined:
                counts = self.role_counts.get(role)
                have += counts[S.PIPELINED] if counts is not None else 0
            if have < need:
                return False
        return True

    def check_task_ready(self) -> bool:
        if not self.spec.min_task_member:  # what _role_ready answers at once (gang asks after every placement)
            return True
        return self._role_check(1, lambda: self._role_ready(False))

    def check_task_pipelined(self) -> bool:
        return self._role_check(2, lambda: self._role_ready(True))

    def allocated_in_role(self, role: str) -> int:
        return self.role_ready.get(role, 0)  # allocated + succeeded

    def need_continue_allocating(self) -> bool:
        """``NeedContinueAllocating``: keep trying siblings after a task found no node?"""
        if self.min_available == len(self.tasks):
            return False
        if self.min_available < self.task_min_total:
            fitting = sum(
                1 for t in self.tasks if t.status == S.PENDING and t.spec.role not in self.roles_with_fit_errors
            )
            return self.ready_num + fitting >= self.min_available
        for role in self.roles_with_fit_errors:
            need = self.spec.min_task_member.get(role, 0)
            if need > 0 and self.allocated_in_role(role) < need:
                return False
        return True

    def has_role_fit_error(self, task: TaskInfo) -> bool:
        """``TaskHasFitErrors``: a sibling with the same role already found no node."""
        return bool(task.spec.role) and task.spec.role in self.roles_with_fit_errors


def _copy(counter: Counter[TaskStatus]) -> Counter[TaskStatus]:
    """A copy of ``counter`` (the same items in the same order). ``Counter(c)`` runs ``__init__`` and
    ``Counter.update``'s Python code with an ABC check, several times the C copy, per job placed on;
    a Counter needs nothing of its ``__init__`` but the empty dict ``__new__`` gives."""
    out: Counter[TaskStatus] = Counter.__new__(Counter)
    dict.update(out, counter)
    return out


class _Tally:
    """A job's counters with every task at its snapshot status (kept in ``JobSpec.memo``)."""

    COUNTERS = ("counts", "role_counts", "role_valid", "role_ready", "role_pending_best_effort",
                "pending_best_effort", "ready_num", "valid_num", "scheduled_num")
    __slots__ = (*COUNTERS, "answers")
    counts: Counter[TaskStatus]
    role_counts: dict[str, Counter[TaskStatus]]
    role_valid: dict[str, int]
    role_ready: dict[str, int]
    role_pending_best_effort: dict[str, int]
    pending_best_effort: int
    ready_num: int
    valid_num: int
    scheduled_num: int
    answers: list[bool | None]

    @classmethod
    def counted(cls, tasks: list[TaskInfo]) -> _Tally:
        """The counters :meth:`JobInfo.add` of each of ``tasks`` in turn leaves, from one count (in C)
        of each distinct (role, status, best effort): the triples come in the order each first
        appears, so every counter meets its keys in the tasks' order, and gets the same sums. A
        session's first opening walked every task of every job through ``_count``."""
        counts: Counter[TaskStatus] = Counter.__new__(Counter)
        role_counts: dict[str, Counter[TaskStatus]] = {}
        role_valid: dict[str, int] = {}
        role_ready: dict[str, int] = {}
        role_pending_best_effort: dict[str, int] = {}
        ready = valid = scheduled = pending_best_effort = 0
        for (name, status, best_effort), n in Counter(map(_TRIPLE, tasks)).items():
            counts[status] += n
            is_ready, is_valid, is_scheduled = _FLAGS[status]
            ready += is_ready * n
            valid += is_valid * n
            scheduled += is_scheduled * n
            role = role_counts.get(name)
            if role is None:
                role = role_counts[name] = Counter.__new__(Counter)
            role[status] += n
            if is_valid:
                role_valid[name] = role_valid.get(name, 0) + n
            if is_ready:
                role_ready[name] = role_ready.get(name, 0) + n
            if status == S.PENDING and best_effort:
                pending_best_effort += n
                role_pending_best_effort[name] = role_pending_best_effort.get(name, 0) + n
        tally = cls()
        tally.counts, tally.role_counts, tally.role_valid, tally.role_ready = counts, role_counts, role_valid, role_ready
        tally.role_pending_best_effort, tally.pending_best_effort = role_pending_best_effort, pending_best_effort
        tally.ready_num, tally.valid_num, tally.scheduled_num = ready, valid, scheduled
        tally.answers = [None, None, None]
        return tally

    def share_with(self, job: JobInfo) -> None:
        # Shared, not copied: most jobs of a session never change, and copying their counters was
        # dearer than counting them. ``JobInfo._count`` copies them before the first change.
        job.counts = self.counts
        job.role_counts = self.role_counts
        job.role_valid = self.role_valid
        job.role_ready = self.role_ready
        job.role_pending_best_effort = self.role_pending_best_effort
        job.pending_best_effort = self.pending_best_effort
        job.ready_num = self.ready_num
        job.valid_num = self.valid_num
        job.scheduled_num = self.scheduled_num


def _empty_tally() -> _Tally:
    tally = _Tally()
    tally.counts, tally.role_counts = Counter(), {}
    tally.role_valid, tally.role_ready, tally.role_pending_best_effort = {}, {}, {}
    tally.pending_best_effort = tally.ready_num = tally.valid_num = tally.scheduled_num = 0
    tally.answers = [None, None, None]
    return tally


#: Per status: whether it counts as ready, valid and scheduled (``JobInfo.set_status``).
_FLAGS = {s: (int(s in READY_STATUSES), int(s in VALID_STATUSES), int(s in SCHEDULED_STATUSES)) for s in TaskStatus}
#: A task's (role, status, best effort): what ``JobInfo._count`` reads of it.
_TRIPLE = attrgetter("spec.role", "status", "spec.best_effort")
#: Per (old, new) status: the change to the ready, valid and scheduled numbers of one task's move.
_DELTAS = {(a, b): tuple(y - x for x, y in zip(_FLAGS[a], _FLAGS[b], strict=True)) for a in TaskStatus for b in TaskStatus}

#: The counters of a job with no task: every JobInfo starts sharing them.
_EMPTY = _empty_tally()
