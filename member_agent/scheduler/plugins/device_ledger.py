"""Per-node GPU and NUMA accounting shared by ``deviceshare`` and ``numa-aware``.

One :class:`DeviceLedger` per session (:func:`ledger_for`) holds, for every node with a
known topology (``Snapshot.nodes.topology``), per physical GPU: memory in use (GB), cores in
use (percent), how many pods hold it and whether one holds it exclusively; per NUMA node:
CPUs pinned to Guaranteed pods. It follows the session through one event handler: a task
placed on a node gets an :class:`Assignment` (which GPUs, which NUMA nodes), an evicted or
undone one gives it back, and a discarded eviction gets the very same devices again.

Demands (``plugins/gpu_demand.py``, from the task's request in ``framework/dims.py`` units):

* ``nvidia.com/gpumem`` (GB) and/or ``nvidia.com/gpucores`` (percent) make a HAMi *shared*
  request: ``max(1, nvidia.com/gpu)`` virtual GPUs, each on a different physical GPU with
  that much memory and cores left (cores never above 100 %; a 0-core request skips GPUs
  whose cores are all taken; a 100-core request needs a GPU nobody holds);
* ``nvidia.com/gpu`` alone takes that many whole GPUs nobody else holds (exclusive);
* whole CPUs of a Guaranteed pod with a NUMA policy are pinned to NUMA nodes (numa-aware).

Pods already on nodes are read back from their ``volcano.sh/gpu-index`` and
``volcano.sh/topology-decision`` annotations; pods without them are placed greedily.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterable

from member_agent.scheduler.framework.infos import TaskInfo
from member_agent.scheduler.framework.snapshot import DeviceUsage
from member_agent.scheduler.framework.status import TaskStatus
from member_agent.scheduler.framework.topology import (
    GPU_INDEX_ANNOTATION,
    TOPOLOGY_DECISION_ANNOTATION,
    NodeTopology,
)
from member_agent.scheduler.plugins.device_carry import CarriedDevices, session_start
from member_agent.scheduler.plugins.gpu_demand import NO_DEMAND, Demand, gpu_demand
from member_agent.scheduler.plugins.gpu_matrix import GpuMatrix
from member_agent.scheduler.plugins.numa_hints import Decision, decide

if TYPE_CHECKING:
    from member_agent.scheduler.framework.session import Session

S = TaskStatus
#: Kubelet's default ``max-allowable-numa-nodes``: hint merging is exponential in NUMA nodes.
MAX_NUMA_NODES = 8


@dataclass(frozen=True)
class Assignment:
    row: int
    gpus: tuple[int, ...]
    numa: tuple[int, ...]
    cpus: tuple[int, ...]  # pinned CPUs per NUMA node id in ``numa``
    demand: Demand


class NodeDevices:
    """Mutable per-node state; ``signature`` changes whenever the state does."""

    def __init__(self, topology: NodeTopology) -> None:
        self.topology = topology
        n = len(topology.gpus)
        self.memory = [g.memory_gib for g in topology.gpus]
        self.memory_used = [0.0] * n
        self.cores_used = [0.0] * n
        self.holders = [0] * n
        self.exclusive = [False] * n
        self.cpu_total = [numa.cpu_count for numa in topology.numa]
        self.cpu_pinned = [0] * len(topology.numa)
        self.gpu_numa = [g.numa for g in topology.gpus]
        self._signature: tuple[object, ...] | None = None

    def start_from(self, usage: DeviceUsage) -> None:
        """Take the GPU use the cache folded into the node (same GPU count, else ignored)."""
        if len(usage.holders) == len(self.holders):
            self.memory_used = list(usage.memory_used)
            self.cores_used = list(usage.cores_used)
            self.holders = list(usage.holders)
            self.exclusive = list(usage.exclusive)
            self._signature = None

    def usage(self) -> DeviceUsage:
        return DeviceUsage(tuple(self.memory_used), tuple(self.cores_used), tuple(self.holders), tuple(self.exclusive))

    def free_fraction(self, g: int) -> float:
        """Free part of GPU ``g`` in 0..1 (by cores; a GPU held whole or with full memory: 0)."""
        if self.exclusive[g] or (self.memory[g] and self.memory_used[g] >= self.memory[g] - 1e-9):
            return 0.0
        return max(0.0, 1.0 - self.cores_used[g] / 100.0)

    def signature(self) -> tuple[object, ...]:
        """Equal for nodes of one layout in the same state (memo key of decisions)."""
        if self._signature is None:
            self._signature = (id(self.topology), tuple(self.memory_used), tuple(self.cores_used),
                               tuple(self.holders), tuple(self.exclusive), tuple(self.cpu_pinned))
        return self._signature

    def free_gpus(self) -> list[int]:
        return [g for g in range(len(self.holders)) if self.holders[g] == 0]

    def gpu_free_per_numa(self) -> list[int]:
        out = [0] * len(self.cpu_total)
        for g in self.free_gpus():
            numa = self.gpu_numa[g]
            if numa is not None and numa < len(out):
                out[numa] += 1
        return out

    def gpu_total_per_numa(self) -> list[int]:
        out = [0] * len(self.cpu_total)
        for numa in self.gpu_numa:
            if numa is not None and numa < len(out):
                out[numa] += 1
        return out

    def shareable(self, g: int, demand: Demand) -> bool:
        if self.exclusive[g]:
            return False
        if self.memory_used[g] + demand.memory > self.memory[g] + 1e-9:
            return False
        if self.cores_used[g] + demand.cores > 100 + 1e-9:
            return False
        if demand.cores == 0 and self.cores_used[g] >= 100:
            return False
        return not (demand.cores >= 100 and self.holders[g] > 0)

    def apply(self, a: Assignment, sign: int) -> None:
        self._signature = None
        d = a.demand
        for g in a.gpus:
            self.holders[g] += sign
            if d.shared:
                self.memory_used[g] += sign * d.memory
                self.cores_used[g] += sign * d.cores
            else:
                self.exclusive[g] = sign > 0
        for numa, count in zip(a.numa, a.cpus, strict=True):
            self.cpu_pinned[numa] += sign * count


def task_demand(ssn: Session, task: TaskInfo, pin_cpus: bool) -> Demand:
    req = task.spec.request_list
    cpus = 0
    if pin_cpus and task.spec.extras.guaranteed:
        milli = req[0]
        if milli > 0 and milli % 1000 == 0:
            cpus = int(milli // 1000)
    return gpu_demand(req, ssn.dims.index, cpus)


class DeviceLedger:
    def __init__(self, ssn: Session) -> None:
        self.ssn = ssn
        self.topology = ssn.nodes.topology or (None,) * len(ssn.node_names)
        self.nodes: dict[int, NodeDevices] = {}
        self.held: dict[str, Assignment] = {}
        self.released: dict[str, Assignment] = {}
        #: CPUs are pinned to NUMA nodes only when numa-aware is configured (kubelet's static policy).
        self.numa_enabled = any(p.name == "numa-aware" for tier in ssn.conf.tiers for p in tier.plugins)
        self.gpu_policy = ""  # "", "binpack" or "spread" (deviceshare.SchedulePolicy)
        self.usage = ssn.snapshot.device_usage
        #: Set by a scoring plugin (fgd) to pick the GPU of a one-GPU shared request on a row
        #: among the eligible ones; None keeps ``gpu_policy``'s order.
        self.shared_chooser: Callable[[int, TaskInfo, list[int]], int] | None = None
        self._matrix: GpuMatrix | None = None
        self._demands: dict[str, Demand] = {}
        #: Memos keyed by a node's layout+state signature: nodes of one pool in the same state
        #: share every answer, so a session evaluates distinct states, not nodes.
        self._decisions: dict[tuple[object, ...], Decision] = {}
        self._choices: dict[tuple[object, ...], tuple[int, ...] | None] = {}
        #: The left-out jobs' GPUs (plugins/device_carry.py), or None when every pod is replayed here.
        start = session_start(ssn)
        self.carried: CarriedDevices | None = start.carried
        for row, tasks in sorted(start.occupants.items()):
            if self.topology[row] is None:
                continue
            for task in sorted(tasks, key=lambda t: GPU_INDEX_ANNOTATION not in t.spec.extras.annotations):
                if task.status != S.RELEASING:
                    self._restore(task, row)
        ssn.add_event_handler("device-ledger", self._on_allocate, self._on_deallocate)

    def matrix(self) -> GpuMatrix:
        """The ledger as (nodes × GPUs) arrays, kept in step from the first call on."""
        if self._matrix is None:
            base = self.ssn.snapshot.device_arrays
            if self.carried is not None and base is not None:  # else every row is read from the ledger
                base = self.carried.arrays(base) if base.holders.shape == self.carried.holders.shape else None
            self._matrix = GpuMatrix(self.topology, base, list(self.nodes), self.node)
        return self._matrix

    # ------------------------------------------------------------------ queries
    def node(self, row: int) -> NodeDevices | None:
        found = self.nodes.get(row)
        if found is None:
            topology = self.topology[row]
            if topology is None:
                return None
            found = self.nodes[row] = NodeDevices(topology)
            usage = self.usage[row] if row < len(self.usage) else None
            if self.carried is not None and self.carried.pods[row]:
                usage = self.carried.usage(row, usage)
            if usage is not None:
                found.start_from(usage)
        return found

    def demand(self, task: TaskInfo) -> Demand:
        found = self._demands.get(task.key)
        if found is None:
            pin = self.numa_enabled and self.numa_policy(task, None) != ""
            found = self._demands[task.key] = task_demand(self.ssn, task, pin)
        return found

    def numa_policy(self, task: TaskInfo, node: NodeDevices | None) -> str:
        """The policy that governs ``task`` on ``node``: the task's, else a NUMA node's own."""
        policy = task.spec.extras.numa_policy
        if policy and policy != "none":
            return policy
        if node is not None and node.topology.has_numa and node.topology.cpu_manager_policy == "static":
            own = node.topology.topology_manager_policy
            return "" if own == "none" else own
        return ""

    def numa_decision(self, task: TaskInfo, row: int, demand: Demand) -> Decision | None:
        node = self.node(row)
        if node is None or not node.topology.has_numa or not self.numa_enabled:
            return None
        if len(node.cpu_total) > MAX_NUMA_NODES:
            return None  # the kubelet's topology manager refuses such nodes (max-allowable-numa-nodes)
        policy = self.numa_policy(task, node)
        if not policy or (demand.cpus == 0 and (demand.shared or demand.gpus == 0)):
            return None
        gpus = 0 if demand.shared else demand.gpus
        key = (policy, demand.cpus, gpus, node.signature())
        found = self._decisions.get(key)
        if found is None:
            cpu_free = [t - p for t, p in zip(node.cpu_total, node.cpu_pinned, strict=True)]
            found = decide(policy, len(node.cpu_total), demand.cpus, node.cpu_total, cpu_free,
                           gpus, node.gpu_total_per_numa(), node.gpu_free_per_numa())
            self._remember(self._decisions, key, found)
        return found

    @staticmethod
    def _remember(memo: dict[tuple[object, ...], Any], key: tuple[object, ...], value: Any) -> None:
        if len(memo) > 50_000:
            memo.clear()
        memo[key] = value

    def choose_gpus(self, node: NodeDevices, demand: Demand, prefer: tuple[int, ...] = (),
                    row: int = -1, task: TaskInfo | None = None) -> tuple[int, ...] | None:
        """Device ids for ``demand`` on ``node``, or None when it does not fit. With ``row`` (a
        placement of ``task``, not a feasibility question) a ``shared_chooser`` picks the GPU."""
        if demand.gpus == 0:
            return ()
        chooser = self.shared_chooser if demand.shared and demand.gpus == 1 and not prefer and task is not None else None
        key = (demand, prefer, self.gpu_policy, node.signature(),
               (row, task.spec.request_list) if chooser and task is not None else None)
        if key in self._choices:
            return self._choices[key]
        chosen = self._choose(node, demand, prefer, (row, task) if chooser and task is not None else None)
        self._remember(self._choices, key, chosen)
        return chosen

    def _choose(self, node: NodeDevices, demand: Demand, prefer: tuple[int, ...],
                placing: tuple[int, TaskInfo] | None = None) -> tuple[int, ...] | None:
        if demand.shared:
            eligible = [g for g in range(len(node.holders)) if node.shareable(g, demand)]
            if placing is not None and self.shared_chooser is not None and eligible:
                return (self.shared_chooser(placing[0], placing[1], eligible),)
            if self.gpu_policy == "binpack":
                eligible.sort(key=lambda g: (-node.memory_used[g], -g))
            elif self.gpu_policy == "spread":
                eligible.sort(key=lambda g: (node.holders[g], g))
            else:
                eligible.sort(reverse=True)  # HAMi's default visiting order: highest index first
            if prefer:
                eligible.sort(key=lambda g: node.gpu_numa[g] not in prefer)
            return tuple(sorted(eligible[:demand.gpus])) if len(eligible) >= demand.gpus else None
        free = node.free_gpus()
        if len(free) < demand.gpus:
            return None
        topology = node.topology
        pools: list[list[int]] = []
        for numa in prefer:
            local = [g for g in free if node.gpu_numa[g] == numa]
            pools.extend([g for g in local if g in group] for group in topology.nvlink)
            pools.append(local)
        pools.extend([g for g in free if g in group] for group in topology.nvlink)
        if prefer:
            pools.append([g for g in free if node.gpu_numa[g] in prefer])
        pools.append(free)
        for pool in pools:
            if len(pool) >= demand.gpus:
                return tuple(sorted(pool)[:demand.gpus])
        return None

    def plan(self, task: TaskInfo, row: int) -> Assignment | None:
        """What placing ``task`` on ``row`` would take (None: it cannot be placed there)."""
        demand = self.demand(task)
        node = self.node(row)
        if node is None:
            return None if demand.any_gpu else Assignment(row, (), (), (), demand)
        decision = self.numa_decision(task, row, demand)
        if decision is not None and not decision.admitted:
            return None
        prefer = decision.numa_ids if decision is not None else ()
        gpus = self.choose_gpus(node, demand, prefer, row, task)
        if gpus is None:
            return None
        numa, cpus = self._pin(node, demand, prefer) if decision is not None else ((), ())
        return Assignment(row, gpus, numa, cpus, demand)

    @staticmethod
    def _pin(node: NodeDevices, demand: Demand, numa_ids: Iterable[int]) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """Whole CPUs from the chosen NUMA nodes first, then any other (kubelet's take)."""
        left = demand.cpus
        chosen, counts = [], []
        order = list(numa_ids) + [i for i in range(len(node.cpu_total)) if i not in numa_ids]
        for numa in order:
            if left <= 0:
                break
            take = min(left, node.cpu_total[numa] - node.cpu_pinned[numa])
            if take > 0:
                chosen.append(numa)
                counts.append(take)
                left -= take
        if not chosen and numa_ids:
            chosen = list(numa_ids)[:1]
            counts = [0]
        return tuple(chosen), tuple(counts)

    # ------------------------------------------------------------------ session events
    def _restore(self, task: TaskInfo, row: int) -> None:
        node = self.node(row)
        demand = self.demand(task)
        if node is None or demand is NO_DEMAND:
            return
        gpus: tuple[int, ...] | None = None
        text = task.spec.extras.annotations.get(GPU_INDEX_ANNOTATION, "")
        if text:
            try:
                gpus = tuple(int(p) for p in text.split(",") if p.strip())
            except ValueError:
                gpus = None
            if gpus is not None and any(g < 0 or g >= len(node.holders) for g in gpus):
                gpus = None
        numa: tuple[int, ...] = ()
        cpus: tuple[int, ...] = ()
        decision_text = task.spec.extras.annotations.get(TOPOLOGY_DECISION_ANNOTATION, "")
        if decision_text and demand.cpus:
            try:
                numa = tuple(int(i) for i in json.loads(decision_text).get("numa", ()))
            except (ValueError, AttributeError, TypeError):
                numa = ()
            numa, cpus = self._pin(node, demand, numa)
        if gpus is None:
            planned = self.plan(task, row)
            if planned is None:
                gpus = tuple(node.free_gpus()[:demand.gpus]) if not demand.shared else ()
            else:
                gpus, numa, cpus = planned.gpus, planned.numa or numa, planned.cpus or cpus
        self._hold(task, Assignment(row, gpus, numa, cpus, demand))

    def _hold(self, task: TaskInfo, assignment: Assignment) -> None:
        node = self.node(assignment.row)
        if node is None:
            return
        node.apply(assignment, 1)
        self.held[task.key] = assignment
        if self._matrix is not None:
            self._matrix.refresh(assignment.row, node)

    def _on_allocate(self, task: TaskInfo) -> None:
        if task.key in self.held or task.node is None or self.topology[task.node] is None:
            return
        if self.demand(task) is NO_DEMAND:
            return
        previous = self.released.pop(task.key, None)
        if previous is not None and previous.row == task.node:
            self._hold(task, previous)
            return
        planned = self.plan(task, task.node)
        if planned is not None:
            self._hold(task, planned)

    def _on_deallocate(self, task: TaskInfo) -> None:
        assignment = self.held.pop(task.key, None)
        if assignment is None:
            return
        node = self.node(assignment.row)
        if node is not None:
            node.apply(assignment, -1)
            if self._matrix is not None:
                self._matrix.refresh(assignment.row, node)
        if task.status == S.RELEASING:
            self.released[task.key] = assignment

    def bound(self) -> Iterable[tuple[TaskInfo, Assignment]]:
        """Tasks bound this session that hold devices or NUMA nodes."""
        for job in self.ssn.jobs.values():
            for task in job.tasks:
                if task.status == S.BINDING and task.key in self.held:
                    yield task, self.held[task.key]


LEDGER_KEY = "device-ledger"


def ledger_for(ssn: Session) -> DeviceLedger:
    """The session's one ledger. It lives in ``ssn.shared`` so it is freed with the session
    (a ``WeakKeyDictionary`` whose value points back at its key never drops the entry)."""
    found: DeviceLedger | None = ssn.shared.get(LEDGER_KEY)
    if found is None:
        found = ssn.shared[LEDGER_KEY] = DeviceLedger(ssn)
    return found
