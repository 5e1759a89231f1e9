"""Trace-replay benchmarks (issue 12): the openb FGD protocol and the incremental cache.

    python bench/simulate.py session      # one-pod session on the full 1,213-node openb cluster
    python bench/simulate.py fgd [--conf examples/scheduler-conf/gpu-packing.conf] [--seed 42]
    python bench/simulate.py philly [--conf bench/data/scheduler-conf/fifo.conf] [--limit N] [--until S]
                                    [--decisions FILE]

``session`` fills the cluster through the cache with the whole openb pod list (bound by one
replay), then times a snapshot + one-pod session (median of 20) against a from-scratch
``build_snapshot`` of the same objects. ``fgd`` replays openb to 130 % load and prints
allocation, rejections, wall seconds and peak RSS. ``philly`` replays the Philly trace in job
mode on the 1,000-node layout ``bench/data/philly-1000-nodes.yaml`` (the speed goal: the whole
trace in <= 10 min, peak RSS <= 2 GiB) and prints jobs, simulated and wall seconds, peak RSS,
mean/p95 JCT and queueing delay and the load average; ``--decisions FILE`` also writes what the
replay decided (one JSON line per job: start, end, status, reason, clusters; then the sessions and
the per-tick series), to compare two versions' outputs with ``cmp``. Traces are read from
examples/traces (sources and licences: examples/traces/SOURCES.md).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from member_agent.scheduler.cycle import run_cycle
from member_agent.scheduler.framework.builder import build_snapshot
from member_agent.scheduler.framework.clock import FixedClock
from member_agent.scheduler.framework.session import SessionOptions
from member_agent.scheduler.scheduler_cache import SchedulerCache
from policies.scheduler_conf import parse_scheduler_conf
from simulator.fgd_mode import commit_binding, run_fgd
from simulator.openb import node_object, pod_object, read_nodes, read_pods

TRACES = Path(__file__).resolve().parents[1] / "examples" / "traces"
CONFS = Path(__file__).resolve().parents[1] / "examples" / "scheduler-conf"
DATA = Path(__file__).resolve().parent / "data"


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def session(conf_path: str) -> None:
    conf = parse_scheduler_conf(Path(conf_path).read_text())
    nodes = read_nodes(str(TRACES / "openb_node_list_gpu_node.csv"))
    pods, _ = read_pods(str(TRACES / "openb_pod_list_default.csv"))
    cache = SchedulerCache(resources=("nvidia.com/gpu", "nvidia.com/gpucores"))
    objects = [node_object(n) for n in nodes]
    for obj in objects:
        cache.upsert(obj)
    cache.snapshot()
    stamp = "2023-11-14T22:13:20+00:00"
    filled = 0
    for start in range(0, len(pods), 200):  # bind the trace 200 pods a session, as the agent would
        batch = [pod_object(pod, f"fill-{start + i:05d}", stamp) for i, pod in enumerate(pods[start:start + 200])]
        for obj in batch:
            cache.upsert(obj)
        result = run_cycle(cache.snapshot(), conf, FixedClock())
        for obj in batch:
            if commit_binding(cache, obj, result):
                objects.append(obj)
                filled += 1
    probe = pod_object(pods[0], "probe", stamp)
    times, snaps = [], []
    profile = None
    if os.environ.get("PROFILE"):
        import cProfile

        profile = cProfile.Profile()
        profile.enable()
    for _ in range(20):
        cache.upsert(probe)
        started = time.perf_counter()
        snap = cache.snapshot()
        middle = time.perf_counter()
        run_cycle(snap, conf, FixedClock())
        times.append(time.perf_counter() - started)
        snaps.append(middle - started)
        cache.delete(probe)
    if profile is not None:
        import pstats

        profile.disable()
        pstats.Stats(profile).sort_stats("cumulative").print_stats(30)
    started = time.perf_counter()
    build_snapshot([*objects, probe])
    full = time.perf_counter() - started
    print(f"one-pod session on {len(nodes)} nodes with {filled} running pods ({Path(conf_path).name}): "
          f"median {1000 * statistics.median(times):.1f} ms (snapshot {1000 * statistics.median(snaps):.2f} ms); "
          f"from-scratch build_snapshot {1000 * full:.0f} ms; peak RSS {_rss_mib():.0f} MiB")


def fgd(conf_path: str, seed: int, batch: int, pct: int, trace_workload: bool = False, profile: bool = False) -> None:
    conf = parse_scheduler_conf(Path(conf_path).read_text())
    nodes = read_nodes(str(TRACES / "openb_node_list_gpu_node.csv"))
    pods, _ = read_pods(str(TRACES / "openb_pod_list_default.csv"))
    prof = None
    if profile:
        import cProfile

        prof = cProfile.Profile()
        prof.enable()
    run = run_fgd(nodes, pods, conf, seed=seed, batch=batch, options=SessionOptions(percentage_nodes_to_find=pct),
                  workload_from_trace=trace_workload)
    if prof is not None:
        import pstats

        prof.disable()
        pstats.Stats(prof).sort_stats("tottime").print_stats(25)
    eight = run.first_rejection_by_gpus.get("8")
    print(f"openb FGD {Path(conf_path).name} seed {seed}: {run.pods} pods, {run.rejected} rejected; "
          f"allocation {100 * (run.allocation_at(1.0) or 0):.2f} % at 100 % arrived, "
          f"{100 * run.series[-1][1]:.2f} % at {100 * run.series[-1][0]:.1f} %; first 8-GPU rejection at "
          f"{'-' if eight is None else f'{100 * eight:.2f} %'}; {run.sessions} sessions, "
          f"{run.wall_seconds:.1f} s wall, peak RSS {_rss_mib():.0f} MiB")


def philly(conf_path: str, limit: int | None, until: float | None, coalesce: float | None,
           profile: bool = False, decisions: str | None = None) -> None:
    from simulator.job_cli import load_trace, run_job_mode

    args = argparse.Namespace(trace=str(TRACES / "philly.csv"), skip_bad=False, limit=limit, until=until,
                              clusters=[str(DATA / "philly-1000-nodes.yaml")], policy=None, seed=42, period=1.0,
                              coalesce=coalesce, percentage_nodes_to_find=0, no_wall_clock=False)
    load = os.getloadavg()
    trace = load_trace(args)
    prof = None
    if profile:
        import cProfile

        prof = cProfile.Profile()
        prof.enable()
    started, shown, cpu = time.perf_counter(), [0], time.process_time()

    def progress(done: int, total: int) -> None:  # a line every 5,000 jobs: the whole trace takes minutes
        if done - shown[0] >= 5000 or (done == total and done != shown[0]):
            shown[0] = done
            print(f"  {done:,}/{total:,} jobs done, {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)

    run, summary = run_job_mode(args, trace, parse_scheduler_conf(Path(conf_path).read_text()), Path(conf_path).name,
                                progress=progress)
    if prof is not None:
        import pstats

        prof.disable()
        pstats.Stats(prof).sort_stats("cumulative").print_stats(40)
    cpu = time.process_time() - cpu  # the replay's own CPU: wall time on 2 shared cores tracks the neighbours
    if decisions:
        _write_decisions(decisions, run)
    jct, wait = summary["jct"] or {}, summary["queueingDelay"] or {}
    after = os.getloadavg()
    print(f"philly job mode {Path(conf_path).name} on 1,000 nodes (8,000 GPUs)"
          f"{'' if limit is None else f', first {limit} jobs'}{'' if until is None else f', until {until:g} s'}"
          f"{'' if coalesce is None else f', coalesce {coalesce:g} s'}: {summary['jobs']} jobs "
          f"({summary['finished']} finished), {summary['sessions']} sessions, "
          f"{run.simulated_seconds:,.0f} simulated s, {run.wall_seconds:.1f} s wall, {cpu:.1f} s CPU "
          f"({1000 * run.wall_seconds / max(1, summary['jobs']):.1f} ms/job), peak RSS {_rss_mib():.0f} MiB; "
          f"JCT mean {jct.get('mean', 0):,.0f} s p95 {jct.get('p95', 0):,.0f} s; queueing delay mean "
          f"{wait.get('mean', 0):,.0f} s p95 {wait.get('p95', 0):,.0f} s; "
          f"load average {load[0]:.2f} before, {after[0]:.2f} after (2 cores, shared)")


def _write_decisions(path: str, run: Any) -> None:
    with open(path, "w") as out:
        for job in run.jobs:
            out.write(json.dumps([job.name, job.queue, job.submit, job.start, job.end, job.status, job.reason,
                                  job.clusters, job.share_starts]) + "\n")
        out.write(json.dumps({"sessions": run.sessions, "simulated": run.simulated_seconds, "series": run.series}) + "\n")


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("what", choices=("session", "fgd", "philly"))
    p.add_argument("--conf", help="volcano-scheduler.conf (gpu-packing.conf; philly: bench/data/scheduler-conf/fifo.conf)")
    p.add_argument("--limit", type=int, help="philly: only the first N jobs by arrival")
    p.add_argument("--until", type=float, help="philly: stop at this simulated second")
    p.add_argument("--coalesce", type=float, help="philly: see arrivals and ends on a grid of S seconds")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--batch", type=int, default=50)
    p.add_argument("--percentage-nodes-to-find", type=int, default=0)
    p.add_argument("--trace-workload", action="store_true",
                   help="start the observed workload from the whole pod list (the paper's target workload)")
    p.add_argument("--profile", action="store_true", help="cProfile the replay (top 25 by own time)")
    p.add_argument("--decisions", help="philly: write each job's outcome and the series here (JSON lines)")
    args = p.parse_args()
    if not (TRACES / "openb_pod_list_default.csv").exists():
        print(f"openb traces not found under {TRACES}", file=sys.stderr)
        return 1
    if args.what == "philly":
        philly(args.conf or str(DATA / "scheduler-conf" / "fifo.conf"), args.limit, args.until, args.coalesce,
               args.profile, args.decisions)
    elif args.what == "session":
        session(args.conf or str(CONFS / "gpu-packing.conf"))
    else:
        fgd(args.conf or str(CONFS / "gpu-packing.conf"), args.seed, args.batch, args.percentage_nodes_to_find, args.trace_workload, args.profile)
    return 0


if __name__ == "__main__":
    sys.exit(main())
