"""``numa-aware``: NUMA placement of pinned CPUs and GPUs (volcano.md §6.10).

A pod's policy is its ``volcano.sh/numa-topology-policy`` annotation (the job controller
copies the task's ``topologyPolicy`` there). Guaranteed-QoS pods are checked for their whole
CPUs and GPUs, other pods for their whole GPUs only (the kubelet pins CPUs only for Guaranteed
pods but aligns devices for every QoS class; Volcano checks Guaranteed pods only, which would
ignore the seed's GPU-only ``gpu-dist-training``). For a pod with a policy other than ``none``, the node
must carry a NUMA topology (``caldera.io/topology``), use the ``static`` CPU manager and
have the same topology-manager policy; a pod without a policy is checked against a node's
own non-``none`` policy. Whole CPUs and whole GPUs each give hints per NUMA subset, merged
with Kubernetes' rules (:mod:`.numa_hints`); ``restricted`` and ``single-numa-node`` reject a
node where the best merged hint is not preferred (e.g. 4 GPUs only available split 2 + 2
over two NUMA nodes). Nodes are scored by how few NUMA nodes the pod would span (0–100,
× ``weight``), so the workers of a job land NUMA-aligned.
The decision (NUMA ids) of every pod bound this session is reported in
``CycleResult.device_allocations[pod]["numa"]`` and the annotation ``volcano.sh/topology-decision``.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from member_agent.scheduler.framework.arguments import Argument
from member_agent.scheduler.framework.infos import TaskInfo
from member_agent.scheduler.framework.interface import Point
from member_agent.scheduler.framework.session import Session
from member_agent.scheduler.framework.status import Code
from member_agent.scheduler.framework.topology import TOPOLOGY_DECISION_ANNOTATION
from member_agent.scheduler.plugins.device_ledger import DeviceLedger, ledger_for
from member_agent.scheduler.plugins.numa_hints import bits

NAME = "numa-aware"
ARGUMENTS = (Argument("weight", int, 1),)


class NumaAwarePlugin:
    name = NAME

    def __init__(self, args: dict[str, Any]) -> None:
        self.weight = int(args["weight"])
        self.ledger: DeviceLedger | None = None

    def on_session_open(self, ssn: Session) -> None:
        self.ssn = ssn
        self.ledger = ledger_for(ssn)
        self.codes: dict[str, int] = {}
        ssn.add(Point.PREDICATE, NAME, self._predicate, row=self._predicate_row)
        ssn.add(Point.NODE_ORDER, NAME, self._scores, row=self._score_row)

    def _code(self, text: str) -> int:
        found = self.codes.get(text)
        if found is None:
            found = self.codes[text] = self.ssn.reasons.code(text, Code.UNRESOLVABLE)
        return found

    # ------------------------------------------------------------------ predicate
    def _predicate_row(self, task: TaskInfo, row: int) -> int:
        ledger = self.ledger
        assert ledger is not None
        if not self._relevant(task):
            return 0
        node = ledger.node(row)
        own = task.spec.extras.numa_policy
        if own and own != "none":
            if node is None or not node.topology.has_numa:
                return self._code("numa info is empty")
            if node.topology.cpu_manager_policy != "static":
                return self._code("cpu manager policy isn't static")
            if node.topology.topology_manager_policy != own:
                return self._code(f"task topology policy[{own}] is different with node"
                                  f"[{node.topology.topology_manager_policy}]")
        demand = ledger.demand(task)
        decision = ledger.numa_decision(task, row, demand)
        if decision is not None and not decision.admitted:
            policy = ledger.numa_policy(task, node)
            return self._code(f"container cannot be assigned by numa (topology policy {policy})")
        return 0

    def _relevant(self, task: TaskInfo) -> bool:
        """Guaranteed pods (pinned CPUs) and any pod asking whole GPUs: the kubelet's topology
        manager aligns devices for every QoS class, CPUs only for Guaranteed ones."""
        assert self.ledger is not None
        demand = self.ledger.demand(task)
        return task.spec.extras.guaranteed or (demand.gpus > 0 and not demand.shared)

    def _predicate(self, task: TaskInfo, rows: np.ndarray) -> np.ndarray:
        if not self._relevant(task):
            return np.zeros(len(rows), dtype=np.int32)
        return np.fromiter((self._predicate_row(task, r) for r in rows.tolist()), dtype=np.int32, count=len(rows))

    # ------------------------------------------------------------------ score
    def _score_row(self, task: TaskInfo, row: int) -> float:
        """``100 × (n − span) / (n − 1) × weight`` for a pod spanning ``span`` of the node's ``n``
        NUMA nodes (1 NUMA node scores 100). Volcano normalises the span over the candidate
        nodes; this row-local form orders nodes the same way and is cached per task shape."""
        ledger = self.ledger
        assert ledger is not None
        if self.weight == 0 or not self._relevant(task):
            return 0.0
        decision = ledger.numa_decision(task, row, ledger.demand(task))
        if decision is None or not decision.admitted:
            return 0.0
        node = ledger.node(row)
        n = len(node.cpu_total) if node is not None else 1
        span = bits(decision.mask)
        return 100.0 * self.weight * ((n - span) / (n - 1) if n > 1 else 1.0)

    def _scores(self, task: TaskInfo, rows: np.ndarray) -> np.ndarray:
        if self.weight == 0 or not self._relevant(task):
            return np.zeros(len(rows), dtype=np.float64)
        return np.fromiter((self._score_row(task, r) for r in rows.tolist()), dtype=np.float64, count=len(rows))

    # ------------------------------------------------------------------ close
    def on_session_close(self, ssn: Session) -> None:
        if self.ledger is None:
            return
        for task, assignment in self.ledger.bound():
            if not assignment.numa:
                continue
            ssn.device_allocations.setdefault(task.key, {})["numa"] = list(assignment.numa)
            decision = {"numa": list(assignment.numa), "cpus": dict(zip(map(str, assignment.numa), assignment.cpus,
                                                                           strict=True))}
            ssn.pod_annotations.setdefault(task.key, {})[TOPOLOGY_DECISION_ANNOTATION] = json.dumps(
                decision, separators=(",", ":"), sort_keys=True)


def new(args: dict[str, Any]) -> NumaAwarePlugin:
    return NumaAwarePlugin(args)
