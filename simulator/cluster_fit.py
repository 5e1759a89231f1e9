"""Whether a member cluster could ever run a trace job, whatever else it runs: the replay reports a
job that fits no cluster as ``Unfittable`` at its arrival instead of leaving it pending for ever."""

from __future__ import annotations

from typing import Any

from policies.quantity import parse_quantity
from simulator.trace import TraceJob

GPU = "nvidia.com/gpu"
Obj = dict[str, Any]


def node_capacity(node: Obj) -> dict[str, float]:
    """A node's allocatable as numbers; HAMi's ``gpucores`` is 100 per GPU when not listed."""
    allocatable = (node.get("status") or {}).get("allocatable") or {}
    cap = {str(k): float(parse_quantity(v)) for k, v in allocatable.items()}
    cap.setdefault("nvidia.com/gpucores", 100 * cap.get(GPU, 0.0))
    return cap


class ClusterFit:
    """The nodes' capacities, read once, and the GPUs of the whole cluster."""

    def __init__(self, name: str, nodes: list[Obj]) -> None:
        self.name = name
        self.capacities = [node_capacity(n) for n in nodes]
        self.gpus_total = sum(float((n.get("status") or {}).get("allocatable", {}).get(GPU, 0) or 0) for n in nodes)

    def never_fits(self, job: TraceJob) -> str:
        """Why no state of this cluster could ever run ``job`` ("" when one could): a pod larger
        than every node, or a gang asking more GPUs than the cluster has."""
        for task in job.tasks:
            ask = {name: float(parse_quantity(value)) for name, value in task.requests}
            if not any(all(cap.get(name, 0.0) + 1e-9 >= amount for name, amount in ask.items() if amount > 0)
                       for cap in self.capacities):
                wants = ", ".join(f"{k}={v}" for k, v in task.requests)
                return f"a pod of task {task.name} ({wants}) fits no node of cluster {self.name}"
        gang = job.min_available if job.min_available is not None else job.pods
        smallest = sorted(p for t in job.tasks for p in [t.gpus_per_pod] * t.replicas)[:gang]
        if sum(smallest) > self.gpus_total + 1e-9:
            return (f"the gang needs at least {sum(smallest):g} GPUs, cluster {self.name} has "
                    f"{self.gpus_total:g}")
        return ""
