"""How the demo shows progress: a rich live view on a terminal, plain lines otherwise, and the summary."""

from __future__ import annotations

from typing import Optional

from rich.console import Group
from rich.table import Table
from rich.text import Text

from federation.demo.observe import JobView, Moments, Share, Snapshot, Timeline

PHASE_STYLE = {"Completed": "green", "Succeed": "green", "Running": "cyan", "Pending": "yellow",
               "Inqueue": "yellow", "Failed": "red", "Aborted": "red", "Terminated": "red", "Restarting": "magenta"}


def shares_text(shares: list[Share], with_min: bool = False) -> str:
    """``cluster-a 3 · cluster-b 5``; tasks named when the job has several; the gang phase while held;
    with ``with_min``: ``cluster-a: master 1 + worker 2 (min 3)``."""
    multi_task = len({t for s in shares for t in s.tasks}) > 1
    parts = []
    for s in shares:
        tasks = " + ".join(f"{task} {r}" for task, (r, _) in s.tasks.items() if r)
        if with_min:
            parts.append(f"{s.cluster}: {tasks if multi_task else s.replicas} (min {s.min_available})")
            continue
        text = f"{s.cluster} {s.replicas}" + (f" ({tasks})" if multi_task else "")
        if s.hold and s.gang and s.gang != "Running":
            text += f" [{s.gang}]"
        parts.append(text)
    return " · ".join(parts) if parts else "-"


def ordered_jobs(snap: Snapshot, expected: dict[tuple[str, str], str]) -> list[JobView]:
    """Expected objects in apply order; a JobFlow's Jobs right after it."""
    out: list[JobView] = []
    for key in expected:
        view = snap.jobs.get(key)
        if view is None:
            continue
        out.append(view)
        if view.kind == "JobFlow":
            out.extend(sorted((j for j in snap.jobs.values() if j.owner == view.name), key=lambda j: j.created))
    return out


def _name(view: JobView) -> str:
    return f"  └ {view.name}" if view.owner else (f"{view.name} (JobFlow)" if view.kind == "JobFlow" else view.name)


def live_view(snap: Snapshot, expected: dict[tuple[str, str], str], elapsed: float, timeout: float) -> Group:
    clusters = Table(title=f"Clusters  ({elapsed:5.1f}s / {timeout:.0f}s)", title_justify="left", expand=False)
    for column in ("cluster", "ready", "GPUs used/total", "taints"):
        clusters.add_column(column)
    for c in snap.clusters:
        style = "green" if c.ready == "True" else "red"
        clusters.add_row(c.name, Text(c.ready, style=style), f"{c.gpus_used}/{c.gpus_total}", ", ".join(c.taints) or "")
    jobs = Table(title="Jobs", title_justify="left")
    for column in ("job", "phase", "shares per cluster", "running/total", "succeeded"):
        jobs.add_column(column)
    for view in ordered_jobs(snap, expected):
        phase = Text(view.phase, style=PHASE_STYLE.get(view.phase, ""))
        counted = view.kind != "JobFlow" and view.shares
        jobs.add_row(_name(view), phase, shares_text(view.shares), f"{view.running}/{view.total}" if counted else "",
                     str(view.succeeded) if counted else "")
    return Group(clusters, jobs)


def clusters_line(snap: Snapshot) -> str:
    return "clusters: " + "  ".join(
        f"{c.name} {'Ready' if c.ready == 'True' else 'NotReady'} GPUs {c.gpus_used}/{c.gpus_total}"
        + (f" taints {','.join(c.taints)}" if c.taints else "") for c in snap.clusters)


class PlainLog:
    """Progress for logs and CI: one line per change of a job (placed, reserved, phase), and the
    clusters' line whenever readiness changes and at least every ``every`` seconds."""

    def __init__(self, every: float = 10.0) -> None:
        self.every = every
        self.seen: dict[tuple[str, str], tuple[str, str, str]] = {}
        self.ready: dict[str, str] = {}
        self.last_clusters = -1e9

    def lines(self, snap: Snapshot, expected: dict[tuple[str, str], str], elapsed: float) -> list[str]:
        out = []
        ready = {c.name: c.ready for c in snap.clusters}
        if ready != self.ready or elapsed - self.last_clusters >= self.every:
            out.append(clusters_line(snap))
            self.ready, self.last_clusters = ready, elapsed
        for view in ordered_jobs(snap, expected):
            key = (view.kind, view.name)
            gangs = ",".join(sorted({s.gang for s in view.shares if s.hold and s.gang}))
            now = (view.phase, shares_text([s for s in view.shares], with_min=True) if view.shares else "", gangs)
            before = self.seen.get(key, ("", "", ""))
            self.seen[key] = now
            if now == before:
                continue
            name = f"{view.name}{' (JobFlow)' if view.kind == 'JobFlow' else ''}"
            if now[1] != before[1] and now[1]:
                held = " (held: two-phase start)" if any(s.hold for s in view.shares) else ""
                out.append(f"{name} placed: {now[1]}{held}")
            if now[2] != before[2] and now[2] not in ("", "Pending") and now[0] == "Pending":
                out.append(f"{name} shares: {', '.join(f'{s.cluster} {s.gang}' for s in view.shares if s.hold)}")
            if now[0] != before[0] and not (now[0] == "Pending" and not before[0] and now[1]):
                counts = f" ({view.running}/{view.total} pods)" if view.phase == "Running" and view.shares else ""
                reason = f" ({view.reason})" if view.reason and view.phase not in ("Running", "Completed", "Succeed") \
                    and now[1] == before[1] else ""
                out.append(f"{name} {view.phase}{counts}{reason}")
        return [f"[{elapsed:6.1f}s] {line}" for line in out]


def _seconds(value: Optional[float]) -> str:
    return f"{value:.1f}s" if value is not None else "-"


def summary_table(timeline: Timeline, snap: Snapshot, expected: dict[tuple[str, str], str]) -> Table:
    table = Table(title="Summary", title_justify="left")
    table.add_column("job", no_wrap=True)
    for column in ("final phase", "where it ran: replicas (minAvailable) per cluster", "placement",
                   "reservation", "running"):
        table.add_column(column)
    for view in ordered_jobs(snap, expected):
        m = timeline.jobs.get((view.kind, view.name), Moments())
        want = expected.get((view.kind, view.name), "Completed")
        phase = Text(view.phase, style="green" if view.phase == want else "red")
        if view.kind == "JobFlow":
            table.add_row(_name(view), phase, "", "", "", _seconds(m.span(m.submitted, m.finished)))
            continue
        reservation = _seconds(m.span(m.placed, m.released)) if m.held or not m.placed else "- (1 cluster)"
        table.add_row(_name(view), phase, shares_text(m.shares, with_min=True),
                      _seconds(m.span(m.submitted, m.placed)), reservation, _seconds(m.span(m.running, m.finished)))
    return table


def phase_counts(snap: Snapshot, expected: dict[tuple[str, str], str]) -> str:
    done = sum(1 for key, want in expected.items() if key in snap.jobs and snap.jobs[key].phase == want)
    return f"{done}/{len(expected)} reached their final phase"
