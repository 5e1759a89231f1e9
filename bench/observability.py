"""Cost of one Prometheus scrape of the fleet gauges, and of the dashboard's overview document.

    python bench/observability.py [--jobs 1000] [--clusters 4] [--rounds 5]

Both are computed from the store on every request (federation/fleet_metrics.py, federation/ui/data.py).
Prints figures; asserts nothing (tests never time things).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from prometheus_client import CollectorRegistry, generate_latest  # noqa: E402

from federation.fleet_metrics import FleetCollector  # noqa: E402
from federation.status_api import status_document  # noqa: E402
from federation.ui import data  # noqa: E402
from tests.federation_status.builders import binding, cluster, job, work  # noqa: E402

QUEUES = [{"name": f"q{i}", "allocated": {"nvidia.com/gpu": "8", "cpu": "32"},
           "capability": {"nvidia.com/gpu": "64", "cpu": "256", "memory": "1Ti"}} for i in range(8)]


def objects(jobs: int, clusters: int) -> dict[str, list[dict]]:  # type: ignore[type-arg]
    names = [f"c{i}" for i in range(clusters)]
    members = []
    for name in names:
        member = cluster(name, gpus=[{"product": "A100", "total": 512, "free": 100, "fragmented": 20}])
        member["status"]["queues"] = QUEUES
        member["status"]["resourceSummary"] = {"allocatable": {"cpu": "4096", "memory": "32Ti", "pods": "7040",
                                                               "nvidia.com/gpu": "512"},
                                               "allocated": {"cpu": "1000", "memory": "8Ti", "pods": "2000"}}
        members.append(member)
    jobs_, bindings, works = [], [], []
    for j in range(jobs):
        name = f"job-{j}"
        jobs_.append(job(name))
        placement = {c: {"worker": [2, 2]} for c in names}
        bindings.append(binding(name, 1, placement))
        works.extend(work(name, c, 1, "Running", hold=len(names)) for c in names)
    return {"Cluster": members, "Job": jobs_, "ResourceBinding": bindings, "Work": works}


def timed(fn, rounds: int) -> float:  # type: ignore[no-untyped-def]
    samples = []
    for _ in range(rounds):
        started = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--clusters", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    store = objects(args.jobs, args.clusters)
    registry = CollectorRegistry()
    registry.register(FleetCollector(lambda info: store[info.kind], time.time))
    body = generate_latest(registry)
    scrape = timed(lambda: generate_latest(registry), args.rounds)
    now = datetime.now(UTC)

    def overview() -> None:
        doc = status_document(store["Cluster"], [], store["Job"], store["ResourceBinding"], now)
        data.overview(doc, store["Cluster"], store["Work"], [])

    page = timed(overview, args.rounds)
    print(f"{args.jobs} jobs x {args.clusters} clusters ({len(store['Work'])} Works):")
    lines = body.count(b"\n")
    print(f"  fleet gauges, one scrape: {scrape * 1000:.1f} ms, {len(body) // 1024} KiB, {lines} lines")
    print(f"  /ui/api/overview document: {page * 1000:.1f} ms")


if __name__ == "__main__":
    main()
