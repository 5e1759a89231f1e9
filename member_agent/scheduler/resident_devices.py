"""The GPUs held by pods the scheduler does not schedule, folded into per-node device rows.

A pod of no job that sits on a node (a *resident*) and names the GPUs it holds
(``GPU_INDEX_ANNOTATION`` on a known topology) is folded into its node's :class:`NodeDevices`
row once, when the cache sees it, so the device plugins do not replay it every session. A
resident that holds devices but cannot be folded is listed in the snapshot instead; one that
holds no device and pins no CPU is counted by the node rows alone.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from member_agent.scheduler.framework.dims import Dimensions
from member_agent.scheduler.framework.snapshot import DeviceArrays, DeviceUsage, NodeTable, TaskSpec
from member_agent.scheduler.framework.topology import GPU_INDEX_ANNOTATION, TOPOLOGY_DECISION_ANNOTATION
from member_agent.scheduler.plugins.device_ledger import Assignment, NodeDevices
from member_agent.scheduler.plugins.gpu_demand import gpu_demand
from member_agent.scheduler.plugins.gpu_matrix import GpuMatrix

DEVICE_ARRAYS = ("count", "memory", "memory_used", "cores_used", "holders", "exclusive")


class ResidentDevices:
    """Residents of one node table: folded device rows, and the residents that could not be folded."""

    __slots__ = ("table", "dims", "devices", "usage", "dirty_rows", "written", "arrays", "residents", "frozen")

    def __init__(self, table: NodeTable, dims: Dimensions, written: list[int] | None = None) -> None:
        self.table = table
        self.dims = dims
        self.devices: dict[int, NodeDevices] = {}
        self.usage: list[DeviceUsage | None] = [None] * len(table)
        self.dirty_rows: set[int] = set()
        self.written = written if written is not None else []  # every row written, in order (row_journal.py)
        self.arrays = GpuMatrix.arrays_of(table.topology)
        self.residents: dict[str, TaskSpec] = {}  # key -> resident listed in the snapshot
        #: The last read-only copy of :attr:`arrays`, handed to each snapshot until a row changes.
        self.frozen: DeviceArrays | None = None

    def reside(self, task: TaskSpec) -> tuple[str, Assignment | None]:
        """Take in a resident on a node; returns how (``plain``, ``resident`` or ``folded``, with
        its assignment), or ``""`` when it holds nothing (not on a node, finished or pipelined)."""
        if not task.extras.guaranteed and not gpu_demand(task.request_list, self.dims.index).any_gpu:
            return "plain", None  # holds no device and pins no CPU: the node rows count it all
        assignment = self._foldable(task)
        if assignment is None:
            self.residents[task.key] = task
            return "resident", None
        self.devices[assignment.row].apply(assignment, 1)
        self.dirty_rows.add(assignment.row)
        self.written.append(assignment.row)
        return "folded", assignment

    def leave(self, task: TaskSpec, role: str, folded: Assignment | None) -> None:
        """Take back what :meth:`reside` took in for ``task``."""
        if role == "resident":
            self.residents.pop(task.key, None)
        elif role == "folded" and folded is not None:
            self.devices[folded.row].apply(folded, -1)
            self.dirty_rows.add(folded.row)
            self.written.append(folded.row)

    def _foldable(self, task: TaskSpec) -> Assignment | None:
        """The GPUs a resident holds, when its annotation names them on a known topology."""
        row = self.table.index.get(task.node or "")
        annotations = task.extras.annotations
        text = annotations.get(GPU_INDEX_ANNOTATION, "")
        if row is None or not text or annotations.get(TOPOLOGY_DECISION_ANNOTATION):
            return None
        topology = self.table.topology[row] if row < len(self.table.topology) else None
        if topology is None:
            return None
        demand = gpu_demand(task.request_list, self.dims.index)
        try:
            gpus = tuple(int(p) for p in text.split(",") if p.strip())
        except ValueError:
            return None
        if not demand.any_gpu or any(g < 0 or g >= len(topology.gpus) for g in gpus):
            return None
        if row not in self.devices:
            self.devices[row] = NodeDevices(topology)
        return Assignment(row, gpus, (), (), demand)

    def refresh(self) -> None:
        """Copy the changed rows' device use into :attr:`arrays` and :attr:`usage`."""
        if not self.dirty_rows:
            return
        self.frozen = None
        arrays = self.arrays
        for row in self.dirty_rows:
            node = self.devices.get(row)
            self.usage[row] = node.usage() if node is not None else None
            if node is not None:
                k = len(node.holders)
                arrays.memory_used[row, :k] = node.memory_used
                arrays.cores_used[row, :k] = node.cores_used
                arrays.holders[row, :k] = node.holders
                arrays.exclusive[row, :k] = node.exclusive
        self.dirty_rows.clear()

    def frozen_arrays(self) -> DeviceArrays:
        if self.frozen is None:
            self.frozen = DeviceArrays(**read_only_copies(
                {name: getattr(self.arrays, name) for name in DEVICE_ARRAYS}, DEVICE_ARRAYS))
        return self.frozen

    def by_node(self) -> dict[str, DeviceUsage]:
        return {self.table.names[row]: d.usage() for row, d in sorted(self.devices.items())}


def read_only_copies(arrays: Mapping[str, np.ndarray], names: tuple[str, ...]) -> dict[str, Any]:
    """A read-only copy of each named array: what a snapshot holds, equal to a fresh copy until the
    cache's own arrays change."""
    copies: dict[str, Any] = {}
    for name in names:
        array = arrays[name].copy()
        array.setflags(write=False)
        copies[name] = array
    return copies
