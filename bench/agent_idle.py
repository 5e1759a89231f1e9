"""Idle footprint of one ``caldera agent --sim`` (a 16-node cluster) next to a real ``caldera serve``.

Starts both as real processes on loopback, waits until the agent is ready, lets it settle, then
reads its resident memory (``VmRSS``) and CPU time (utime + stime from ``/proc/PID/stat``) over a
window with no work at all, and which heavy libraries it has mapped (scipy, numpy, ...).

    python bench/agent_idle.py                 # 16 x 8 GPU nodes, 10 s settle, 30 s window
    python bench/agent_idle.py --jobs 8 --settle 40   # idle again after it ran 8 Jobs
    python bench/agent_idle.py --window 60 --cluster-file examples/clusters/cluster-b.yaml
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402

from federation.client import ResourceClient, api_client_from_dict  # noqa: E402
from federation.demo.observe import Timeline, snapshot, wait_clusters_ready  # noqa: E402
from federation.demo.processes import AGENT_LISTENING, ClusterSpec, System  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")
HEAVY = ("scipy", "numpy", "pandas", "highspy", "ortools", "pydantic_core", "yaml")


def cpu_seconds(pid: int) -> float:
    text = Path(f"/proc/{pid}/stat").read_text()
    fields = text[text.rfind(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def mapped_libraries(pid: int) -> list[str]:
    maps = Path(f"/proc/{pid}/maps").read_text()
    return [name for name in HEAVY if f"/{name}/" in maps or f"/{name}." in maps or f"_{name}" in maps]


def wait_ready(url: str, timeout: float) -> float:
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        try:
            with urllib.request.urlopen(f"{url}/readyz", timeout=2) as response:
                if response.status == 200:
                    return time.monotonic() - start
        except OSError:
            pass
        time.sleep(0.1)
    raise SystemExit(f"agent not ready within {timeout}s")


async def run_jobs(system: System, cluster: str, count: int, timeout: float = 300.0) -> None:
    """``count`` small Jobs (2 pods x 1 GPU, 2 s) through the federation, until every one finished."""
    from fleet import TERMINAL, apply, job, policies  # bench/fleet.py, next to this file

    async with api_client_from_dict(yaml.safe_load(system.kubeconfig.read_text())) as api:
        rc = ResourceClient(api, 30.0)
        await wait_clusters_ready(rc, [cluster], 60.0)
        for obj in policies([cluster], 1000):
            await apply(rc, obj)
        names = [f"idle-{i:03d}" for i in range(count)]
        for name in names:
            await apply(rc, job(name, 2, 1, 2.0, "ordinary"))
        timeline, deadline = Timeline(), time.monotonic() + timeout
        while not all(timeline.jobs.get(("Job", n)) and timeline.jobs[("Job", n)].finished for n in names):
            if time.monotonic() > deadline:
                raise SystemExit(f"the {count} Jobs did not finish within {timeout:g} s")
            timeline.observe(await snapshot(rc), TERMINAL)
            await asyncio.sleep(0.5)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cluster-file", type=Path, default=ROOT / "examples" / "clusters" / "cluster-b.yaml")
    parser.add_argument("--cluster", default="cluster-b")
    parser.add_argument("--settle", type=float, default=10.0, help="seconds after ready before measuring")
    parser.add_argument("--window", type=float, default=30.0, help="seconds of idle measurement")
    parser.add_argument("--jobs", type=int, default=0, help="small Jobs to run through the agent before measuring")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="caldera-idle-") as tmp:
        system = System(Path(tmp), [ClusterSpec(args.cluster, args.cluster_file)], speed=1.0)
        started = time.monotonic()
        try:
            system.start_federation()
            agent = system.start_agent(args.cluster)
            url = agent.wait_for(AGENT_LISTENING, 60).group(1)
            wait_ready(url, 60)
            ready_after = time.monotonic() - started
            if args.jobs:
                asyncio.run(run_jobs(system, args.cluster, args.jobs))
            time.sleep(args.settle)
            pid = agent.pid
            cpu0, t0 = cpu_seconds(pid), time.monotonic()
            time.sleep(args.window)
            cpu1, t1 = cpu_seconds(pid), time.monotonic()
            with urllib.request.urlopen(f"{url}/status", timeout=5) as response:
                reported = json.load(response).get("nodes")
            nodes = reported if isinstance(reported, int) else len(reported or [])
            result = {"nodes": nodes, "jobs_run_before": args.jobs, "ready_after_s": round(ready_after, 1),
                      "idle_rss_mib": round(rss_mib(pid), 1),
                      "idle_cpu_percent_of_a_core": round(100 * (cpu1 - cpu0) / (t1 - t0), 2),
                      "window_s": args.window, "heavy_libraries_mapped": mapped_libraries(pid)}
        finally:
            system.stop()
    print(f"agent idle footprint ({result['nodes']} sim nodes, {args.window:.0f} s window, "
          f"after {args.jobs} Jobs and {args.settle:g} s):")
    print(f"  ready after start      {result['ready_after_s']} s (federation and agent processes)")
    print(f"  resident memory (RSS)  {result['idle_rss_mib']} MiB")
    print(f"  CPU while idle         {result['idle_cpu_percent_of_a_core']} % of a core")
    print(f"  heavy libraries mapped {', '.join(result['heavy_libraries_mapped']) or 'none'}")
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
