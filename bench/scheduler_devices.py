"""GPU-sharing and NUMA session benchmark (scheduler part 2: deviceshare + numa-aware).

Nodes are 8-GPU A100 HAMi nodes with two NUMA nodes, NVLink pairs, the static CPU manager
and the best-effort topology policy (the simulator's ``caldera.io/topology`` annotation).
Pending gangs of 1–8 Guaranteed pods cycle through three shapes: a shared 10 GB / 20 %
vGPU, 2 whole GPUs, 4 whole GPUs, all with ``topologyPolicy: best-effort``. Prints snapshot
build time, session seconds (wall and CPU), pods bound and pods given GPU ids.

    python bench/scheduler_devices.py --nodes 5000 --pods 10000
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from typing import Any

from member_agent.scheduler import SessionOptions, build_snapshot, run_cycle
from policies.cluster_layout import build_topology
from policies.scheduler_conf import parse_scheduler_conf

CONF = parse_scheduler_conf("""
actions: "enqueue, allocate, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: drf}, {name: predicates}, {name: proportion}, {name: nodeorder}, {name: numa-aware}, {name: deviceshare}]
""")
SHAPES = (
    {"cpu": "4", "memory": "16Gi", "nvidia.com/gpumem": 10, "nvidia.com/gpucores": 20},
    {"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": 2},
    {"cpu": "16", "memory": "64Gi", "nvidia.com/gpu": 4},
)


class Clock:
    def now(self) -> float:
        return 1_780_000_000.0

    def monotonic(self) -> float:
        return time.perf_counter()


def objects(nodes: int, pods: int, rng: random.Random) -> list[dict[str, Any]]:
    info = {"product": "NVIDIA-A100-SXM4-80GB", "count": 8, "memoryGiB": 80, "sharing": "hami", "nvlink": "pairs"}
    topology = json.dumps(build_topology(128, 1024**4, 2, info,
                                         {"cpuManagerPolicy": "static", "topologyManagerPolicy": "best-effort"}))
    alloc = {"cpu": "128", "memory": "1Ti", "pods": "110", "nvidia.com/gpu": "8", "nvidia.com/gpumem": "640",
             "nvidia.com/gpucores": "800"}
    objs: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"node-{i:05d}", "annotations": {"caldera.io/topology": topology}},
         "status": {"allocatable": dict(alloc)}} for i in range(nodes)]
    made = j = 0
    while made < pods:
        size = min(rng.randint(1, 8), pods - made)
        requests = SHAPES[j % len(SHAPES)]
        group = f"job-{j:05d}"
        objs.append({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                     "metadata": {"name": group, "namespace": "bench"}, "spec": {"minMember": size}, "status": {"phase": "Inqueue"}})
        annotations = {"scheduling.k8s.io/group-name": group, "volcano.sh/numa-topology-policy": "best-effort"}
        for k in range(size):
            objs.append({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"{group}-worker-{k}", "namespace": "bench",
                                                                        "annotations": annotations},
                         "spec": {"containers": [{"name": "main", "resources": {"requests": requests, "limits": requests}}]},
                         "status": {"phase": "Pending"}})
        made += size
        j += 1
    return objs


def run(nodes: int, pods: int, seed: int) -> None:
    print(f"[{nodes} HAMi/NUMA nodes, {pods} pending pods] generating ...", flush=True)
    objs = objects(nodes, pods, random.Random(seed))
    t0 = time.perf_counter()
    snapshot = build_snapshot(objs)
    build = time.perf_counter() - t0
    cpu0 = time.process_time()
    result = run_cycle(snapshot, CONF, Clock(), options=SessionOptions(verbosity=0))
    cpu = time.process_time() - cpu0
    print(f"  snapshot {build:.2f}s  session {result.session_seconds:.3f}s wall ({cpu:.3f}s CPU)  "
          f"bound {len(result.bindings)}/{pods}  with GPU ids {len(result.device_allocations)}", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, action="append", help="cluster size (repeatable; default 5000)")
    parser.add_argument("--pods", type=int, help="pending pods (default: 2 per node)")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    for nodes in args.nodes or [5000]:
        run(nodes, args.pods or 2 * nodes, args.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
