"""The scheduler cache's per-node accounting rows, kept as pods come and go, and the read-only copies
its snapshots hold.

A snapshot's node table is the cache's table with a frozen copy of each accounting array
(:data:`ARRAYS`). A copy is handed on to the next snapshot until the array changes: a pod's
accounting writes four of the six (``idle``, ``used``, ``pod_count``, ``nonzero_used``), one more for
a releasing pod, only ``pipelined`` for a pipelined one, so ``releasing`` and ``pipelined`` are
copied again only when a pod in those states comes or goes, and the table itself is the last one
until anything changed (two replay sessions in five bound nothing and saw nothing end).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from member_agent.scheduler.framework.snapshot import NodeTable, TaskSpec
from member_agent.scheduler.framework.status import TaskStatus

S = TaskStatus
TERMINAL = (S.SUCCEEDED, S.FAILED)
ARRAYS = ("idle", "used", "releasing", "pipelined", "pod_count", "nonzero_used")
_RUNNING = ("idle", "used", "pod_count", "nonzero_used")  # what a pod on a node writes (and releasing when it is)


class NodeAccounts:
    """The accounting arrays of one node table (written in place) and their frozen copies."""

    __slots__ = ("table", "arrays", "written", "_frozen", "_moved", "_last")

    def __init__(self, table: NodeTable, written: list[int] | None = None) -> None:
        self.table = table
        self.written = written if written is not None else []  # every row written, in order (row_journal.py)
        self.arrays = {name: getattr(table, name) for name in ARRAYS}
        self._frozen: dict[str, np.ndarray] = {}  # the last read-only copy of each array
        self._moved: set[str] = set(ARRAYS)  # arrays written since their last copy
        self._last: NodeTable | None = None  # the last frozen table, while nothing moved

    def account(self, task: TaskSpec, sign: int) -> bool:
        """The builder's node accounting for one pod, added (+1) or taken back (−1); False when the
        pod's node is not in the table (nothing counted)."""
        row = self.table.index.get(task.node) if task.node is not None else None
        if row is None:
            return False
        a = self.arrays
        self._last = None
        self.written.append(row)
        if task.status == S.PIPELINED:
            a["pipelined"][row] += sign * task.request
            self._moved.add("pipelined")
            return True
        a["idle"][row] -= sign * task.request
        a["used"][row] += sign * task.request
        if task.status == S.RELEASING:
            a["releasing"][row] += sign * task.request
            self._moved.add("releasing")
        a["pod_count"][row] += sign
        a["nonzero_used"][row] += sign * np.asarray(task.nonzero)
        self._moved.update(_RUNNING)
        return True

    def frozen_table(self) -> NodeTable:
        """The table with a read-only copy of each array, equal to fresh copies of the arrays now."""
        if self._last is None:
            frozen = self._frozen
            for name in self._moved:
                array = self.arrays[name].copy()
                array.setflags(write=False)
                frozen[name] = array
            self._moved.clear()
            copies: dict[str, Any] = {name: frozen[name] for name in ARRAYS}
            self._last = with_arrays(self.table, copies)
        return self._last


def with_arrays(table: NodeTable, arrays: dict[str, Any]) -> NodeTable:
    """``dataclasses.replace(table, **arrays)`` without its per-field walk and ``__init__`` (a snapshot
    in two of a replay's sessions makes one): NodeTable is a frozen dataclass with neither
    ``__post_init__`` nor slots, so an instance is its ``__dict__``, and the copy's is the table's
    with ``arrays`` put in."""
    copy = object.__new__(NodeTable)
    copy.__dict__.update(table.__dict__)
    copy.__dict__.update(arrays)
    return copy
