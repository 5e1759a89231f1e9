"""Session-local, mutable views of tasks and jobs (Volcano's ``TaskInfo``/``JobInfo``).

The snapshot's specs stay frozen; a session wraps each in one of these and changes only
status, node and the counters below. Counters are kept incrementally so every gang
question (ready? pipelined? starving?) is O(1) per job.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import TYPE_CHECKING, Callable

from member_agent.scheduler.framework.job_tally import (
    EMPTY_TALLY,
    STATUS_DELTAS,
    Tally,
    copy_counter,
)
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
        self._share(EMPTY_TALLY)
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
        tally: Tally | None = self.spec.memo.get("tally")
        if tally is None:
            tally = self.spec.memo["tally"] = Tally.counted(tasks)
        self._share(tally)
        self._tally_answers = tally.answers

    def _share(self, tally: Tally) -> None:
        # Shared, not copied: most jobs of a session never change, and copying their counters was
        # dearer than counting them. ``JobInfo._unshare`` copies them before the first change.
        self.counts = tally.counts
        self.role_counts = tally.role_counts
        self.role_valid = tally.role_valid
        self.role_ready = tally.role_ready
        self.role_pending_best_effort = tally.role_pending_best_effort
        self.pending_best_effort = tally.pending_best_effort
        self.ready_num = tally.ready_num
        self.valid_num = tally.valid_num
        self.scheduled_num = tally.scheduled_num

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
        d_ready, d_valid, d_scheduled = STATUS_DELTAS[old, status]
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
        d_ready, d_valid, d_scheduled = STATUS_DELTAS[old, status]
        for name, k in per_role:
            role = self.role_counts.get(name)
            if role is None:
                role = self.role_counts[name] = Counter()
            role[old] -= k
            role[status] += k
            if d_ready:
                self.role_ready[name] = self.role_ready.get(name, 0) + d_ready * k
            if d_valid:
                self.role_valid[name] = self.role_valid.get(name, 0) + d_valid * k
        if d_ready:
            self.ready_num += d_ready * moved
        if d_valid:
            self.valid_num += d_valid * moved
        if d_scheduled:
            self.scheduled_num += d_scheduled * moved

    def _unshare(self) -> None:
        """Own copies of the counters shared with the spec's tally, before the first change."""
        self.counts = copy_counter(self.counts)
        self.role_counts = {role: copy_counter(c) for role, c in self.role_counts.items()}
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
