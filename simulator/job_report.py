"""What a job-mode replay writes under ``-o DIR``: summary.json, jobs.csv, series.csv, plots, HTML.

``summary.json`` is a pure function of the inputs and the seed (floats rounded to 6 places, keys
sorted) except ``wallSeconds``; ``--no-wall-clock`` writes it as null (byte-identical file).
Percentiles are nearest-rank (the smallest value with at least p % of the values at or below it),
so they are values that occurred, not interpolations.
"""

from __future__ import annotations

import csv
import json
import math
import os
from typing import Any, Optional

from simulator.job_mode import JobResult, JobRun
from simulator.report import _round
from simulator.report_page import report_title, write_report

MAX_LISTED = 100


def nearest_rank(values: list[float], pct: float) -> Optional[float]:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(pct / 100 * len(ordered)) - 1)]


def _stats(values: list[float]) -> Optional[dict[str, Optional[float]]]:
    if not values:
        return None
    return {"mean": sum(values) / len(values), "p50": nearest_rank(values, 50), "p95": nearest_rank(values, 95),
            "max": max(values)}


def job_summary(run: JobRun, *, inputs: dict[str, Any], wall_clock: bool) -> dict[str, Any]:
    finished = [j for j in run.jobs if j.jct is not None]
    started = [j for j in run.jobs if j.queueing_delay is not None]
    by_status: dict[str, int] = {}
    for job in run.jobs:
        by_status[job.status] = by_status.get(job.status, 0) + 1
    unfittable = [j for j in run.jobs if j.status == "Unfittable"]
    stuck = [j for j in run.jobs if j.status == "Unschedulable"]
    peak = max((alloc for _, alloc, _ in run.series), default=0.0)
    busy = _gpu_seconds(run)
    return _round({
        "mode": "jobs",
        "inputs": inputs,
        "jobs": len(run.jobs),
        "pods": None,
        "finished": len(finished),
        "byStatus": dict(sorted(by_status.items())),
        "unfittable": {"count": len(unfittable), "jobs": [_listed(j) for j in unfittable[:MAX_LISTED]]},
        "unschedulable": {"count": len(stuck), "jobs": [_listed(j) for j in stuck[:MAX_LISTED]]},
        "gpus": run.gpus_total,
        "sessions": run.sessions,
        "crossClusterJobs": run.cross_cluster_jobs,
        "jct": _stats([j.jct for j in finished if j.jct is not None]),
        "queueingDelay": _stats([j.queueing_delay for j in started if j.queueing_delay is not None]),
        "gpuAllocationRatio": (busy / (run.gpus_total * run.simulated_seconds)
                               if run.gpus_total and run.simulated_seconds else None),
        "peakGpuAllocationRatio": peak / run.gpus_total if run.gpus_total else None,
        "arrivedLoadRatio": None,
        "firstRejection": None,
        "simulatedSeconds": run.simulated_seconds,
        "wallSeconds": run.wall_seconds if wall_clock else None,
        **({"topology": run.topology} if run.topology is not None else {}),
    })


def _gpu_seconds(run: JobRun) -> float:
    """GPU-seconds allocated over the run (the series is a step function between sessions)."""
    total = 0.0
    for (t0, alloc, _), (t1, _, _) in zip(run.series, run.series[1:], strict=False):
        total += alloc * (t1 - t0)
    return total


def _listed(job: JobResult) -> dict[str, Any]:
    return {"name": job.name, "submit": job.submit, "gpus": job.gpus, "reason": job.reason}


def write_jobs(out_dir: str, run: JobRun, summary: dict[str, Any], title: str) -> list[str]:
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "summary.json")
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(summary, handle, indent=2, sort_keys=True)
        handle.write("\n")
    written = [path, _jobs_csv(out_dir, run), _series_csv(out_dir, run)]
    plot_utilisation({title: run}, os.path.join(out_dir, "utilisation.png"))
    plot_cdfs({title: run}, os.path.join(out_dir, "cdf.png"))
    written += [os.path.join(out_dir, "utilisation.png"), os.path.join(out_dir, "cdf.png")]
    written.append(write_report(out_dir, report_title([summary]), [summary], written[-2:]))
    return written


def _fmt(value: Optional[float]) -> str:
    return "" if value is None else f"{value:.3f}"


def _jobs_csv(out_dir: str, run: JobRun) -> str:
    path = os.path.join(out_dir, "jobs.csv")
    with open(path, "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["job", "queue", "gpus", "submit", "start", "end", "jct", "queueingDelay", "status",
                         "clusters", "reason"])
        for job in run.jobs:
            where = ";".join(f"{c}={n}" for c, n in sorted(job.clusters.items()))
            writer.writerow([job.name, job.queue, f"{job.gpus:g}", _fmt(job.submit), _fmt(job.start), _fmt(job.end),
                             _fmt(job.jct), _fmt(job.queueing_delay), job.status, where, job.reason])
    return path


def _series_csv(out_dir: str, run: JobRun) -> str:
    path = os.path.join(out_dir, "series.csv")
    with open(path, "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["seconds", "gpusAllocated", "gpusTotal", *[f"pending:{q}" for q in run.queues]])
        for t, alloc, pending in run.series:
            writer.writerow([_fmt(t), f"{alloc:g}", f"{run.gpus_total:g}", *pending])
    return path


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_utilisation(runs: dict[str, JobRun], path: str) -> None:
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, 4), dpi=110)
    for label, run in runs.items():
        step = max(1, len(run.series) // 5000)  # a readable line, not 100k points
        points = run.series[::step]
        total = run.gpus_total or 1
        ax.step([p[0] / 3600 for p in points], [100 * p[1] / total for p in points], where="post", label=label,
                linewidth=1)
    ax.set_xlabel("simulated time (hours)")
    ax.set_ylabel("GPUs allocated (% of total)")
    ax.set_ylim(0, 100)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper right")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def plot_cdfs(runs: dict[str, JobRun], path: str) -> None:
    plt = _pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), dpi=110)
    for label, run in runs.items():
        for ax, values in ((axes[0], [j.jct for j in run.jobs if j.jct is not None]),
                           (axes[1], [j.queueing_delay for j in run.jobs if j.queueing_delay is not None])):
            ordered = sorted(v for v in values if v is not None)
            if ordered:
                ax.step([max(v, 1.0) for v in ordered], [(k + 1) / len(ordered) for k in range(len(ordered))],
                        where="post", label=label, linewidth=1.2)
    for ax, name in ((axes[0], "JCT"), (axes[1], "queueing delay")):
        ax.set_xscale("log")
        ax.set_xlabel(f"{name} (seconds, log; < 1 s drawn at 1 s)")
        ax.set_ylabel("fraction of jobs")
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
