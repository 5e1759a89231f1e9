"""Placement speed with network topology (issue 35): p50/p99 per placement at 10/100 clusters.

Each cluster is built as an agent reports it: ``NODES`` nodes of 8 GPUs under leaves of 8 nodes
and spines of 4 leaves (``hyperNodes:``), a random part of its GPUs in use, ``status.topology``
from ``member_agent.topology_status`` read by the federation's adapter. Jobs (1-16 pods of 1, 2,
4 or 8 GPUs, half of them master+worker gangs) cycle through: no topology, hard tier 1, hard
tier 2, hard without a tier (the cluster's top), soft; policies cycle through static weights,
dynamic weight and aggregated. The same jobs are placed without their networkTopology for the
baseline. Every job has its own UID and size, against one snapshot (as the controller does).
Latencies are the process's CPU time per placement (the machine is shared; wall time under load
measures the neighbours).

Run: ``python bench/placement_topology.py [--jobs N] [--clusters 10,100]``. Prints figures only.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.topology_builders, run from anywhere

from bench.placement import make_job, static_spec  # noqa: E402
from federation.placement.place import Placer  # noqa: E402
from federation.placement.request import ClusterState, JobTopology, PlacementRequest, PlacementSpec  # noqa: E402
from tests.topology_builders import topo_cluster  # noqa: E402

NODES = 64
TOPOLOGIES = [None, JobTopology("hard", 1), JobTopology("hard", 2), JobTopology("hard"), JobTopology("soft")]


def make_clusters(n: int, rng: random.Random) -> tuple[ClusterState, ...]:
    out = []
    for i in range(n):
        busy = [(node, rng.choice([0, 0, 2, 4, 8])) for node in range(NODES)]
        out.append(topo_cluster(f"member-{i:03d}", NODES, leaf=8, spine=4, busy=[b for b in busy if b[1]]))
    return tuple(out)


def latencies(placer: Placer, requests: list[PlacementRequest]) -> tuple[list[float], int]:
    """CPU ms per placement, in request order, and how many were placed."""
    placer.place(requests[0])  # the snapshot's table, once
    out, placed = [], 0
    for request in requests:
        start = time.process_time()  # CPU time: the shared machine's load does not inflate it
        placed += placer.place(request).ok
        out.append((time.process_time() - start) * 1e3)
    return out, placed


def figures(values: list[float]) -> tuple[float, float, float]:
    values = sorted(values)
    return statistics.median(values), values[min(len(values) - 1, int(0.99 * len(values)))], values[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--jobs", type=int, default=500)
    parser.add_argument("--clusters", default="10,100")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    print(f"{'clusters':>8}  {'run':>16}  {'p50 ms':>8}  {'p99 ms':>8}  {'max ms':>8}  {'placed':>10}")
    for n in (int(x) for x in args.clusters.split(",")):
        rng = random.Random(args.seed)
        clusters = make_clusters(n, rng)
        specs = [static_spec(clusters, rng), PlacementSpec(strategy="DynamicWeight"),
                 PlacementSpec(strategy="Aggregated")]
        jobs = [replace(make_job(i, rng, gang=i % 2 == 0), topology=TOPOLOGIES[i % len(TOPOLOGIES)])
                for i in range(args.jobs)]
        with_topology = [PlacementRequest(j, specs[i % 3], clusters) for i, j in enumerate(jobs)]
        plain = [replace(r, job=replace(r.job, topology=None)) for r in with_topology]
        for label, requests in (("no topology", plain), ("networkTopology", with_topology)):
            values, placed = latencies(Placer(), requests)
            p50, p99, worst = figures(values)
            print(f"{n:>8}  {label:>16}  {p50:>8.2f}  {p99:>8.2f}  {worst:>8.2f}  {placed:>4}/{len(requests):<5}")
        for kind in TOPOLOGIES[1:]:  # the same run, per networkTopology kind
            mine = [v for v, r in zip(values, with_topology, strict=True) if r.job.topology == kind]
            p50, p99, worst = figures(mine)
            label = f"{kind.mode} {kind.highest_tier or 'top'}"
            print(f"{n:>8}  {label:>16}  {p50:>8.2f}  {p99:>8.2f}  {worst:>8.2f}  {len(mine):>10}")


if __name__ == "__main__":
    main()
