"""The extension points plugins register callbacks on (:class:`Point`).

Below the session (which keeps one callback table per point) and the plugin interface
(:mod:`member_agent.scheduler.framework.interface`), so both can use it without importing
each other.
"""

from __future__ import annotations

from enum import Enum


class Point(Enum):
    """Extension points: value = the plugin switch that enables it (None: always on).

    Signatures (``t`` a TaskInfo, ``j`` a JobInfo, ``q`` a queue name, ``rows`` an int
    array of node rows):

    * ``JOB_ORDER(j1, j2) -> int``, ``QUEUE_ORDER(q1, q2) -> int``, ``TASK_ORDER(t1, t2) -> int``
      (negative: the left one goes first)
    * ``PRE_PREDICATE(t) -> str`` (non-empty: error for every node)
    * ``PREDICATE(t, rows) -> int32 array``: reason code per row, 0 = fits. Must depend only
      on (task shape, node row): the session caches it per shape and re-evaluates only rows
      whose node changed.
    * ``NODE_ORDER(t, rows) -> float array``: row-local score, cached like PREDICATE.
    * ``BATCH_NODE_ORDER(t, rows) -> float array``: score over the candidate set (may
      normalise across it); computed on every call.
    * ``JOB_VALID(j) -> str`` (non-empty: the reason the job is invalid)
    * ``JOB_READY(j) -> bool``, ``JOB_PIPELINED(j) -> Vote``, ``JOB_ENQUEUEABLE(j) -> Vote``,
      ``JOB_ENQUEUED(j) -> None``, ``JOB_STARVING(j) -> bool``
    * ``OVERUSED(q) -> bool``, ``ALLOCATABLE(q, t) -> bool``, ``PREEMPTIVE(q, tasks) -> bool``
    * ``PREEMPTABLE(t, candidates) -> (victims, Vote)``, ``RECLAIMABLE`` likewise
    * ``VICTIM_QUEUE_ORDER(q1, q2, preemptor_q) -> int``
    """

    JOB_ORDER = "enableJobOrder"
    QUEUE_ORDER = "enableQueueOrder"
    TASK_ORDER = "enableTaskOrder"
    PRE_PREDICATE = "enablePredicate"
    PREDICATE = "enablePredicate"
    NODE_ORDER = "enableNodeOrder"
    BATCH_NODE_ORDER = "enableNodeOrder"
    JOB_VALID = None
    JOB_READY = "enableJobReady"
    JOB_PIPELINED = "enableJobPipelined"
    JOB_ENQUEUEABLE = "enableJobEnqueued"
    JOB_ENQUEUED = "enableJobEnqueued"
    JOB_STARVING = "enableJobStarving"
    OVERUSED = "enabledOverused"
    ALLOCATABLE = "enabledAllocatable"
    PREEMPTIVE = "enablePreemptive"
    PREEMPTABLE = "enablePreemptable"
    RECLAIMABLE = "enableReclaimable"
    VICTIM_QUEUE_ORDER = None

    def __new__(cls, switch: str | None) -> "Point":
        # Several points share a switch; give each its own identity.
        obj = object.__new__(cls)
        obj._value_ = (len(cls.__members__), switch)
        return obj

    __hash__ = object.__hash__  # C-level identity hash: points key the hot callback table

    @property
    def switch(self) -> str | None:
        return self.value[1]  # type: ignore[no-any-return]
