"""A transaction of tentative Allocate / Pipeline / Evict operations (volcano.md §4).

Operations change the session at once (so later decisions see them); ``commit`` makes
them real (allocations go to the binder, evictions are recorded), ``discard`` undoes them
in reverse order. ``merge`` moves another statement's operations into this one.
"""

from __future__ import annotations

from enum import Enum
from typing import TYPE_CHECKING

from member_agent.scheduler.framework.status import TaskStatus

if TYPE_CHECKING:
    from member_agent.scheduler.framework.infos import TaskInfo
    from member_agent.scheduler.framework.session import Session

S = TaskStatus
_ALLOCATED = TaskStatus.ALLOCATED  # a module constant: an enum member read through its class costs ~0.5 us


class Op(Enum):
    EVICT = "evict"
    PIPELINE = "pipeline"
    ALLOCATE = "allocate"


_ALLOCATE, _EVICT = Op.ALLOCATE, Op.EVICT  # read per placement: module constants (see _ALLOCATED)


class Statement:
    def __init__(self, ssn: Session) -> None:
        self.ssn = ssn
        self.ops: list[tuple[Op, TaskInfo, str]] = []

    def __len__(self) -> int:
        return len(self.ops)

    def has_evictions(self) -> bool:
        return any(op is Op.EVICT for op, _, _ in self.ops)

    # ------------------------------------------------------------------ operations
    def evict(self, task: TaskInfo, reason: str) -> None:
        self.ssn.mark_releasing(task)
        self.ops.append((Op.EVICT, task, reason))

    def pipeline(self, task: TaskInfo, row: int, eviction_occurred: bool = False) -> None:
        self.ssn.place(task, row, S.PIPELINED)
        task.evicted_for = self.ssn.node_names[row] if eviction_occurred else ""
        ssn = self.ssn
        if ssn.options.verbosity >= 3:
            ssn.log(3, f"Pipelining Task {task.key} to node {ssn.node_names[row]} for "
                       f"{ssn.dims.describe(task.spec.request)} on {ssn.dims.describe(ssn.releasing[row])}")
        self.ops.append((Op.PIPELINE, task, ""))

    def allocate(self, task: TaskInfo, row: int) -> None:
        ssn = self.ssn
        ssn.place(task, row, _ALLOCATED)
        if ssn.options.verbosity >= 3:
            ssn.log(3, f"Binding Task {task.key} to node {ssn.node_names[row]}")
        self.ops.append((_ALLOCATE, task, ""))

    # ------------------------------------------------------------------ closing
    def discard(self) -> None:
        if self.ops:
            self.ssn.log(3, "Discarding operations ...")
        for op, task, _reason in reversed(self.ops):
            task.last_tx = task.status
            if op is Op.EVICT:
                self.ssn.unmark_releasing(task)
            else:
                self.ssn.unplace(task)
                task.evicted_for = ""
        self.ops.clear()

    def commit(self) -> None:
        if self.ops:
            self.ssn.log(3, "Committing operations ...")
        allocated = []
        for op, task, reason in self.ops:
            task.last_tx = None
            if op is _EVICT:
                self.ssn.evictions.append((task, reason))
            elif op is _ALLOCATE:
                allocated.append(task)
            # A pipeline is in-session only; the pod is considered again next session.
        # Dispatched together, in order (a status change reads nothing an eviction record writes).
        self.ssn.dispatch_all(allocated)
        self.ops.clear()

    def merge(self, *others: Statement) -> None:
        for other in others:
            self.ops.extend(other.ops)
            other.ops.clear()
