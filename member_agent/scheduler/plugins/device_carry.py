"""The GPUs held by the jobs a session leaves out, carried across sessions (volcano.md §6.15).

A session's device ledger (:mod:`.device_ledger`) starts each node from the GPU use the cache
folded in and replays every pod on it. Under a conf that leaves quiescent jobs out
(framework/quiescent.py) their pods are not in the session, and replaying them anyway was a
quarter of a long replay's time. :class:`CarriedDevices` sums their GPU use per node as
(nodes × GPUs) arrays, a tally of the cache's :class:`~framework.left_out.QuiescentLedger`:
updated as left-out jobs come and go (a bind, an end), not recomputed per session.
:func:`session_start` then gives the session's ledger its starting state: the folded use plus
the tally, and the pods it replays itself.

The start must equal the replay's, bit for bit. A left-out pod is *carried* when replaying it
commutes with every other: its ``volcano.sh/gpu-index`` names GPUs of its node (a pod without
one is placed greedily, which depends on what came before it) and its shared memory and cores
are whole numbers (so sums are exact in any order). The ledger replays annotated pods before
the others, so carried pods only ever move ahead of pods that commute with them. When that
cannot be shown — a left-out job with a pod that is not carried, a left-out job the session
wraps anyway (``LeftOut.clash``), a session pod on a carried node whose replay does not
commute, a folded fractional use on such a node — the session replays every pod, left-out
ones included, in the order of a session that leaves nothing out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import numpy as np

from member_agent.scheduler.framework.infos import TaskInfo
from member_agent.scheduler.framework.memo import LastOf
from member_agent.scheduler.framework.snapshot import DeviceArrays, DeviceUsage, JobSpec, TaskSpec
from member_agent.scheduler.framework.status import TaskStatus
from member_agent.scheduler.framework.topology import GPU_INDEX_ANNOTATION, NodeTopology
from member_agent.scheduler.plugins.gpu_demand import NO_DEMAND, Demand, gpu_demand

if TYPE_CHECKING:
    from member_agent.scheduler.framework.session import Session

S = TaskStatus
TALLY_KEY = "device-carry"
TERMINAL = (S.SUCCEEDED, S.FAILED)


def annotated_gpus(spec: TaskSpec, count: int) -> tuple[int, ...] | None:
    """The GPUs ``volcano.sh/gpu-index`` names, when it is there and valid on a node of ``count``
    GPUs (the device ledger replays such a pod as written); None otherwise."""
    text = spec.extras.annotations.get(GPU_INDEX_ANNOTATION, "")
    if not text:
        return None
    try:
        gpus = tuple(int(p) for p in text.split(",") if p.strip())
    except ValueError:
        return None
    return None if any(g < 0 or g >= count for g in gpus) else gpus


def commutes(demand: Demand, gpus: tuple[int, ...] | None) -> bool:
    """Replaying a pod of ``demand`` onto ``gpus`` adds fixed whole numbers (or sets exclusive)."""
    return (gpus is not None and demand.cpus == 0 and float(demand.memory).is_integer()
            and float(demand.cores).is_integer())


class CarriedDevices:
    """Per node and GPU, what the carried pods of the left-out jobs hold."""

    def __init__(self, topology: Sequence[NodeTopology | None], rows: Mapping[str, int],
                 dims: Mapping[str, int]) -> None:
        self.topology, self.rows, self.dims = topology, rows, dims
        n, width = len(topology), max((len(t.gpus) for t in topology if t is not None), default=0)
        self.holders = np.zeros((n, width), dtype=np.int64)
        self.exclusive = np.zeros((n, width), dtype=np.int64)  # exclusive holders
        self.memory_used = np.zeros((n, width))
        self.cores_used = np.zeros((n, width))
        self.pods = np.zeros(n, dtype=np.int64)  # carried pods per node
        self.held: dict[str, list[tuple[int, tuple[int, ...], Demand]]] = {}  # job uid -> its pods' holds
        self.uncarried: set[str] = set()  # left-out jobs with a pod that is not carried

    def add(self, spec: JobSpec, _found: object) -> None:
        holds = self._holds(spec)
        if holds is None:
            self.uncarried.add(spec.uid)
            return
        self.held[spec.uid] = holds
        self._apply(holds, 1)

    def remove(self, spec: JobSpec, _found: object) -> None:
        if spec.uid in self.uncarried:
            self.uncarried.discard(spec.uid)
            return
        holds = self.held.pop(spec.uid, None)
        if holds is not None:
            self._apply(holds, -1)

    def _holds(self, spec: JobSpec) -> list[tuple[int, tuple[int, ...], Demand]] | None:
        holds = []
        for task in spec.tasks:
            row = self.rows.get(task.node) if task.node else None
            layout = self.topology[row] if row is not None else None
            if row is None or layout is None or task.status in (*TERMINAL, S.RELEASING):
                continue  # the ledger replays nothing there
            demand = gpu_demand(task.request_list, self.dims)
            if demand is NO_DEMAND:
                continue
            gpus = annotated_gpus(task, len(layout.gpus))
            if gpus is None or not commutes(demand, gpus):
                return None
            holds.append((row, gpus, demand))
        return holds

    def _apply(self, holds: list[tuple[int, tuple[int, ...], Demand]], sign: int) -> None:
        for row, gpus, demand in holds:
            self.pods[row] += sign
            for g in gpus:  # one by one: an index named twice counts twice, as the ledger's replay
                self.holders[row, g] += sign
                if demand.shared:
                    self.memory_used[row, g] += sign * demand.memory
                    self.cores_used[row, g] += sign * demand.cores
                else:
                    self.exclusive[row, g] += sign

    # ------------------------------------------------------------------ a session's start
    def usage(self, row: int, folded: DeviceUsage | None) -> DeviceUsage:
        """Row ``row``'s start: the folded use plus the carried pods."""
        k = len(self.topology[row].gpus)  # type: ignore[union-attr]  # rows with pods have a layout
        memory, cores = self.memory_used[row, :k].tolist(), self.cores_used[row, :k].tolist()
        holders, exclusive = self.holders[row, :k].tolist(), (self.exclusive[row, :k] > 0).tolist()
        if folded is not None and len(folded.holders) == k:
            memory = [a + b for a, b in zip(folded.memory_used, memory, strict=True)]
            cores = [a + b for a, b in zip(folded.cores_used, cores, strict=True)]
            holders = [a + b for a, b in zip(folded.holders, holders, strict=True)]
            exclusive = [a or b for a, b in zip(folded.exclusive, exclusive, strict=True)]
        return DeviceUsage(tuple(memory), tuple(cores), tuple(holders), tuple(exclusive))

    def arrays(self, base: DeviceArrays) -> DeviceArrays:
        """The cache's arrays with the carried pods added (same width: both from one topology)."""
        return DeviceArrays(base.count, base.memory, base.memory_used + self.memory_used,
                            base.cores_used + self.cores_used, base.holders + self.holders,
                            base.exclusive | (self.exclusive > 0))


@dataclass
class Start:
    """How a session's device ledger begins: the pods it replays, and the carried use (None: none)."""

    occupants: dict[int, list[TaskInfo]]
    carried: CarriedDevices | None


def occupants(ssn: Session) -> dict[int, list[TaskInfo]]:
    """Per occupied row, every pod on the node the session holds: its tasks and the snapshot's
    residents (pods of no job, which hold devices all the same)."""
    rows: dict[int, list[TaskInfo]] = {r: list(tasks.values()) for r, tasks in sorted(ssn.node_tasks.items()) if tasks}
    index = ssn.nodes.index
    for spec in ssn.snapshot.residents:
        row = index.get(spec.node) if spec.node else None
        if row is not None:
            rows.setdefault(row, []).append(TaskInfo(spec, None, row, 0))  # type: ignore[arg-type]  # no job
    return rows


def session_start(ssn: Session) -> Start:
    """The session's pods and residents per node on top of the carried tally, or, when that start
    could differ from a full replay, every pod including the left-out jobs'."""
    occupied = occupants(ssn)
    left = ssn.left_out
    if not left:
        return Start(occupied, None)
    assert left.ledger is not None
    nodes = ssn.nodes
    topology = nodes.topology or (None,) * len(nodes)
    carried = left.ledger.tally(TALLY_KEY, lambda: CarriedDevices(topology, nodes.index, ssn.dims.index))
    assert isinstance(carried, CarriedDevices)
    if left.clash or carried.uncarried or not _commutes_on_carried_rows(ssn, carried, occupied):
        return Start(every_occupant(ssn), None)
    return Start(occupied, carried)


def _whole(values: Any) -> bool:
    return bool((np.floor(values) == values).all())


def _fractional_rows(base: DeviceArrays) -> np.ndarray:
    """The rows of ``base`` with a GPU's memory or cores in use that is not a whole number: the
    carried rows are whole exactly when none of them is among these. Kept for the last arrays
    seen, compared by identity: the cache hands unchanged arrays to the next snapshot, where the
    whole-number test of the carried rows was most of a session's deviceshare opening."""
    return _FRACTIONAL.get(base, _find_fractional_rows)


def _find_fractional_rows(base: DeviceArrays) -> np.ndarray:
    memory, cores = base.memory_used, base.cores_used
    whole = (np.floor(memory) == memory).all(axis=1) & (np.floor(cores) == cores).all(axis=1)
    return np.flatnonzero(~whole)


_FRACTIONAL: LastOf[DeviceArrays, np.ndarray] = LastOf()


def _commutes_on_carried_rows(ssn: Session, carried: CarriedDevices, occupants: dict[int, list[TaskInfo]]) -> bool:
    base = ssn.snapshot.device_arrays
    rows = carried.pods > 0
    if base is not None and len(base.count) == len(rows):
        fractional = _fractional_rows(base)
        if len(fractional) and rows[fractional].any():
            return False
    else:
        for row in np.flatnonzero(rows).tolist():
            folded = ssn.snapshot.device_usage[row] if row < len(ssn.snapshot.device_usage) else None
            if folded is not None and not (_whole(np.array(folded.memory_used)) and _whole(np.array(folded.cores_used))):
                return False
    for row, tasks in occupants.items():
        layout = carried.topology[row]
        if not rows[row] or layout is None:
            continue
        for task in tasks:
            spec = task.spec
            if task.status == S.RELEASING or GPU_INDEX_ANNOTATION not in spec.extras.annotations:
                continue  # not replayed, or replayed after every annotated pod (as ever)
            demand = gpu_demand(spec.request_list, ssn.dims.index)
            if demand is not NO_DEMAND and not commutes(demand, annotated_gpus(spec, len(layout.gpus))):
                return False
    return True


def every_occupant(ssn: Session) -> dict[int, list[TaskInfo]]:
    """Per node, every pod on it in the order of a session that wraps every job (jobs in snapshot
    order, each job's pods in order, residents last): the session's own tasks where it has them."""
    index = ssn.nodes.index
    rows: dict[int, dict[str, TaskInfo]] = {}
    for job in ssn.snapshot.jobs:
        wrapped = job.uid in ssn.jobs
        for i, tspec in enumerate(job.tasks):
            row = index.get(tspec.node) if tspec.node else None
            if row is None or tspec.status in TERMINAL:
                continue
            task = ssn.node_tasks[row][tspec.key] if wrapped else TaskInfo(tspec, None, row, i)  # type: ignore[arg-type]
            rows.setdefault(row, {})[tspec.key] = task
    out = {row: list(tasks.values()) for row, tasks in sorted(rows.items())}
    for resident in ssn.snapshot.residents:
        row = index.get(resident.node) if resident.node else None
        if row is not None:
            out.setdefault(row, []).append(TaskInfo(resident, None, row, 0))  # type: ignore[arg-type]  # no job
    return dict(sorted(out.items()))
