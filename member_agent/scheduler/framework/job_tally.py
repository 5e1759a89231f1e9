"""A job's task counters as the snapshot left them, counted once per job spec and shared.

Every session opens every job; most jobs never change in it. :class:`Tally` counts a job's tasks
by (role, status, best effort) once (kept in ``JobSpec.memo``) and a session's :class:`JobInfo`
shares those counters until its first change, when :func:`copy_counter` copies them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from operator import attrgetter
from typing import Any

from member_agent.scheduler.framework.status import (
    READY_STATUSES,
    SCHEDULED_STATUSES,
    VALID_STATUSES,
    TaskStatus,
)

S = TaskStatus


def copy_counter(counter: Counter[TaskStatus]) -> Counter[TaskStatus]:
    """A copy of ``counter`` (the same items in the same order). ``Counter(c)`` runs ``__init__`` and
    ``Counter.update``'s Python code with an ABC check, several times the C copy, per job placed on;
    a Counter needs nothing of its ``__init__`` but the empty dict ``__new__`` gives."""
    out: Counter[TaskStatus] = Counter.__new__(Counter)
    dict.update(out, counter)
    return out


class Tally:
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
    def counted(cls, tasks: Sequence[Any]) -> Tally:
        """The counters :meth:`JobInfo.add` of each of ``tasks`` (a job's TaskInfos) in turn leaves, from one count (in C)
        of each distinct (role, status, best effort): the triples come in the order each first
        appears, so every counter meets its keys in the tasks' order, and gets the same sums. A
        session's first opening walked every task of every job through ``_count``."""
        counts: Counter[TaskStatus] = Counter.__new__(Counter)
        role_counts: dict[str, Counter[TaskStatus]] = {}
        role_valid: dict[str, int] = {}
        role_ready: dict[str, int] = {}
        role_pending_best_effort: dict[str, int] = {}
        ready = valid = scheduled = pending_best_effort = 0
        for (name, status, best_effort), n in Counter(map(TASK_TRIPLE, tasks)).items():
            counts[status] += n
            is_ready, is_valid, is_scheduled = STATUS_FLAGS[status]
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


def empty_tally() -> Tally:
    tally = Tally()
    tally.counts, tally.role_counts = Counter(), {}
    tally.role_valid, tally.role_ready, tally.role_pending_best_effort = {}, {}, {}
    tally.pending_best_effort = tally.ready_num = tally.valid_num = tally.scheduled_num = 0
    tally.answers = [None, None, None]
    return tally


#: Per status: whether it counts as ready, valid and scheduled (``JobInfo.set_status``).
STATUS_FLAGS = {s: (int(s in READY_STATUSES), int(s in VALID_STATUSES), int(s in SCHEDULED_STATUSES)) for s in TaskStatus}
#: A task's (role, status, best effort): what ``JobInfo._count`` reads of it.
TASK_TRIPLE = attrgetter("spec.role", "status", "spec.best_effort")
#: Per (old, new) status: the change to the ready, valid and scheduled numbers of one task's move.
STATUS_DELTAS = {(a, b): tuple(y - x for x, y in zip(STATUS_FLAGS[a], STATUS_FLAGS[b], strict=True)) for a in TaskStatus for b in TaskStatus}

#: The counters of a job with no task: every JobInfo starts sharing them.
EMPTY_TALLY = empty_tally()
