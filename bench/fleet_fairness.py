"""Fairness of fleet queues on Philly (issue 33): fleet-wide queues against per-cluster queues.

    python bench/fleet_fairness.py [--limit 3000] [--clusters 2 4] [--scopes fleet cluster] [--markdown]
        [--members CLUSTER.yaml ...] [--conf fleet-reclaim-binpack.conf] [--show QUEUE ...] [--out DIR]

Replays the first ``--limit`` Philly jobs (its virtual clusters are the queues ``vc-<id>``;
bench/data/philly-queues.yaml gives three of them weights, a guarantee and a cap, the rest get weight 1)
over the same 256 GPUs cut into 2 members (bench/data/philly-fleet-a.yaml, -b) or 4 (-q1..-q4), under
bench/data/scheduler-conf/fleet-reclaim.conf (proportion, and the reclaim action), with
``--queue-scope fleet`` (one set of queues: admission, fair share and reclaim at the federation) and
``--queue-scope cluster`` (each member holds the Queues as written and reclaims locally; the
federation places first come, first served). Prints per run: wall and CPU seconds, GPU utilisation,
gangs evicted by reclaim (pods evicted locally in the cluster scope), how far the queues' held GPUs
stray from their fleet-wide deserved share (the GPU-weighted mean of |held − deserved| / deserved over
queues that deserved anything), and each busy queue's mean held / mean deserved GPUs and queueing delay.
``--members`` replays over other cluster files (a smaller fleet makes reclaim fire), ``--conf
fleet-reclaim-binpack.conf`` lets the members pack GPUs, ``--out`` keeps each run's replay outputs
(``queues.png``: each queue's GPUs against its deserved share over time).
"""

from __future__ import annotations

import argparse
import os
import resource
import time
from pathlib import Path
from typing import Any

from simulator.cli import _conf
from simulator.job_cli import load_trace, run_job_mode
from simulator.job_report import write_jobs

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "bench" / "data"
LAYOUTS = {2: ["philly-fleet-a.yaml", "philly-fleet-b.yaml"], 4: [f"philly-fleet-q{i}.yaml" for i in range(1, 5)]}
SHOWN = 5  # busiest queues in the table


def run(limit: int, files: list[str], scope: str, out: str | None = None,
        conf: str = "fleet-reclaim.conf") -> tuple[dict[str, Any], float, float, int]:
    args = argparse.Namespace(
        trace=str(ROOT / "examples" / "traces" / "philly.csv"), skip_bad=False, limit=limit, until=None,
        clusters=files, policy=str(DATA / "philly-fleet-policy.yaml"),
        queues=str(DATA / "philly-queues.yaml"), queue_scope=scope, seed=42, period=1.0, coalesce=None,
        percentage_nodes_to_find=0, no_wall_clock=False, scheduler_conf=str(DATA / "scheduler-conf" / conf))
    wall, cpu = time.perf_counter(), time.process_time()
    result, summary = run_job_mode(args, load_trace(args), _conf(args.scheduler_conf), conf)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    local = sum(getattr(m, "evicted_pods", 0) for m in result.queue_replay.fed.members.values())
    if out is not None:  # the replay's own outputs (summary.json, jobs.csv, series.csv, queues.png, index.html)
        gpus = summary["gpus"]
        write_jobs(os.path.join(out, f"{len(files)}x{gpus:g}-{scope}-{conf.removesuffix('.conf')}"), result, summary,
                   f"{len(files)} clusters, {gpus:g} GPUs, {conf}")
    return summary, wall, cpu, local


def stray(queues: dict[str, Any]) -> float:
    """GPU-weighted mean of |held − deserved| / deserved over queues that deserved something."""
    rows = [(q["meanAllocated"]["nvidia.com/gpu"], q["meanDeserved"]["nvidia.com/gpu"]) for q in queues.values()]
    weight = sum(d for _, d in rows if d > 0)
    return sum(abs(h - d) for h, d in rows if d > 0) / weight if weight else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--limit", type=int, default=3000)
    parser.add_argument("--clusters", type=int, nargs="+", default=[2, 4], choices=sorted(LAYOUTS))
    parser.add_argument("--scopes", nargs="+", default=["fleet", "cluster"], choices=["fleet", "cluster"])
    parser.add_argument("--markdown", action="store_true", help="print the tables as Markdown (docs/queues.md)")
    parser.add_argument("--members", nargs="+", metavar="CLUSTER.yaml",
                        help="replay over these cluster files instead of the 2- or 4-member layouts of 256 GPUs "
                             "(e.g. a smaller fleet: bench/data/philly-fleet-q1.yaml bench/data/philly-fleet-q2.yaml)")
    parser.add_argument("--conf", default="fleet-reclaim.conf", choices=["fleet-reclaim.conf", "fleet-reclaim-binpack.conf"],
                        help="the scheduler conf in bench/data/scheduler-conf/ (binpack: the members pack GPUs)")
    parser.add_argument("--show", nargs="+", metavar="QUEUE", help="the queues in the table (default: the busiest)")
    parser.add_argument("--out", help="write each run's replay outputs (summary.json, series.csv, queues.png, "
                                      "index.html) to OUT/<clusters>x<GPUs>-<scope>-<conf>/")
    args = parser.parse_args()
    layouts = [args.members] if args.members else [[str(DATA / f) for f in LAYOUTS[n]] for n in args.clusters]
    print(f"Philly, first {args.limit:,} jobs; load average {os.getloadavg()[0]:.1f}")
    results = []
    for files in layouts:
        clusters = len(files)
        for scope in args.scopes:
            summary, wall, cpu, local = run(args.limit, files, scope, args.out, args.conf)
            results.append((clusters, scope, summary, wall, cpu, local))
            evicted = summary["reclaims"]["count"] if scope == "fleet" else f"{local} pods (local)"
            print(f"{clusters} clusters ({summary['gpus']:g} GPUs), {scope} queues: {wall:.0f} s wall, {cpu:.0f} s CPU, "
                  f"GPU utilisation {100 * (summary['gpuAllocationRatio'] or 0):.1f} %, reclaimed {evicted}, "
                  f"held vs deserved stray {100 * stray(summary['queues']):.0f} %, queueing delay mean "
                  f"{(summary['queueingDelay'] or {}).get('mean', 0):,.0f} s; peak RSS "
                  f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB", flush=True)
    busiest = sorted(results[0][2]["queues"].items(), key=lambda kv: -kv[1]["meanDeserved"]["nvidia.com/gpu"])
    names = args.show or [n for n, _ in busiest[:SHOWN]]
    head = ["clusters", "GPUs", "queues", "GPU util.", "evicted", "stray"] + [f"{n} held/deserved (delay mean, p95)"
                                                                      for n in names]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for clusters, scope, summary, _, _, local in results:
        cells = [str(clusters), f"{summary['gpus']:g}", scope, f"{100 * (summary['gpuAllocationRatio'] or 0):.1f} %",
                 str(summary["reclaims"]["count"]) if scope == "fleet" else f"{local} pods",
                 f"{100 * stray(summary['queues']):.0f} %"]
        for name in names:
            q = summary["queues"].get(name)
            if q is None:  # a queue this slice of the trace never names
                cells.append("—")
                continue
            delay = q["queueingDelay"] or {}
            cells.append(f"{q['meanAllocated']['nvidia.com/gpu']:.1f}/{q['meanDeserved']['nvidia.com/gpu']:.1f} "
                         f"({_s(delay.get('mean'))}, {_s(delay.get('p95'))})")
        lines.append("| " + " | ".join(cells) + " |")
    print("\n".join(lines) if args.markdown else "\n".join(line.replace("|", " ") for line in lines))


def _s(value: Any) -> str:
    if value is None:
        return "—"
    return f"{value / 3600:.1f} h" if value >= 3600 else f"{value:.0f} s"


if __name__ == "__main__":
    main()
