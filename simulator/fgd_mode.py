"""The FGD protocol on openb (Weng et al., ATC'23): arrive in order, never leave, until saturated.

Pods are sampled with replacement from the pod list (``--seed``) until their GPU request
reaches ``load`` × cluster GPUs (1.3 in the paper), in random order. Each scheduling period
``batch`` pods arrive (as pending Pod objects, the events an informer would deliver); one
session of the member agent's scheduler runs on the cache's snapshot; bindings go back to the
cache as Running pods with their ``volcano.sh/gpu-index`` (what the agent writes); a pod the
session could not place is counted as rejected and withdrawn (it never retries).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Callable

import numpy as np

from member_agent.scheduler.cycle import run_cycle
from member_agent.scheduler.framework.session import SessionOptions
from member_agent.scheduler.framework.topology import GPU_INDEX_ANNOTATION
from member_agent.scheduler.scheduler_cache import SchedulerCache
from policies.scheduler_conf import SchedulerConf
from simulator.clock import VirtualClock
from simulator.openb import NodeRow, PodRow, node_object, pod_object

EPOCH = 1_700_000_000.0


@dataclass
class FgdRun:
    """What one replay measured (ratios of the cluster's GPUs)."""

    gpus_total: int
    pods: int = 0
    placed: int = 0
    rejected: int = 0
    arrived_gpus: float = 0.0
    allocated_gpus: float = 0.0
    sessions: int = 0
    first_rejection: dict[str, Any] | None = None
    first_rejection_by_gpus: dict[str, float] = field(default_factory=dict)
    series: list[tuple[float, float]] = field(default_factory=list)  # (arrived, allocated) ratios
    over_capacity_gpus: int = 0
    simulated_seconds: float = 0.0
    wall_seconds: float = 0.0

    def ratio(self, gpus: float) -> float:
        return gpus / self.gpus_total if self.gpus_total else 0.0

    def allocation_at(self, arrived: float) -> float | None:
        """Allocation when the arrived load first reached ``arrived`` (None: never)."""
        for a, alloc in self.series:
            if a >= arrived - 1e-12:
                return alloc
        return None


def sample(pods: list[PodRow], gpus_total: int, load: float, seed: int) -> list[PodRow]:
    """With replacement until the GPU request reaches ``load`` × capacity, in random order."""
    rng = np.random.default_rng(seed)
    out: list[PodRow] = []
    requested = 0.0
    while requested < load * gpus_total and pods:
        for i in rng.integers(0, len(pods), size=256).tolist():
            if requested >= load * gpus_total:
                break
            out.append(pods[i])
            requested += pods[i].gpus
    order = rng.permutation(len(out))
    return [out[i] for i in order]


def _stamp(t: float) -> str:
    return datetime.fromtimestamp(EPOCH + t, UTC).isoformat()


def commit_binding(cache: SchedulerCache, obj: dict[str, Any], result: Any) -> bool:
    """What the kubelet would make of one pending pod after a session: bound and Running on its node
    (with the GPU ids deviceshare chose), or gone when the session placed it nowhere (FGD protocol:
    a pod that fits nowhere is skipped). True when it was bound."""
    key = f"openb/{obj['metadata']['name']}"
    node = result.bindings.get(key)
    if node is None:
        cache.delete(obj)
        return False
    obj["spec"]["nodeName"] = node
    obj["status"]["phase"] = "Running"
    gpus = result.device_allocations.get(key, {}).get("gpus")
    if gpus:
        obj["metadata"]["annotations"][GPU_INDEX_ANNOTATION] = ",".join(map(str, gpus))
    cache.upsert(obj)
    return True


def run_fgd(nodes: list[NodeRow], pods: list[PodRow], conf: SchedulerConf, *, seed: int, load: float = 1.3,
            batch: int = 1, options: SessionOptions = SessionOptions(), workload_from_trace: bool = False,
            progress: Callable[[int, int], None] | None = None) -> FgdRun:
    started = time.perf_counter()
    gpus_total = sum(n.gpus for n in nodes)
    arrivals = sample(pods, gpus_total, load, seed)
    run = FgdRun(gpus_total=gpus_total, pods=len(arrivals))
    cache = SchedulerCache(resources=("nvidia.com/gpu", "nvidia.com/gpucores"))
    for node in nodes:
        cache.upsert(node_object(node))
    if workload_from_trace:  # the paper's target workload: the pod list's request distribution
        for i, pod in enumerate(pods):
            cache.observe(pod_object(pod, f"seen-{i}", _stamp(0)))
    clock = VirtualClock(EPOCH)
    for start in range(0, len(arrivals), batch):
        chunk = [(start + i, pod) for i, pod in enumerate(arrivals[start:start + batch])]
        objects = {}
        for i, pod in chunk:
            obj = objects[i] = pod_object(pod, f"{pod.name}-{i:06d}", _stamp(i))
            cache.upsert(obj)
            run.arrived_gpus += pod.gpus
        clock.advance_to(EPOCH + chunk[-1][0] + 1)
        result = run_cycle(cache.snapshot(), conf, clock, options=options)
        run.sessions += 1
        for i, pod in chunk:
            if not commit_binding(cache, objects[i], result):
                _reject(run, pod)
                continue
            run.placed += 1
            run.allocated_gpus += pod.gpus
        run.series.append((run.ratio(run.arrived_gpus), run.ratio(run.allocated_gpus)))
        if progress is not None:
            progress(min(start + batch, len(arrivals)), len(arrivals))
    run.over_capacity_gpus = _over_capacity(cache)
    run.simulated_seconds = clock.now() - EPOCH
    run.wall_seconds = time.perf_counter() - started
    return run


def _reject(run: FgdRun, pod: PodRow) -> None:
    run.rejected += 1
    here = run.ratio(run.allocated_gpus)
    if run.first_rejection is None:
        run.first_rejection = {"allocationRatio": here, "gpus": pod.gpus}
    run.first_rejection_by_gpus.setdefault(f"{pod.gpus:g}", here)


def _over_capacity(cache: SchedulerCache) -> int:
    """GPUs whose folded use exceeds 100 % of cores or holds two exclusive pods (must be 0)."""
    bad = 0
    for usage in cache.device_usage().values():
        for cores, holders, exclusive in zip(usage.cores_used, usage.holders, usage.exclusive, strict=True):
            if cores > 100 + 1e-6 or (exclusive and holders > 1):
                bad += 1
    return bad
