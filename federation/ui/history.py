"""GPU use over time for the dashboard's chart: a bounded, in-memory series of samples.

The API server keeps no time series (Prometheus does, when it runs), so the dashboard's routes
sample the Clusters' reported GPUs every ``step`` seconds while the server runs, and each
overview read adds one too; a sample within ``step`` of the previous one updates it. The
series holds the last ``capacity`` samples (one hour at 720 × 5 s) and is lost on restart. Pure:
the caller passes the time.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from datetime import datetime
from typing import Any

Obj = dict[str, Any]


def gpu_totals(clusters: Iterable[Obj]) -> tuple[int, int]:
    """(used, total) GPUs over the clusters' ``status.gpus`` (used = total - free)."""
    used = total = 0
    for cluster in clusters:
        for entry in (cluster.get("status") or {}).get("gpus") or []:
            if isinstance(entry, dict):
                count = int(entry.get("total") or 0)
                total += count
                used += count - int(entry.get("free") or 0)
    return used, total


class GpuHistory:
    def __init__(self, capacity: int = 720, step_seconds: float = 5.0) -> None:
        self.step = step_seconds
        self.samples: deque[tuple[datetime, int, int]] = deque(maxlen=capacity)

    def record(self, now: datetime, used: int, total: int) -> None:
        """Add a sample; within ``step`` of the previous one it updates that one (its time kept)."""
        if self.samples and (now - self.samples[-1][0]).total_seconds() < self.step:
            self.samples[-1] = (self.samples[-1][0], used, total)
            return
        self.samples.append((now, used, total))

    def points(self) -> list[Obj]:
        return [{"time": t.strftime("%Y-%m-%dT%H:%M:%SZ"), "used": u, "total": n} for t, u, n in self.samples]
