"""Task statuses, votes and fit-status codes, with Volcano's values and sets."""

from __future__ import annotations

from enum import IntEnum


class TaskStatus(IntEnum):
    """A task's status; the bit values are Volcano's (``api.TaskStatus``)."""

    PENDING = 1
    ALLOCATED = 2
    PIPELINED = 4
    BINDING = 8
    BOUND = 16
    RUNNING = 32
    RELEASING = 64
    SUCCEEDED = 128
    FAILED = 256
    UNKNOWN = 512

    __hash__ = int.__hash__  # statuses key hot counters; Enum's Python-level hash is slow

    @property
    def label(self) -> str:
        return self.name.capitalize()


S = TaskStatus
ALLOCATED_STATUSES = frozenset({S.ALLOCATED, S.BINDING, S.BOUND, S.RUNNING})
PREEMPTABLE_STATUSES = frozenset({S.BOUND, S.RUNNING})
COMPLETED_STATUSES = frozenset({S.SUCCEEDED, S.FAILED})
SCHEDULED_STATUSES = frozenset({S.RUNNING, S.BOUND, S.FAILED, S.SUCCEEDED})
#: Statuses counted by ``ReadyTaskNum``.
READY_STATUSES = frozenset({S.BOUND, S.BINDING, S.RUNNING, S.ALLOCATED, S.SUCCEEDED})
#: Statuses counted by ``ValidTaskNum``.
VALID_STATUSES = ALLOCATED_STATUSES | {S.SUCCEEDED, S.PIPELINED, S.PENDING}


class Vote(IntEnum):
    """A plugin's answer on a tier-voted extension point (``plugins/util``)."""

    REJECT = -1
    ABSTAIN = 0
    PERMIT = 1


class Code(IntEnum):
    """Outcome class of one predicate on one node (the Kubernetes framework's codes).

    ``UNSCHEDULABLE`` may be fixed by evicting pods (preempt/reclaim keep the node);
    ``UNRESOLVABLE`` cannot (preemption skips the node).
    """

    SUCCESS = 0
    UNSCHEDULABLE = 1
    UNRESOLVABLE = 2
    ERROR = 3
