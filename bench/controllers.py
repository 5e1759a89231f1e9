"""End to end through the API: N Jobs applied -> every Job's Works written (placement + dispatch).

Starts an in-process API server with the federation's placement and dispatch controllers,
registers C member clusters (node shapes, Ready), one ClusterPropagationPolicy (dynamic weight,
so Karmada's split depends on capacity and assumed shares), then creates N Jobs
(master + workers, or workers only with --single-task; 1 GPU per pod) with 32 requests in flight, and waits until every Job has its
Works. Prints jobs/s, the time to the last Work, and p50/p99 of apply -> Works latency.

Run: ``python bench/controllers.py [--jobs 1000] [--clusters 10]``. Prints figures only.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from federation.apiserver.server import ServerConfig
from federation.cli.compose import FederationServer
from federation.client import ResourceClient, api_client_from_dict
from federation.controllers.common import ControllerOptions
from federation.controllers.dispatch import dispatch_controller
from federation.controllers.placement import placement_controller
from federation.controllers.runner import Informer
from policies.kinds import lookup

JOBS = lookup("batch.volcano.sh/v1alpha1", "Job")
CLUSTERS = lookup("cluster.karmada.io/v1alpha1", "Cluster")
CPP = lookup("policy.karmada.io/v1alpha1", "ClusterPropagationPolicy")
WORKS = lookup("work.karmada.io/v1alpha1", "Work")


def cluster(name: str) -> dict[str, Any]:
    return {"apiVersion": CLUSTERS.api_version, "kind": "Cluster", "metadata": {"name": name},
            "spec": {"syncMode": "Pull"}}


def cluster_status(nodes: int) -> dict[str, Any]:
    return {"conditions": [{"type": "Ready", "status": "True", "reason": "ClusterReady",
                            "lastTransitionTime": "2026-01-01T00:00:00Z"}],
            "nodeShapes": [{"count": nodes, "free": {"cpu": "128", "memory": "1Ti", "nvidia.com/gpu": "8",
                                                   "pods": "110"}}]}


def job(i: int, gang: bool = True) -> dict[str, Any]:
    def task(name: str, replicas: int) -> dict[str, Any]:
        return {"name": name, "replicas": replicas, "template": {"spec": {"containers": [
            {"name": name, "image": "trainer:1", "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}}
    return {"apiVersion": JOBS.api_version, "kind": "Job", "metadata": {"name": f"bench-{i}"},
            "spec": {"schedulerName": "volcano",
                     "tasks": [task("master", 1), task("worker", 1 + i % 7)] if gang else [task("worker", 1 + i % 7)]}}


async def main(n_jobs: int, n_clusters: int, n_nodes: int, gang: bool) -> None:
    logging.basicConfig(level=logging.DEBUG if __import__("os").environ.get("BENCH_DEBUG") else logging.WARNING)
    options = ControllerOptions()
    with tempfile.TemporaryDirectory() as tmp:
        controllers = [lambda ctx: placement_controller(ctx, options), lambda ctx: dispatch_controller(ctx, options)]
        async with FederationServer(ServerConfig(data_dir=Path(tmp)), controllers=controllers) as server, \
                api_client_from_dict(server.kubeconfig()) as api:
            rc = ResourceClient(api, 60.0)
            for c in range(n_clusters):
                await rc.create(CLUSTERS, cluster(f"member-{c:03d}"))
                await rc.patch(CLUSTERS, f"member-{c:03d}", {"status": cluster_status(n_nodes)}, None, "status")
            await rc.create(CPP, {"apiVersion": CPP.api_version, "kind": CPP.kind, "metadata": {"name": "all"},
                                  "spec": {"resourceSelectors": [{"apiVersion": JOBS.api_version, "kind": "Job"}],
                                           "placement": {"replicaScheduling": {
                                               "replicaSchedulingType": "Divided",
                                               "replicaDivisionPreference": "Weighted",
                                               "weightPreference": {"dynamicWeight": "AvailableReplicas"}}}}})
            applied: dict[str, float] = {}
            done: dict[str, float] = {}
            gate = asyncio.Semaphore(32)

            async def create(i: int) -> None:
                async with gate:
                    applied[f"default.bench-{i}"] = time.perf_counter()
                    await rc.create(JOBS, job(i, gang), "default")

            def seen(_kind: str, work: dict[str, Any], _old: Any) -> None:
                done.setdefault(work["metadata"]["labels"]["caldera.io/job"], time.perf_counter())

            stop = asyncio.Event()
            works = Informer(rc, WORKS, seen)
            watcher = asyncio.create_task(works.run(stop))
            await works.synced.wait()
            start = time.perf_counter()
            await asyncio.gather(*(create(i) for i in range(n_jobs)))
            created = time.perf_counter() - start
            deadline = start + 300
            while len(done) < n_jobs and time.perf_counter() < deadline:
                await asyncio.sleep(0.1)
            stop.set()
            await watcher
            total = max(done.values()) - start if done else float("nan")
            lat = sorted(done[k] - applied[k] for k in done)
            print(f"jobs={n_jobs} ({'master+workers' if gang else 'workers only'}) clusters={n_clusters}x{n_nodes} "
                  f"nodes; created in {created:.1f}s "
                  f"({n_jobs / created:.0f}/s); with Works: {len(done)}/{n_jobs} after {total:.1f}s "
                  f"({len(done) / total:.0f} jobs/s)")
            if lat:
                print(f"apply -> Works latency p50 {statistics.median(lat) * 1000:.0f} ms, "
                      f"p99 {lat[int(len(lat) * 0.99) - 1] * 1000:.0f} ms")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--clusters", type=int, default=10)
    parser.add_argument("--nodes", type=int, default=64, help="nodes per cluster (8 GPUs each)")
    parser.add_argument("--single-task", action="store_true", help="jobs of one task (no multi-component gang)")
    args = parser.parse_args()
    asyncio.run(main(args.jobs, args.clusters, args.nodes, not args.single_task))
