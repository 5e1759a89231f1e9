"""What a replay writes under ``-o DIR``: summary.json, series.csv, a plot and an HTML page.

``summary.json`` is a pure function of the inputs and the seed (floats rounded to 6 places,
keys sorted) except ``wallSeconds``, the wall-clock cost of the run; ``--no-wall-clock``
writes it as null so the whole file is byte-identical between runs.
"""

from __future__ import annotations

import csv
import json
import os
from typing import Any

from simulator.fgd_mode import FgdRun
from simulator.report_page import report_title, write_report


def _round(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, 6)
    if isinstance(value, dict):
        return {k: _round(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_round(v) for v in value]
    return value


def fgd_summary(run: FgdRun, *, inputs: dict[str, Any], wall_clock: bool) -> dict[str, Any]:
    end_arrived, end_alloc = run.series[-1] if run.series else (0.0, 0.0)
    return _round({
        "mode": "fgd",
        "inputs": inputs,
        "pods": run.pods,
        "jobs": None,
        "placed": run.placed,
        "rejected": run.rejected,
        "gpus": run.gpus_total,
        "sessions": run.sessions,
        "gpuAllocationRatio": end_alloc,
        "arrivedLoadRatio": end_arrived,
        "allocationAtFullLoad": run.allocation_at(1.0),
        "firstRejection": run.first_rejection,
        "firstRejectionByGpus": dict(sorted(run.first_rejection_by_gpus.items(), key=lambda kv: float(kv[0]))),
        "overCapacityGpus": run.over_capacity_gpus,
        "jct": None,
        "queueingDelay": None,
        "simulatedSeconds": run.simulated_seconds,
        "wallSeconds": run.wall_seconds if wall_clock else None,
    })


def write_fgd(out_dir: str, run: FgdRun, summary: dict[str, Any], title: str) -> list[str]:
    os.makedirs(out_dir, exist_ok=True)
    written = []
    path = os.path.join(out_dir, "summary.json")
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(summary, handle, indent=2, sort_keys=True)
        handle.write("\n")
    written.append(path)
    path = os.path.join(out_dir, "series.csv")
    with open(path, "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["session", "arrivedLoadRatio", "gpuAllocationRatio"])
        for i, (arrived, alloc) in enumerate(run.series):
            writer.writerow([i + 1, f"{arrived:.6f}", f"{alloc:.6f}"])
    written.append(path)
    plot = os.path.join(out_dir, "allocation.png")
    plot_allocation({title: run.series}, plot)
    written.append(plot)
    written.append(write_report(out_dir, report_title([summary]), [summary], [plot]))
    return written


def plot_allocation(series: dict[str, list[tuple[float, float]]], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=110)
    for label, points in series.items():
        ax.plot([p[0] * 100 for p in points], [p[1] * 100 for p in points], label=label, linewidth=1.4)
    top = max((p[0] * 100 for points in series.values() for p in points), default=100)
    ax.plot([0, 100], [0, 100], color="grey", linestyle=":", linewidth=1, label="ideal")
    ax.set_xlim(0, max(100, top))
    ax.set_ylim(0, 100)
    ax.set_xlabel("arrived GPU load (% of cluster GPUs)")
    ax.set_ylabel("GPU allocation (% of cluster GPUs)")
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
