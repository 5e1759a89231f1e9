"""The per-queue part of a replay with ``--queues``: summary.json's ``queues`` block, the plot, the page's table.

``queues: {NAME: {"peakAllocated": {"nvidia.com/gpu": n}, "meanAllocated": {...}, "meanDeserved": {...},
"queueingDelay": {mean, p50, p95, max}}}``: GPUs the queue's running pods hold across the fleet (peak
and time-weighted mean from the first arrival to the end of the replay), the GPUs the fleet-wide queue
rule says it deserves (time-weighted mean; the same yardstick in both ``--queue-scope``\\ s), and its
jobs' queueing delay (nearest rank, seconds). ``reclaims``: gangs evicted by reclaim across clusters,
by victim queue. Allocation counts GPUs only: the trace jobs' CPU and memory follow their GPUs.
"""

from __future__ import annotations

from typing import Any, Sequence

from simulator.fleet_replay import QueueReplay
from simulator.job_mode import JobRun

GPU = "nvidia.com/gpu"
Series = Sequence[tuple[float, tuple[float, ...], tuple[float, ...]]]


def time_means(series: Series, end: float, width: int) -> tuple[list[float], list[float]]:
    """Time-weighted means of each queue's held and deserved GPUs over [first row, end]."""
    held, deserved = [0.0] * width, [0.0] * width
    if not series:
        return held, deserved
    start = series[0][0]
    span = max(end - start, 0.0)
    for (t0, h, d), t1 in zip(series, [row[0] for row in series[1:]] + [max(end, series[-1][0])], strict=True):
        dt = max(t1 - t0, 0.0)
        for i in range(width):
            held[i] += h[i] * dt
            deserved[i] += d[i] * dt
    if span <= 0:
        return list(series[-1][1]), list(series[-1][2])
    return [v / span for v in held], [v / span for v in deserved]


def queue_summary(replay: QueueReplay, run: JobRun, stats: Any) -> dict[str, Any]:
    """``queues`` and ``reclaims`` for summary.json (``stats``: the job report's {mean, p50, p95, max})."""
    names = replay.names
    mean_held, mean_deserved = time_means(replay.series, run.simulated_seconds, len(names))
    peaks = [max((row[1][i] for row in replay.series), default=0.0) for i in range(len(names))]
    delays: dict[str, list[float]] = {name: [] for name in names}
    for job in run.jobs:
        if job.queueing_delay is not None:
            delays.setdefault(job.queue, []).append(job.queueing_delay)
    queues = {name: {"peakAllocated": {GPU: peaks[i]}, "meanAllocated": {GPU: mean_held[i]},
                     "meanDeserved": {GPU: mean_deserved[i]}, "queueingDelay": stats(delays.get(name, []))}
              for i, name in enumerate(names)}
    return {"queues": queues,
            "queueScope": replay.scope,
            "reclaims": {"count": sum(replay.reclaimed.values()), "byQueue": dict(sorted(replay.reclaimed.items()))}}


def queue_rows(summary: dict[str, Any]) -> list[list[str]]:
    """The page's table: one row per queue that held or deserved anything."""
    rows = []
    reclaimed = (summary.get("reclaims") or {}).get("byQueue") or {}
    for name, q in sorted((summary.get("queues") or {}).items()):
        held, deserved = q["meanAllocated"][GPU], q["meanDeserved"][GPU]
        if not q["peakAllocated"][GPU] and not deserved:
            continue
        delay = q.get("queueingDelay") or {}
        rows.append([name, f"{q['peakAllocated'][GPU]:g}", f"{held:.1f}", f"{deserved:.1f}",
                     f"{100 * held / deserved:.0f} %" if deserved else "—",
                     _seconds(delay.get("mean")), _seconds(delay.get("p95")), str(reclaimed.get(name, 0))])
    return rows


QUEUE_HEADERS = ["queue", "peak GPUs", "mean GPUs", "mean deserved GPUs", "held / deserved", "queueing delay mean",
                 "queueing delay p95", "gangs reclaimed"]


def _seconds(value: Any) -> str:
    return "—" if value is None else f"{value:,.0f} s"


def plot_queues(replay: QueueReplay, path: str, title: str) -> None:
    """GPUs each busy queue holds over time (solid) against what it deserves (dashed, same colour)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 4.5), dpi=110)
    series = replay.series
    step = max(1, len(series) // 4000)
    points = list(series[::step])
    busiest = sorted(range(len(replay.names)), key=lambda i: -max((r[1][i] for r in series), default=0.0))[:8]
    for i in busiest:
        times = [p[0] / 3600 for p in points]
        line = ax.step(times, [p[1][i] for p in points], where="post", linewidth=1.1, label=replay.names[i])[0]
        ax.step(times, [p[2][i] for p in points], where="post", linewidth=0.8, linestyle="--",
                color=line.get_color())
    ax.set_xlabel("simulated time (hours)")
    ax.set_ylabel("GPUs held (solid) / deserved (dashed)")
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
