"""Preemption-heavy and reclaim-heavy scheduler sessions (scheduler part 2).

Every GPU node is full of low-priority *elastic* jobs (two per node, minMember 1, 2 pods of 2 GPUs); CPU
nodes hold nothing. Pending high-priority gangs (1–8 pods of 2 or 4 GPUs, ``--pods`` pods in
all, default nodes / 5) must evict to start:

* ``preempt``: everything is in one queue; the pending gangs have priority 1000, the
  running jobs 10 (preempt action, within the queue);
* ``reclaim``: the running jobs fill queue ``batch`` (reclaimable); the pending gangs are in
  queue ``training``, whose deserved share is untouched (reclaim action, across queues).

Prints snapshot build time, session seconds (wall and CPU), evictions, pipelined pods.

    python bench/scheduler_evictions.py --workload preempt --nodes 5000
    python bench/scheduler.py --workload reclaim --nodes 5000     # same, through the main script
"""

from __future__ import annotations

import argparse
import random
import resource
import sys
import time
from typing import Any

from member_agent.scheduler import SessionOptions, build_snapshot, run_cycle
from policies.scheduler_conf import parse_scheduler_conf

CONF = parse_scheduler_conf("""
actions: "enqueue, allocate, backfill, preempt, reclaim"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: binpack
""")


class Clock:
    """Wall-clock durations for the benchmark (the pure core only reads what it is given)."""

    def now(self) -> float:
        return 1_780_000_000.0

    def monotonic(self) -> float:
        return time.perf_counter()


def _pod(name: str, group: str, gpus: int, priority: int, node: str | None) -> dict[str, Any]:
    requests = {"cpu": "8", "memory": "64Gi", "nvidia.com/gpu": gpus}
    spec: dict[str, Any] = {"schedulerName": "volcano", "priority": priority,
                            "containers": [{"name": "main", "resources": {"requests": requests, "limits": dict(requests)}}]}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "bench",
                         "annotations": {"scheduling.k8s.io/group-name": group, "volcano.sh/task-spec": "worker"}},
            "spec": spec, "status": {"phase": "Running" if node else "Pending"}}


def _group(name: str, queue: str, min_member: int, phase: str, priority_class: str) -> dict[str, Any]:
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "bench"},
            "spec": {"minMember": min_member, "queue": queue, "priorityClassName": priority_class},
            "status": {"phase": phase}}


def workload(kind: str, nodes: int, pending: int, rng: random.Random) -> list[dict[str, Any]]:
    running_queue, pending_queue = ("research", "research") if kind == "preempt" else ("batch", "training")
    objs: list[dict[str, Any]] = [
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "low"}, "value": 10},
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"}, "value": 1000},
    ]
    for name in {running_queue, pending_queue}:
        objs.append({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": name},
                     "spec": {"weight": 1, "reclaimable": True}})
    gpu_nodes = []
    for i in range(nodes):
        name = f"node-{i:05d}"
        cpu_only = i % 10 == 9
        alloc = {"cpu": "128", "memory": "1000Gi", "pods": "110"}
        if not cpu_only:
            alloc["nvidia.com/gpu"] = "8"
            gpu_nodes.append(name)
        objs.append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"pool": "cpu" if cpu_only else "gpu"}},
                     "status": {"allocatable": alloc}})
    # Two elastic jobs (minMember 1, 2 pods of 2 GPUs) per GPU node: every GPU is taken.
    for i, node in enumerate(gpu_nodes):
        for half in range(2):
            group = f"low-{i:05d}-{half}"
            objs.append(_group(group, running_queue, 1, "Running", "low"))
            objs += [_pod(f"{group}-worker-{k}", group, 2, 10, node) for k in range(2)]
    made = j = 0
    while made < pending:
        size = min(rng.randint(1, 8), pending - made)
        gpus = rng.choice((2, 4))
        group = f"high-{j:05d}"
        objs.append(_group(group, pending_queue, size, "Inqueue", "high"))
        objs += [_pod(f"{group}-worker-{k}", group, gpus, 1000, None) for k in range(size)]
        made += size
        j += 1
    return objs


def run_eviction_workload(kind: str, nodes: int, pending: int, seed: int) -> None:
    rng = random.Random(seed)
    print(f"[{kind}: {nodes} nodes, full of low-priority pods; {pending} pending high-priority pods] generating ...", flush=True)
    objects = workload(kind, nodes, pending, rng)
    t0 = time.perf_counter()
    snapshot = build_snapshot(objects)
    build = time.perf_counter() - t0
    print(f"  snapshot built in {build:.2f}s ({len(snapshot.jobs)} jobs, {snapshot.task_count} pods); running the session ...",
          flush=True)
    cpu0 = time.process_time()
    result = run_cycle(snapshot, CONF, Clock(), options=SessionOptions(verbosity=0))
    cpu = time.process_time() - cpu0
    pipelined = sum(len(v) for v in result.pipelined.values())
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"  session {result.session_seconds:.3f}s wall ({cpu:.3f}s CPU)  evictions {len(result.evictions)}  "
          f"pipelined {pipelined}/{pending} pods in {len(result.pipelined)} gangs  peak RSS {rss:.0f} MiB", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workload", choices=("preempt", "reclaim"), action="append")
    parser.add_argument("--nodes", type=int, action="append", help="cluster size (repeatable; default 5000)")
    parser.add_argument("--pods", type=int, help="pending high-priority pods (default: nodes / 5)")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    for kind in args.workload or ["preempt", "reclaim"]:
        for nodes in args.nodes or [5000]:
            run_eviction_workload(kind, nodes, args.pods or nodes // 5, args.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
