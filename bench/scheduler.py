"""Session-scheduler benchmark: synthetic GPU clusters and pending gang jobs.

Builds clusters of GPU nodes (8 GPUs, 64–128 CPU, several pools labelled with the GPU
product) plus CPU-only nodes, and pending gang jobs of 1–32 pods across several queues,
then runs one session with the seed's default configuration plus binpack. Prints snapshot
build time, session seconds, pods bound per second and peak RSS for each size.

    python bench/scheduler.py                 # 1k, 2k and 5k nodes, 2 pending pods per node
    python bench/scheduler.py --nodes 5000 --pods 10000
    python bench/scheduler.py --nodes 5000 --shapes per-job   # every job its own request
    python bench/scheduler.py --shapes per-job --nodes 1000 --nodes 5000 --nodes 20000 --isolate
                                              # one process per size: per-size peak RSS, growth exponents
    python bench/scheduler.py --workload preempt --nodes 5000  # full cluster: gangs preempt (scheduler_evictions.py)
    python bench/scheduler.py --workload reclaim --nodes 5000  # full cluster: gangs reclaim from another queue
    python bench/scheduler.py --topology      # 5k nodes in 3 tiers of HyperNodes, 10k gang pods, and without
    python bench/scheduler.py --mixed         # issue 41: 5k nodes 45 % H100 / 45 % A100 / 10 % CPU, 10k pods,
                                              # queues 3/1/2 (bench/scheduler_mixed.py)
    python bench/scheduler.py --mixed --shapes per-job --nodes 20000   # one shape per job, 40k pods, all bound
    python bench/scheduler.py --mixed --nodes 5000 --write-state /tmp/state.yaml   # for `caldera schedule -f`
    python bench/scheduler_digest.py          # decisions of the bench sessions, hashed: compare before/after a change

``--shapes templates`` (default) draws pod requests from six templates, so the session sees
six distinct task shapes; ``--shapes per-job`` gives every job its own cpu request (one shape
per job, hundreds in all) to show the cost growing with nodes x distinct shapes, not pods.
Peak RSS is the process's high-water mark: ``--isolate`` runs each size in its own process
and prints the growth exponents of session CPU time and peak RSS against nodes.
``--percentage-nodes-to-find`` etc. are the scheduler's flags (default: Volcano's adaptive bound).
``--count-rows`` also prints the node-search work (rows visited, shape-rows evaluated) and, with
``--isolate``, its growth exponents: counts do not move with the machine's load.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import resource
import subprocess
import sys
import time
from contextlib import nullcontext
from typing import Any

from row_counts import RowCounts, counting
from scheduler_mixed import mixed_cluster, mixed_jobs, worker_pods, write_state

from member_agent.scheduler import SessionOptions, build_snapshot, run_cycle
from member_agent.session_gc import relaxed_gc
from policies.scheduler_conf import parse_scheduler_conf

#: the benchmark's conf, also the base of the topology run (bench/scheduler_topology.py)
CONF_TEXT = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: binpack
    arguments:
      binpack.weight: 10
      binpack.resources: nvidia.com/gpu
      binpack.resources.nvidia.com/gpu: 2
"""
CONF = parse_scheduler_conf(CONF_TEXT)

POOLS = (("A100", 128, "1000Gi"), ("H100", 96, "2000Gi"), ("L40S", 64, "512Gi"))
QUEUES = ("research", "training", "inference", "batch")
#: Pod templates: (cpu, memory, gpus, pool or None).
TEMPLATES = (("8", "64Gi", 1, None), ("16", "128Gi", 2, "A100"), ("32", "256Gi", 4, "H100"),
             ("12", "96Gi", 1, "L40S"), ("64", "512Gi", 8, None), ("4", "16Gi", 0, None))


class Clock:
    """Wall-clock durations for the benchmark (the pure core only reads what it is given)."""

    def now(self) -> float:
        return 1_780_000_000.0

    def monotonic(self) -> float:
        return time.perf_counter()


def cluster(nodes: int, rng: random.Random) -> list[dict[str, Any]]:
    objs: list[dict[str, Any]] = []
    for i in range(nodes):
        if i % 10 == 9:  # a CPU-only pool
            alloc = {"cpu": "64", "memory": "256Gi", "pods": "110"}
            labels = {"pool": "cpu"}
        else:
            product, cpu, memory = POOLS[i % 3]
            alloc = {"cpu": str(cpu), "memory": memory, "nvidia.com/gpu": "8", "pods": "110"}
            labels = {"pool": "gpu", "nvidia.com/gpu.product": f"NVIDIA-{product}"}
        objs.append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"node-{i:05d}", "labels": labels},
                     "status": {"allocatable": alloc}})
    for q, name in enumerate(QUEUES):
        objs.append({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": name},
                     "spec": {"weight": q + 1}})
    return objs


def jobs(pods: int, rng: random.Random, per_job_shapes: bool = False) -> list[dict[str, Any]]:
    objs: list[dict[str, Any]] = []
    made = j = 0
    while made < pods:
        size = min(rng.randint(1, 32), pods - made)
        cpu, memory, gpus, pool = TEMPLATES[j % len(TEMPLATES)]
        if per_job_shapes:  # a distinct request per job: slightly less cpu than the template
            cpu = f"{int(cpu) * 1000 - (j % 997) - 1}m"
        name = f"job-{j:05d}"
        objs.append({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                     "metadata": {"name": name, "namespace": "bench"},
                     "spec": {"minMember": size, "queue": QUEUES[j % len(QUEUES)]}, "status": {"phase": "Inqueue"}})
        requests: dict[str, Any] = {"cpu": cpu, "memory": memory}
        if gpus:
            requests["nvidia.com/gpu"] = gpus
        objs.extend(worker_pods(name, size, requests, {"nvidia.com/gpu.product": f"NVIDIA-{pool}"} if pool else None))
        made += size
        j += 1
    return objs


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run(nodes: int, pods: int, seed: int, per_job_shapes: bool = False,
        options: SessionOptions = SessionOptions(), count_rows: bool = False, mixed: bool = False,
        state_path: str | None = None) -> tuple[float, float, RowCounts]:
    rng = random.Random(seed)
    print(f"[{nodes} nodes, {pods} pending pods{', issue 41 mix' if mixed else ''}] generating objects ...", flush=True)
    if mixed:
        objects = mixed_cluster(nodes) + mixed_jobs(pods, rng, per_job_shapes)
    else:
        objects = cluster(nodes, rng) + jobs(pods, rng, per_job_shapes)
    if state_path:
        write_state(state_path, objects, CONF_TEXT)
        print(f"  state written to {state_path}", flush=True)
    t0 = time.perf_counter()
    snapshot = build_snapshot(objects)
    build = time.perf_counter() - t0
    shapes = len({task.shape for job in snapshot.jobs for task in job.tasks})
    print(f"  snapshot built in {build:.2f}s ({len(snapshot.jobs)} jobs, {shapes} distinct task shapes); "
          "running the session ...", flush=True)
    with counting() if count_rows else nullcontext(RowCounts()) as counts:
        cpu0 = time.process_time()
        with relaxed_gc():  # as `caldera schedule` and the agent run a session
            result = run_cycle(snapshot, CONF, Clock(), options=options)
        cpu = time.process_time() - cpu0
    bound = len(result.bindings)
    secs = result.session_seconds
    # CPU seconds are the figure to compare on a shared machine (wall time includes waiting for a core)
    print(f"  session {secs:.3f}s wall ({cpu:.3f}s CPU)  bound {bound}/{pods} pods  "
          f"{bound / secs if secs else 0:,.0f} pods/s ({bound / cpu if cpu else 0:,.0f} per CPU-s)  "
          f"peak RSS {peak_rss_mib():.0f} MiB", flush=True)
    if count_rows:
        print(counts.line(), flush=True)
    return cpu, peak_rss_mib(), counts


def growth(sizes: list[int], figures: list[float], what: str = "CPU time") -> None:
    """The log-log slope of a figure against nodes between consecutive sizes (1 = linear)."""
    for i in range(1, len(sizes)):
        n0, c0, n1, c1 = sizes[i - 1], figures[i - 1], sizes[i], figures[i]
        if n1 > n0 and c0 > 0 and c1 > 0:
            print(f"  growth {n0} -> {n1} nodes: {what} ~ nodes^{math.log(c1 / c0) / math.log(n1 / n0):.2f}")


def isolated(args: argparse.Namespace, sizes: list[int]) -> None:
    """Each size in a fresh process (peak RSS per size), then the growth exponents."""
    cpu, rss, visited, evaluated = [], [], [], []
    for nodes in sizes:
        argv = [sys.executable, __file__, "--nodes", str(nodes), "--seed", str(args.seed), "--shapes", args.shapes,
                *(["--mixed"] if args.mixed else []),
                "--percentage-nodes-to-find", str(args.percentage_nodes_to_find),
                "--minimum-feasible-nodes", str(args.minimum_feasible_nodes),
                "--minimum-percentage-nodes-to-find", str(args.minimum_percentage_nodes_to_find), "--figures-json"]
        if args.pods:
            argv += ["--pods", str(args.pods)]
        if args.count_rows:
            argv.append("--count-rows")
        out = subprocess.run(argv, check=True, capture_output=True, text=True).stdout.splitlines()
        print("\n".join(line for line in out if not line.startswith("{")), flush=True)
        figures = json.loads(next(line for line in out if line.startswith("{")))
        cpu.append(figures["cpu"])
        rss.append(figures["rss"])
        visited.append(figures["visited"])
        evaluated.append(figures["evaluated"])
    print(f"shapes={args.shapes}: " + ", ".join(f"{n} nodes {c:.2f} s CPU / {r:.0f} MiB"
                                                for n, c, r in zip(sizes, cpu, rss, strict=True)))
    growth(sizes, cpu)
    growth(sizes, rss, "peak RSS")
    if args.count_rows:
        growth(sizes, visited, "rows visited")
        growth(sizes, evaluated, "shape-rows evaluated")


def main(argv: list[str] | None = None) -> int:
    from member_agent import node_search_flags

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, action="append", help="cluster size (repeatable; default 1000, 2000, 5000)")
    parser.add_argument("--pods", type=int, help="pending pods (default: 2 per node)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--shapes", choices=("templates", "per-job"), default="templates",
                        help="pod requests from six templates (default) or one distinct request per job")
    parser.add_argument("--workload", choices=("allocate", "preempt", "reclaim"), default="allocate",
                        help="allocate (default): pending gangs on an empty cluster; preempt/reclaim: a full cluster "
                             "where pending gangs must evict (bench/scheduler_evictions.py; --pods default nodes/5)")
    parser.add_argument("--mixed", action="store_true",
                        help="issue 41's workload: 45 %% H100 / 45 %% A100 / 10 %% CPU-only nodes, queues 3/1/2, "
                             "gangs of 1-32 pods with 0-8 GPUs (bench/scheduler_mixed.py; default 5000 nodes)")
    parser.add_argument("--write-state", metavar="FILE", help="also write the objects and conf as a state file "
                                                             "for `caldera schedule -f FILE -o json`")
    parser.add_argument("--isolate", action="store_true", help="run each size in its own process (per-size peak RSS)")
    parser.add_argument("--count-rows", action="store_true",
                        help="also count rows visited by node searches and shape-rows evaluated (load-independent)")
    parser.add_argument("--figures-json", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--topology", action="store_true",
                        help="network topology: gangs in 3 tiers of HyperNodes, and the same workload without them "
                             "(bench/scheduler_topology.py; default 5000 nodes, 2 pods per node)")
    node_search_flags.add_flags(parser)
    args = parser.parse_args(argv)
    if args.topology:
        from scheduler_topology import main_topology

        return main_topology(args.nodes or [5000], args.pods, args.seed)
    if args.workload != "allocate":
        from scheduler_evictions import run_eviction_workload

        for nodes in args.nodes or [5000]:
            run_eviction_workload(args.workload, nodes, args.pods or nodes // 5, args.seed)
        return 0
    sizes = args.nodes or ([5000] if args.mixed else [1000, 2000, 5000])
    if args.isolate:
        isolated(args, sizes)
        return 0
    options = node_search_flags.session_options(args)
    runs = [run(nodes, args.pods or 2 * nodes, args.seed, args.shapes == "per-job", options, args.count_rows,
                args.mixed, args.write_state) for nodes in sizes]
    cpu = [figures[0] for figures in runs]
    if args.figures_json:
        last = runs[-1][2]
        print(json.dumps({"cpu": cpu[-1], "rss": peak_rss_mib(), "visited": last.visited, "evaluated": last.evaluated}))
    growth(sizes, cpu)
    return 0


if __name__ == "__main__":
    sys.exit(main())
