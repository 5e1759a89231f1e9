"""Text views of Caldera's status extensions for ``caldera describe job`` (docs/status.md).

``job_share_lines(job)`` renders the per-cluster breakdown the status controller writes in
``status.clusters`` and the "why pending" explanation from ``status.state``.
"""

from __future__ import annotations

from typing import Any

WAITING_PHASES = frozenset({"Pending", "Restarting"})
HEADERS = ["Cluster", "Replicas", "MinAvailable", "Phase", "Running", "Succeeded", "Failed", "Gang", "Reason"]


def _table(rows: list[list[str]], indent: str = "  ") -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(HEADERS)]
    return [indent + "  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip()
            for line in [HEADERS, ["-" * len(h) for h in HEADERS], *rows]]


def job_share_lines(job: dict[str, Any]) -> list[str]:
    status = job.get("status") or {}
    state = status.get("state") or {}
    lines: list[str] = []
    if (state.get("phase") or "Pending") in WAITING_PHASES:
        why = state.get("message") or "no status yet: the status controller has not seen this job"
        lines.append("Why Pending:".ljust(14) + f"{state.get('reason') or ''}: {why}".lstrip(": "))
    shares = [c for c in status.get("clusters") or [] if isinstance(c, dict)]
    if not shares:
        lines.append("Clusters:".ljust(14) + "<none>")
        return lines
    rows = [[str(c.get("name", "")), str(c.get("replicas", "")), str(c.get("minAvailable", "")),
             str(c.get("phase", "")), str(c.get("running", 0)), str(c.get("succeeded", 0)), str(c.get("failed", 0)),
             str(c.get("gangPhase") or "-"), str(c.get("reason") or "")] for c in shares]
    return [*lines, "Clusters:", *_table(rows)]
