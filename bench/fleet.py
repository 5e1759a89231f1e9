"""A fleet on this machine: real ``caldera serve`` + N ``caldera agent --sim`` processes on loopback.

Submits a Job mix through the API and reads, only through the API (every ``--poll`` seconds),
when each Job was placed, started and finished. Prints:

* makespan against the ideal: Σ GPU·s / fleet GPUs, rounded up to whole waves of ``--duration``;
* GPU-time utilisation: Σ GPU·s the Jobs ran / (fleet GPUs × makespan);
* p50/p99 delay from capacity freed (a cluster reporting GPUs free, or a Job seen finished, while others
  waited) to the next placement;
* per-priority start times, and how many pairs of Jobs that waited together started out of
  priority order;
* the agents' resident memory and CPU once the fleet is idle again.

The issue-20 scenarios (heavy: run each once):

    python bench/fleet.py                                   # 20 x (2 x 8 H100), 100 Jobs of 4 x 4 GPUs, 20 s
    python bench/fleet.py --agents 12 --nodes 1-3 --jobs 50 --high-jobs 10 --duration 20
    python bench/fleet.py --queue-gpus 160 --jobs 60 --duration 10   # the queue capped at half the fleet
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from federation.client import ResourceClient, api_client_from_dict  # noqa: E402
from federation.demo.observe import Timeline, snapshot, wait_clusters_ready  # noqa: E402
from federation.demo.processes import ClusterSpec, System  # noqa: E402
from policies.kinds import lookup  # noqa: E402

TERMINAL = {"Completed", "Failed", "Aborted", "Terminated"}
TICKS = os.sysconf("SC_CLK_TCK")
HIGH_CLASS = "fleet-high"


def cluster_file(path: Path, name: str, nodes: int, gpus: int) -> Path:
    path.write_text(yaml.safe_dump({
        "name": name, "provider": "caldera-sim", "region": "bench", "zone": f"zone-{name}",
        "pools": [{"name": "h100", "count": nodes, "cpu": 96, "memory": "1024Gi", "pods": 110,
                   "gpus": {"product": "NVIDIA-H100-80GB-HBM3", "count": gpus, "memoryGiB": 80}}]}))
    return path


def node_counts(text: str, agents: int) -> list[int]:
    """``2`` -> every cluster 2 nodes; ``1-3`` -> 1, 2, 3, 1, 2, 3, ..."""
    low, _, high = text.partition("-")
    first, last = int(low), int(high or low)
    return [first + i % (last - first + 1) for i in range(agents)]


def job(name: str, pods: int, gpus: int, duration: float, tier: str, queue: str = "default") -> dict[str, Any]:
    note = {"caldera.io/sim-duration": f"{duration:g}s"}
    template = {"metadata": {"annotations": note}, "spec": {"restartPolicy": "Never", "containers": [{
        "name": "train", "image": "bench", "resources": {"requests": {
            "nvidia.com/gpu": str(gpus), "cpu": "1", "memory": "1Gi"}, "limits": {"nvidia.com/gpu": str(gpus)}}}]}}
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
            "metadata": {"name": name, "namespace": "default", "labels": {"tier": tier}, "annotations": note},
            "spec": {"minAvailable": pods, "schedulerName": "volcano", "queue": queue,
                     "tasks": [{"name": "worker", "replicas": pods, "template": template}]}}


#: the queue of every Job with ``--queue-gpus`` (the ``default`` Queue exists already and is left alone)
CAPPED = "capped"


def policies(clusters: list[str], high_priority: int, queue_gpus: int = 0) -> list[dict[str, Any]]:
    placement = {"clusterAffinity": {"clusterNames": clusters},
                 "replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Aggregated"}}
    selector = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job"}
    return [
        {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "default"},
         "spec": {"weight": 1, "reclaimable": True}},
        *([{"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": CAPPED},
            "spec": {"weight": 1, "capability": {"nvidia.com/gpu": str(queue_gpus)}}}] if queue_gpus else []),
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": HIGH_CLASS},
         "value": high_priority, "preemptionPolicy": "Never"},
        {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
         "metadata": {"name": "fleet", "namespace": "default"},
         "spec": {"resourceSelectors": [selector], "placement": placement}},
        {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
         "metadata": {"name": "fleet-high", "namespace": "default"},
         "spec": {"priority": 10, "schedulePriority": {"priorityClassSource": "KubePriorityClass",
                                                       "priorityClassName": HIGH_CLASS},
                  "resourceSelectors": [{**selector, "labelSelector": {"matchLabels": {"tier": "high"}}}],
                  "placement": placement}},
    ]


async def apply(rc: ResourceClient, obj: dict[str, Any]) -> None:
    info = lookup(obj["apiVersion"], obj["kind"])
    namespace = (obj.get("metadata") or {}).get("namespace") if info.namespaced else None
    try:
        await rc.create(info, obj, namespace)
    except Exception as err:  # an object already there (e.g. a default Queue) is fine
        if getattr(err, "status", None) != 409:
            raise


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def process_footprint(pids: list[int], window: float) -> tuple[float, float]:
    """(mean RSS MiB, mean CPU % of a core over ``window``) of ``pids``."""
    def cpu(pid: int) -> float:
        text = Path(f"/proc/{pid}/stat").read_text()
        fields = text[text.rfind(")") + 2:].split()
        return (int(fields[11]) + int(fields[12])) / TICKS

    def rss(pid: int) -> float:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return 0.0

    before, start = [cpu(p) for p in pids], time.monotonic()
    time.sleep(window)
    spent = sum(cpu(p) for p in pids) - sum(before)
    return statistics.mean(rss(p) for p in pids), 100 * spent / (time.monotonic() - start) / len(pids)


async def drive(system: System, args: argparse.Namespace, names: list[str]) -> dict[str, Any]:
    kubeconfig = yaml.safe_load(system.kubeconfig.read_text())
    async with api_client_from_dict(kubeconfig) as api:
        rc = ResourceClient(api, 30.0)
        await wait_clusters_ready(rc, names, args.startup_timeout)
        ready_at = time.time()
        for obj in policies(names, args.high_priority, args.queue_gpus):
            await apply(rc, obj)
        timeline = Timeline()
        tiers: dict[str, str] = {}
        plan = [(f"job-{i:03d}", "ordinary") for i in range(args.jobs)]
        plan += [(f"high-{i:03d}", "high") for i in range(args.high_jobs)]
        reports: dict[str, list[float]] = {}  # cluster -> when its reported GPU use was seen to drop
        submit_start = time.time()
        # observed from the first submit on: the first Jobs are placed while the later ones arrive
        observer = asyncio.create_task(observe(rc, args, timeline, reports, [n for n, _ in plan]))
        try:
            for name, tier in plan:
                if tier == "high" and args.high_after and name.endswith("000"):
                    await asyncio.sleep(args.high_after)
                timeline.submitted(("Job", name), time.time())
                await apply(rc, job(name, args.pods, args.gpus, args.duration, tier,
                                    CAPPED if args.queue_gpus else "default"))
                tiers[name] = tier
            submitted_at = time.time()
            await observer
        finally:
            observer.cancel()
    return {"timeline": timeline, "tiers": tiers, "submit_start": submit_start, "ready_at": ready_at,
            "reports": reports, "submit_s": submitted_at - submit_start}


async def observe(rc: ResourceClient, args: argparse.Namespace, timeline: Timeline,
                  reports: dict[str, list[float]], names: list[str]) -> None:
    """Read the API every ``--poll`` seconds until every Job finished (or ``--timeout``)."""
    deadline = time.monotonic() + args.timeout
    used: dict[str, int] = {}
    while time.monotonic() < deadline:
        snap = await snapshot(rc)
        timeline.observe(snap, TERMINAL)
        for view in snap.clusters:
            if view.gpus_used < used.get(view.name, 0):
                reports.setdefault(view.name, []).append(snap.at)
            used[view.name] = view.gpus_used
        if all(timeline.jobs.get(("Job", n)) and timeline.jobs[("Job", n)].finished for n in names):
            return
        await asyncio.sleep(args.poll)


def handover_breakdown(moments: dict[str, Any], reports: dict[str, list[float]], duration: float,
                       poll: float) -> dict[str, float]:
    """Where the time goes when a Job takes over a cluster another Job just left (one-cluster Jobs):
    the predecessor's pods end (seen running + duration) -> the cluster's status report shows the
    GPUs free -> the next Job's Work is seen -> its pods are seen running. Each figure is a p50 over
    the hand-overs, to the resolution of ``poll``."""
    hops: dict[str, list[float]] = {"end_to_report": [], "report_to_placed": [], "placed_to_running": [],
                                    "end_to_next_running": []}
    by_cluster: dict[str, list[Any]] = {}
    for m in moments.values():
        if m.running and len(m.shares) == 1:
            by_cluster.setdefault(m.shares[0].cluster, []).append(m)
    for cluster, runs in by_cluster.items():
        runs.sort(key=lambda m: m.running)
        for before, after in zip(runs, runs[1:], strict=False):
            if after.submitted > before.running + duration:  # it did not wait for this cluster
                continue
            end = before.running + duration
            report = next((r for r in reports.get(cluster, []) if r >= end - poll), None)
            if report is None or report > after.placed + poll:
                continue
            hops["end_to_report"].append(max(0.0, report - end))
            hops["report_to_placed"].append(max(0.0, after.placed - report))
            hops["placed_to_running"].append(max(0.0, after.running - after.placed))
            hops["end_to_next_running"].append(max(0.0, after.running - end))
    return {name: round(percentile(values, 0.5), 2) for name, values in hops.items()} | {
        "handovers": len(hops["end_to_report"])}


def freed_delays(moments: dict[str, Any], reports: dict[str, list[float]], duration: float,
                 poll: float) -> list[float]:
    """Per finished Job while others waited: capacity freed -> the next placement. Freed is the
    first sign of it, the Job's cluster reporting fewer GPUs in use (after its pods' end) or the
    Job seen finished, whichever came first; a Job placed on the same cluster after this one
    started and no later than that counts as 0 (it took the room over before we could see it
    free; the Job's own finished phase comes later than the capacity report)."""
    placements = sorted(m.placed for m in moments.values() if m.placed)
    delays = []
    for m in moments.values():
        if not m.finished or not m.running:
            continue
        clusters = {s.cluster for s in m.shares}
        drops = [r for c in clusters for r in reports.get(c, []) if r >= m.running + duration - poll]
        freed = min([m.finished, *drops])
        if any(o is not m and o.placed and m.running < o.placed <= freed and clusters & {s.cluster for s in o.shares}
               for o in moments.values()):
            delays.append(0.0)
            continue
        waiting = [o for o in moments.values() if o.submitted <= freed and (not o.placed or o.placed > freed)]
        nxt = next((p for p in placements if p >= freed), None)
        if waiting and nxt is not None:
            delays.append(nxt - freed)
    return delays


def report(args: argparse.Namespace, fleet_gpus: int, result: dict[str, Any]) -> dict[str, Any]:
    timeline: Timeline = result["timeline"]
    tiers: dict[str, str] = result["tiers"]
    start = result["submit_start"]
    moments = {key[1]: m for key, m in timeline.jobs.items() if key[1] in tiers}
    finished = [m.finished for m in moments.values() if m.finished]
    makespan = (max(finished) - start) if len(finished) == len(tiers) else float("nan")
    gpu_seconds = len(tiers) * args.pods * args.gpus * args.duration
    usable = min(fleet_gpus, args.queue_gpus) if args.queue_gpus else fleet_gpus  # a capped queue: its capability
    waves = math.ceil(gpu_seconds / (usable * args.duration) - 1e-9)
    ideal = waves * args.duration
    utilisation = gpu_seconds / (usable * makespan) if makespan == makespan else float("nan")
    delays = freed_delays(moments, result["reports"], args.duration, args.poll)
    per_tier: dict[str, list[float]] = {}
    for name, m in moments.items():
        if m.running:
            per_tier.setdefault(tiers[name], []).append(m.running - start)
    inversions = pairs = 0
    names = list(moments)
    for a in names:
        for b in names:
            ma, mb = moments[a], moments[b]
            if tiers[a] != "high" or tiers[b] != "ordinary" or not (ma.placed and mb.placed):
                continue
            # b was still waiting well after a arrived (beyond the polling resolution and the time
            # the controller needs to see a new Job): they waited together
            if mb.placed > ma.submitted + 2 * args.poll + 1.0:
                pairs += 1
                inversions += mb.placed < ma.placed - args.poll  # b placed first
    return {
        "jobs": len(tiers), "finished": len(finished), "fleet_gpus": fleet_gpus,
        "makespan_s": round(makespan, 1), "ideal_s": ideal, "makespan_over_ideal": round(makespan / ideal, 2),
        "gpu_time_utilisation": round(utilisation, 3),
        "freed_to_next_placement_p50_s": round(percentile(delays, 0.5), 2),
        "freed_to_next_placement_p99_s": round(percentile(delays, 0.99), 2), "freed_samples": len(delays),
        "start_by_priority": {t: {"mean_s": round(statistics.mean(v), 1), "median_s": round(statistics.median(v), 1),
                                  "max_s": round(max(v), 1)} for t, v in sorted(per_tier.items())},
        "priority_pairs_waiting_together": pairs, "priority_inversions": inversions,
        "ready_after_start_s": round(result["ready_at"] - result["started"], 1),
        "submit_s": round(result["submit_s"], 1),
        "handover_p50_s": handover_breakdown(moments, result["reports"], args.duration, args.poll),
    }


def dump_moments(path: Path, result: dict[str, Any]) -> None:
    """Each Job's moments relative to the first submit, and the clusters it ran on, for a closer look."""
    start = result["submit_start"]
    rows = []
    for (_, name), m in sorted(result["timeline"].jobs.items()):
        rows.append({"job": name, "tier": result["tiers"].get(name), "clusters": {s.cluster: s.replicas for s in m.shares},
                     **{k: round(getattr(m, k) - start, 2) if getattr(m, k) else None
                        for k in ("submitted", "placed", "running", "finished")}})
    reports = {c: [round(t - start, 2) for t in ts] for c, ts in result["reports"].items()}
    path.write_text(json.dumps({"jobs": rows, "gpu_use_drops": reports}, indent=1))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--agents", type=int, default=20, help="member clusters, one agent process each")
    parser.add_argument("--nodes", default="2", help="nodes per cluster: N, or LOW-HIGH cycled over the clusters")
    parser.add_argument("--gpus-per-node", type=int, default=8)
    parser.add_argument("--jobs", type=int, default=100, help="ordinary Jobs")
    parser.add_argument("--high-jobs", type=int, default=0, help="Jobs the higher-priority policy claims")
    parser.add_argument("--high-after", type=float, default=0.0, help="seconds to wait before submitting them")
    parser.add_argument("--high-priority", type=int, default=1000, help="their PriorityClass value")
    parser.add_argument("--pods", type=int, default=4, help="pods per Job (one gang)")
    parser.add_argument("--queue-gpus", type=int, default=0,
                        help="cap the Jobs' queue at this many GPUs fleet-wide (docs/queues.md); the ideal and the "
                             "utilisation are then taken against the cap (default 0: no cap)")
    parser.add_argument("--gpus", type=int, default=4, help="GPUs per pod")
    parser.add_argument("--duration", type=float, default=20.0, help="seconds each pod runs")
    parser.add_argument("--poll", type=float, default=0.5, help="seconds between two reads of the API")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds for every Job to finish")
    parser.add_argument("--startup-timeout", type=float, default=180.0)
    parser.add_argument("--idle-window", type=float, default=10.0, help="seconds of idle footprint at the end")
    parser.add_argument("--dump", type=Path, help="write every Job's moments (seconds after submit) as JSON here")
    args = parser.parse_args()
    counts = node_counts(args.nodes, args.agents)
    names = [f"member-{i:02d}" for i in range(args.agents)]
    with tempfile.TemporaryDirectory(prefix="caldera-fleet-") as tmp:
        files = [cluster_file(Path(tmp) / f"{n}.yaml", n, c, args.gpus_per_node) for n, c in zip(names, counts, strict=True)]
        system = System(Path(tmp) / "data", [ClusterSpec(n, f) for n, f in zip(names, files, strict=True)], speed=1.0,
                        startup_timeout=args.startup_timeout)
        started = time.time()
        try:
            system.start()
            result = asyncio.run(drive(system, args, names))
            result["started"] = started
            time.sleep(2.0)
            rss, cpu = process_footprint([a.pid for a in system.agents.values()], args.idle_window)
        finally:
            system.stop()
    figures = report(args, sum(counts) * args.gpus_per_node, result)
    if args.dump:
        dump_moments(args.dump, result)
    figures.update({"agents": args.agents, "agent_idle_rss_mib_mean": round(rss, 1),
                    "agent_idle_cpu_percent_mean": round(cpu, 2)})
    print(f"fleet: {args.agents} agents, {sum(counts)} nodes, {figures['fleet_gpus']} GPUs; "
          f"{figures['jobs']} Jobs of {args.pods} x {args.gpus} GPUs for {args.duration:g} s")
    print(f"  makespan            {figures['makespan_s']} s (ideal {figures['ideal_s']:g} s: "
          f"{figures['makespan_over_ideal']} x)")
    print(f"  submitting          {figures['submit_s']} s for {figures['jobs']} Jobs (one client, one at a time)")
    print(f"  GPU-time used       {100 * figures['gpu_time_utilisation']:.1f} %")
    print(f"  freed -> next place p50 {figures['freed_to_next_placement_p50_s']} s, "
          f"p99 {figures['freed_to_next_placement_p99_s']} s ({figures['freed_samples']} samples)")
    hand = figures["handover_p50_s"]
    print(f"  hand-over p50       pods end -> report {hand['end_to_report']} s -> Work seen "
          f"{hand['report_to_placed']} s -> running {hand['placed_to_running']} s "
          f"(end -> next running {hand['end_to_next_running']} s, {hand['handovers']} hand-overs)")
    for tier, times in figures["start_by_priority"].items():
        print(f"  start ({tier:8s})    mean +{times['mean_s']} s, median +{times['median_s']} s, max +{times['max_s']} s")
    if args.high_jobs:
        print(f"  priority order      {figures['priority_inversions']} inversions in "
              f"{figures['priority_pairs_waiting_together']} pairs that waited together")
    print(f"  agents idle after   {figures['agent_idle_rss_mib_mean']} MiB RSS, "
          f"{figures['agent_idle_cpu_percent_mean']} % CPU (mean per agent)")
    print(json.dumps(figures))
    return 0 if figures["finished"] == figures["jobs"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
