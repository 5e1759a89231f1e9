"""Status aggregation speed: aggregations/s of the pure core, and GET /status build time.

    python bench/status_aggregate.py [--jobs 1000] [--clusters 4]

Prints figures; asserts nothing (tests never time things).
"""

from __future__ import annotations

import argparse
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from federation.controllers.status_aggregate import aggregate  # noqa: E402
from federation.status_api import status_document  # noqa: E402
from tests.federation_status.builders import binding, cluster, job, lease, work  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--clusters", type=int, default=4)
    args = parser.parse_args()
    now = datetime(2026, 12, 2, 10, 5, tzinfo=UTC)
    names = [f"c{i}" for i in range(args.clusters)]
    inputs = []
    for j in range(args.jobs):
        name = f"job-{j}"
        rb = binding(name, 1, {c: {"worker": [4, 4]} for c in names})
        works = [work(name, c, 1, "Running" if (j + i) % 3 else "Pending", running=4, hold=len(names),
                      gang={"phase": "Reserved"}) for i, c in enumerate(names)]
        inputs.append((job(name), rb, works))
    start = time.perf_counter()
    results = [aggregate(jb, rb, works, now) for jb, rb, works in inputs]
    first = time.perf_counter() - start
    start = time.perf_counter()
    for (jb, rb, works), res in zip(inputs, results, strict=True):
        aggregate(dict(jb, status=res.status), rb, works, now)
    again = time.perf_counter() - start
    jobs = [dict(jb, status=res.status) for (jb, _rb, _w), res in zip(inputs, results, strict=True)]
    clusters = [cluster(c, gpus=[{"product": "A100", "total": 64, "free": 8}]) for c in names]
    leases = [lease(c, "2026-12-02T10:04:59Z") for c in names]
    start = time.perf_counter()
    status_document(clusters, leases, jobs, [rb for _j, rb, _w in inputs], now)
    doc_seconds = time.perf_counter() - start
    print(f"jobs={args.jobs} clusters/job={args.clusters}")
    print(f"aggregate (first, phase change): {args.jobs / first:,.0f} jobs/s ({first * 1e6 / args.jobs:.0f} us/job)")
    print(f"aggregate (steady, no change):   {args.jobs / again:,.0f} jobs/s ({again * 1e6 / args.jobs:.0f} us/job)")
    print(f"GET /status document:            {doc_seconds * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
