"""``deviceshare``: per-physical-GPU accounting and HAMi-style GPU sharing (volcano.md §6.15).

Node-level resources only say "this node has 640 GB of ``nvidia.com/gpumem`` left"; this
plugin checks the GPUs one by one (:mod:`.device_ledger`): a shared request
(``nvidia.com/gpumem`` in GB, ``nvidia.com/gpucores`` in percent) must land on *one* GPU
with that much memory and cores left, and a whole-GPU request (``nvidia.com/gpu``) takes
GPUs nobody else holds. Whole GPUs are taken from one NUMA node / NVLink domain when
possible. The chosen device ids of every pod bound this session go to
``CycleResult.device_allocations`` and to the pod annotation ``volcano.sh/gpu-index``.

``deviceshare.SchedulePolicy`` orders the GPUs tried for a shared request (``binpack``:
fullest first; ``spread``: emptiest first; default: highest index first, as HAMi) and, with
``deviceshare.ScheduleWeight`` > 0, scores nodes (binpack: how full the chosen GPU would be;
spread: 100 for an idle GPU). Volcano's other switches are accepted; the HAMi model is on
whenever the plugin is configured.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from member_agent.scheduler.framework.arguments import Argument
from member_agent.scheduler.framework.infos import TaskInfo
from member_agent.scheduler.framework.interface import Point
from member_agent.scheduler.framework.session import Session
from member_agent.scheduler.framework.status import Code
from member_agent.scheduler.framework.topology import GPU_INDEX_ANNOTATION
from member_agent.scheduler.plugins.device_ledger import DeviceLedger, ledger_for

NAME = "deviceshare"
ARGUMENTS = (
    Argument("deviceshare.GPUSharingEnable", bool, False),
    Argument("deviceshare.GPUNumberEnable", bool, False),
    Argument("deviceshare.NodeLockEnable", bool, False),
    Argument("deviceshare.VGPUEnable", bool, False),
    Argument("deviceshare.AscendMindClusterVNPUEnable", bool, False),
    Argument("deviceshare.AscendHAMiVNPUEnable", bool, False),
    Argument("deviceshare.SchedulePolicy", str, ""),
    Argument("deviceshare.ScheduleWeight", int, 0),
    Argument("deviceshare.KnownGeometriesCMName", str, "volcano-vgpu-device-config"),
    Argument("deviceshare.KnownGeometriesCMNamespace", str, "kube-system"),
)
POLICIES = ("", "binpack", "spread")


class DeviceSharePlugin:
    name = NAME

    def __init__(self, args: dict[str, Any]) -> None:
        self.policy = str(args["deviceshare.SchedulePolicy"])
        self.weight = int(args["deviceshare.ScheduleWeight"])
        self.ledger: DeviceLedger | None = None

    def on_session_open(self, ssn: Session) -> None:
        if self.policy not in POLICIES:
            ssn.warn(f"plugin {NAME}: argument deviceshare.SchedulePolicy {self.policy!r} is not one of "
                     f"binpack, spread; the default order is used")
            self.policy = ""
        ledger = self.ledger = ledger_for(ssn)
        ledger.gpu_policy = self.policy
        self.no_devices = ssn.reasons.code("node has no GPU devices", Code.UNRESOLVABLE)
        self.no_shared = ssn.reasons.code("no GPU has the requested gpumem and gpucores left", Code.UNSCHEDULABLE)
        self.no_whole = ssn.reasons.code("not enough whole GPUs free", Code.UNSCHEDULABLE)
        ssn.add(Point.PREDICATE, NAME, self._predicate, row=self._predicate_row)
        if self.weight > 0 and self.policy:
            ssn.add(Point.NODE_ORDER, NAME, self._score, row=self._score_row)

    # ------------------------------------------------------------------ predicate
    def _predicate_row(self, task: TaskInfo, row: int) -> int:
        assert self.ledger is not None
        demand = self.ledger.demand(task)
        if not demand.any_gpu:
            return 0
        node = self.ledger.node(row)
        if node is None or not node.holders:
            return self.no_devices
        if self.ledger.choose_gpus(node, demand) is None:
            return self.no_shared if demand.shared else self.no_whole
        return 0

    def _predicate(self, task: TaskInfo, rows: np.ndarray) -> np.ndarray:
        assert self.ledger is not None
        demand = self.ledger.demand(task)
        if not demand.any_gpu:
            return np.zeros(len(rows), dtype=np.int32)
        if self.ledger.numa_enabled or demand.cpus:  # NUMA admission is decided node by node
            return np.fromiter((self._predicate_row(task, r) for r in rows.tolist()), dtype=np.int32, count=len(rows))
        matrix = self.ledger.matrix()
        miss = self.no_shared if demand.shared else self.no_whole
        codes = np.where(matrix.fits(demand, rows), 0, miss)
        return np.where(matrix.count[rows] == 0, self.no_devices, codes).astype(np.int32)

    # ------------------------------------------------------------------ score
    def _score_row(self, task: TaskInfo, row: int) -> float:
        assert self.ledger is not None
        demand = self.ledger.demand(task)
        node = self.ledger.node(row)
        if not demand.any_gpu or node is None or not node.holders:
            return 0.0
        chosen = self.ledger.choose_gpus(node, demand)
        if not chosen:
            return 0.0
        if self.policy == "binpack":
            if demand.shared:
                used = [(node.memory_used[g] + demand.memory) / node.memory[g] if node.memory[g] else 1.0 for g in chosen]
                return 100.0 * float(np.mean(used)) * self.weight
            busy = sum(1 for h in node.holders if h) + len(chosen)
            return 100.0 * busy / len(node.holders) * self.weight
        idle = all(node.holders[g] == 0 for g in chosen)
        return (100.0 if idle else 0.0) * self.weight

    def _score(self, task: TaskInfo, rows: np.ndarray) -> np.ndarray:
        return np.fromiter((self._score_row(task, r) for r in rows.tolist()), dtype=np.float64, count=len(rows))

    # ------------------------------------------------------------------ close
    def on_session_close(self, ssn: Session) -> None:
        if self.ledger is None:
            return
        for task, assignment in self.ledger.bound():
            if not assignment.gpus:
                continue
            ssn.device_allocations.setdefault(task.key, {})["gpus"] = list(assignment.gpus)
            ssn.pod_annotations.setdefault(task.key, {})[GPU_INDEX_ANNOTATION] = ",".join(map(str, assignment.gpus))
            ssn.log(3, f"Assigned GPU(s) {','.join(map(str, assignment.gpus))} of node "
                       f"{ssn.node_names[assignment.row]} to task {task.key}")


def new(args: dict[str, Any]) -> DeviceSharePlugin:
    return DeviceSharePlugin(args)
