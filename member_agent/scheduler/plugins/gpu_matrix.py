"""Every node's physical GPUs as numpy rows, for vectorised device checks and scores.

The device ledger's :class:`NodeDevices` are per-node Python lists (right for placing one
task); asking "which of 1,213 nodes can take this request?" one node at a time costs tens
of microseconds per node. :class:`GpuMatrix` mirrors the ledger as (nodes × GPUs) arrays,
built once per session when first asked and refreshed row by row as the ledger changes.
"""

from __future__ import annotations

from typing import Callable, Iterable, Protocol, Sequence

import numpy as np

from member_agent.scheduler.framework.snapshot import DeviceArrays
from member_agent.scheduler.framework.topology import NodeTopology

EPS = 1e-9


class DeviceRow(Protocol):
    """One node's GPUs as the device ledger keeps them (``device_ledger.NodeDevices``)."""

    holders: list[int]
    memory: list[float]
    memory_used: list[float]
    cores_used: list[float]
    exclusive: list[bool]


class GpuDemand(Protocol):
    """A request's GPU demand (``gpu_demand.Demand``)."""

    @property
    def gpus(self) -> int: ...
    @property
    def memory(self) -> float: ...
    @property
    def cores(self) -> float: ...
    @property
    def shared(self) -> bool: ...


class GpuMatrix:
    def __init__(self, topology: Sequence[NodeTopology | None], base: DeviceArrays | None,
                 held: Iterable[int], node: Callable[[int], DeviceRow | None]) -> None:
        """From the cache's arrays ``base`` plus the rows in ``held`` (the ledger's own state
        there), or, without a base, from every node with a topology."""
        if base is not None and len(base.count) == len(topology):
            self._copy(base)
            rows: Iterable[int] = sorted(held)
        else:
            self._empty(topology)
            rows = (r for r, layout in enumerate(topology) if layout is not None)
        for row in rows:
            found = node(row)
            if found is not None:
                self.refresh(row, found)
        self.valid = np.arange(self.memory.shape[1])[None, :] < self.count[:, None]

    def _copy(self, base: DeviceArrays) -> None:
        self.count = base.count.copy()
        self.memory = base.memory.copy()
        self.memory_used = base.memory_used.copy()
        self.cores_used = base.cores_used.copy()
        self.holders = base.holders.copy()
        self.exclusive = base.exclusive.copy()

    def _empty(self, topology: Sequence[NodeTopology | None]) -> None:
        n = len(topology)
        width = max((len(t.gpus) for t in topology if t is not None), default=0)
        self.count = np.zeros(n, dtype=np.int64)
        self.memory = np.zeros((n, width))
        self.memory_used = np.zeros((n, width))
        self.cores_used = np.zeros((n, width))
        self.holders = np.zeros((n, width), dtype=np.int64)
        self.exclusive = np.zeros((n, width), dtype=bool)

    @staticmethod
    def arrays_of(topology: Sequence[NodeTopology | None]) -> DeviceArrays:
        """Idle devices of every node (what the cache starts from)."""
        n = len(topology)
        width = max((len(t.gpus) for t in topology if t is not None), default=0)
        count = np.array([len(t.gpus) if t is not None else 0 for t in topology], dtype=np.int64)
        memory = np.zeros((n, width))
        for row, layout in enumerate(topology):
            if layout is not None:
                memory[row, :len(layout.gpus)] = [g.memory_gib for g in layout.gpus]
        return DeviceArrays(count, memory, np.zeros((n, width)), np.zeros((n, width)),
                            np.zeros((n, width), dtype=np.int64), np.zeros((n, width), dtype=bool))

    def refresh(self, row: int, node: DeviceRow) -> None:
        k = len(node.holders)
        self.count[row] = k
        self.memory[row, :k] = node.memory
        self.memory_used[row, :k] = node.memory_used
        self.cores_used[row, :k] = node.cores_used
        self.holders[row, :k] = node.holders
        self.exclusive[row, :k] = node.exclusive

    def fits(self, demand: GpuDemand, rows: np.ndarray) -> np.ndarray:
        """Per row: whether ``demand`` finds its GPUs (the ledger's ``shareable``/free rules)."""
        valid = self.valid[rows]
        holders = self.holders[rows]
        if not demand.shared:
            return ((holders == 0) & valid).sum(axis=1) >= demand.gpus  # type: ignore[no-any-return]
        cores = self.cores_used[rows]
        ok = valid & ~self.exclusive[rows]
        ok &= self.memory_used[rows] + demand.memory <= self.memory[rows] + EPS
        ok &= cores + demand.cores <= 100 + EPS
        if demand.cores == 0:
            ok &= cores < 100
        if demand.cores >= 100:
            ok &= holders == 0
        return ok.sum(axis=1) >= demand.gpus  # type: ignore[no-any-return]

    def free_fraction(self, rows: np.ndarray) -> np.ndarray:
        """(R, G): the free part of each GPU by cores; held whole, memory full or absent: 0."""
        memory = self.memory[rows]
        full = (memory > 0) & (self.memory_used[rows] >= memory - EPS)
        free = np.clip(1.0 - self.cores_used[rows] / 100.0, 0.0, 1.0)
        return np.where(self.valid[rows] & ~self.exclusive[rows] & ~full, free, 0.0)
