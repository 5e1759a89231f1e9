"""Placement speed at 10, 100 and 500 clusters.

* fast path: Karmada's split fits (static weights, dynamic weight, aggregated; single-task
  and master/worker gangs, every strategy seeing both, so dynamic weight and aggregated run the
  multi-task gang-set estimate), reported as placements per second over a stream of jobs with
  distinct UIDs and sizes against one cluster snapshot (as the placement controller does);
* optimizer path: the static split does not fit (the heaviest-weighted clusters are
  fragmented), every problem distinct so the answer cache never hits; p50/p99 latency.

Run: ``python bench/placement.py [--jobs N] [--clusters 10,100,500]``. Prints figures only.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from federation.placement.place import Placer
from federation.placement.request import (
    ClusterAffinity,
    ClusterState,
    JobDemand,
    NodeShape,
    PlacementRequest,
    PlacementSpec,
    StaticWeight,
    TaskDemand,
    labels,
    resources,
)

GPU = "nvidia.com/gpu"


def nodes(count: int, gpus: int, product: str) -> NodeShape:
    free = {"cpu": 128_000.0, "memory": float(1 << 40), GPU: gpus * 1000.0, "pods": 110.0}
    return NodeShape(count, resources(free), labels({"nvidia.com/gpu.product": product}))


def make_clusters(n: int, rng: random.Random, fragmented: bool) -> tuple[ClusterState, ...]:
    out = []
    for i in range(n):
        product = "A100" if i % 2 else "H100"
        if fragmented and i % 3 == 0:  # a third of the clusters: no node with 8 free GPUs
            shapes = (nodes(rng.randint(4, 16), 4, product), nodes(rng.randint(1, 4), 2, product))
        else:
            shapes = (nodes(rng.randint(4, 16), 8, product), nodes(rng.randint(0, 8), 4, product))
        out.append(ClusterState(name=f"member-{i:03d}", labels=labels({"pool": f"p{i % 4}"}),
                                region=f"r{i % 5}", node_shapes=shapes))
    return tuple(out)


def make_job(i: int, rng: random.Random, gang: bool) -> JobDemand:
    gpus = rng.choice([1, 2, 4, 8])
    replicas = rng.randint(2, 16)
    if gang:
        tasks = (TaskDemand("master", 1, 1, resources({"cpu": 4000.0, "pods": 1.0})),
                 TaskDemand("worker", replicas, replicas, resources({GPU: gpus * 1000.0, "pods": 1.0})))
    else:
        tasks = (TaskDemand("worker", replicas, replicas, resources({GPU: gpus * 1000.0, "pods": 1.0})),)
    return JobDemand("bench", f"job-{i}", f"uid-{i:08d}", tasks, sum(t.min_available for t in tasks))


def static_spec(clusters: tuple[ClusterState, ...], rng: random.Random, heavy: list[str] | None = None) -> PlacementSpec:
    weights = []
    for c in clusters:
        w = rng.randint(1, 3)
        if heavy is not None:
            w = 50 if c.name in heavy else 1
        weights.append(StaticWeight(ClusterAffinity(cluster_names=(c.name,)), w))
    return PlacementSpec(strategy="StaticWeight", static_weights=tuple(weights))


def fast_path(n: int, jobs: int, seed: int) -> tuple[float, float, int]:
    rng = random.Random(seed)
    clusters = make_clusters(n, rng, fragmented=False)
    specs = [static_spec(clusters, rng), PlacementSpec(strategy="DynamicWeight"),
             PlacementSpec(strategy="Aggregated")]
    requests = [PlacementRequest(make_job(i, rng, gang=i % 2 == 0), specs[i % 3], clusters) for i in range(jobs)]
    placer = Placer()
    placer.place(requests[0])  # builds the snapshot's table once, as the controller does per change
    start = time.perf_counter()
    decisions = [placer.place(r) for r in requests]
    elapsed = time.perf_counter() - start
    karmada = sum(1 for d in decisions if d.path == "karmada")
    return jobs / elapsed, elapsed / jobs * 1e3, karmada


def optimizer_path(n: int, jobs: int, seed: int) -> tuple[float, float, float, int, int]:
    rng = random.Random(seed)
    clusters = make_clusters(n, rng, fragmented=True)
    fragmented = [c.name for i, c in enumerate(clusters) if i % 3 == 0]
    placer = Placer()
    latencies = []
    via_optimizer = 0
    failed = 0
    for i in range(jobs):
        heavy = rng.sample(fragmented, k=min(3, len(fragmented)))
        spec = static_spec(clusters, rng, heavy)
        job = make_job(i, rng, gang=i % 2 == 0)
        big = TaskDemand("worker", rng.randint(8, 24), 0, resources({GPU: 8000.0, "pods": 1.0}))
        job = JobDemand(job.namespace, job.name, job.uid, job.tasks[:-1] + (big,), len(job.tasks) - 1)
        request = PlacementRequest(job, spec, clusters)
        start = time.perf_counter()
        decision = placer.place(request)
        latencies.append((time.perf_counter() - start) * 1e3)
        via_optimizer += decision.path == "optimizer"
        failed += not decision.ok
    latencies.sort()
    p50 = statistics.median(latencies)
    p99 = latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))]
    return p50, p99, max(latencies), via_optimizer, failed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--jobs", type=int, default=2000, help="placements per fast-path run")
    parser.add_argument("--optimizer-jobs", type=int, default=200, help="placements per optimizer-path run")
    parser.add_argument("--clusters", default="10,100,500")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    print(f"{'clusters':>8}  {'fast placements/s':>17}  {'fast ms/placement':>17}  {'karmada path':>12}  "
          f"{'opt p50 ms':>10}  {'opt p99 ms':>10}  {'opt max ms':>10}  {'via optimizer':>13}  {'unschedulable':>13}")
    for n in (int(x) for x in args.clusters.split(",")):
        rate, per, karmada = fast_path(n, args.jobs, args.seed)
        p50, p99, worst, via, failed = optimizer_path(n, args.optimizer_jobs, args.seed)
        print(f"{n:>8}  {rate:>17.0f}  {per:>17.3f}  {karmada:>5}/{args.jobs:<6}  {p50:>10.2f}  {p99:>10.2f}  "
              f"{worst:>10.2f}  {via:>6}/{args.optimizer_jobs:<6}  {failed:>13}")


if __name__ == "__main__":
    main()
