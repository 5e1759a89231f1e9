"""What a replay report says, in words and units: pure functions over ``summary.json`` documents.

One list of columns per mode feeds everything that shows a run: the headline table of one run
(the columns transposed), the per-conf comparison (console, HTML, ``comparison.csv``). A column
has a *raw* value (a number for the CSV, percentages already × 100, None when it does not apply)
and a *display* text with its unit. Ratios never leave here as 0–1 numbers, and nothing here
prints ``null`` or JSON: a value that does not apply shows as an em dash.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

Summary = Mapping[str, Any]
NONE = "—"


@dataclass(frozen=True)
class Column:
    header: str
    raw: Callable[[Summary], float | int | str | None]
    unit: str = ""  # "%", "s", "GPUs", or "" for a count/name

    def display(self, summary: Summary) -> str:
        value = self.raw(summary)
        if value is None:
            return NONE
        if isinstance(value, str):
            return value
        if self.unit == "%":
            return f"{value:.2f} %"
        if self.unit == "s" and abs(value) < 100:
            return f"{value:.1f} s"
        text = f"{value:,.0f}" if float(value).is_integer() else f"{value:,.2f}"
        unit = "GPU" if self.unit == "GPUs" and value == 1 else self.unit
        return f"{text} {unit}".rstrip()

    def csv_header(self) -> str:
        return f"{self.header} ({self.unit})" if self.unit else self.header

    def csv_value(self, summary: Summary) -> str:
        value = self.raw(summary)
        if value is None:
            return ""
        return value if isinstance(value, str) else f"{value:.6g}" if isinstance(value, float) else str(value)


def _pct(*path: str) -> Callable[[Summary], float | None]:
    def read(s: Summary) -> float | None:
        value: Any = s
        for key in path:
            value = value.get(key) if isinstance(value, Mapping) else None
        return None if value is None else 100.0 * float(value)
    return read


def _get(*path: str) -> Callable[[Summary], Any]:
    def read(s: Summary) -> Any:
        value: Any = s
        for key in path:
            value = value.get(key) if isinstance(value, Mapping) else None
        return value
    return read


def _share(part: str, whole: str) -> Callable[[Summary], float | None]:
    return lambda s: 100.0 * s[part] / s[whole] if s.get(whole) and s.get(part) is not None else None


def conf_label(s: Summary) -> str:
    return str((s.get("inputs") or {}).get("schedulerConf") or "volcano default")


FGD_COLUMNS: list[Column] = [
    Column("conf", conf_label),
    Column("pods arrived", _get("pods")),
    Column("placed", _get("placed")),
    Column("rejected", _get("rejected")),
    Column("rejected of arrived", _share("rejected", "pods"), "%"),
    Column("GPU allocation at 100 % arrived", _pct("allocationAtFullLoad"), "%"),
    Column("GPU allocation at the end", _pct("gpuAllocationRatio"), "%"),
    Column("arrived load at the end", _pct("arrivedLoadRatio"), "%"),
    Column("allocation at the first rejection", _pct("firstRejection", "allocationRatio"), "%"),
    Column("first rejected request", _get("firstRejection", "gpus"), "GPUs"),
    Column("allocation at the first 8-GPU rejection", _pct("firstRejectionByGpus", "8"), "%"),
    Column("cluster GPUs", _get("gpus"), "GPUs"),
    Column("scheduling sessions", _get("sessions")),
    Column("wall clock", _get("wallSeconds"), "s"),
]

JOB_COLUMNS: list[Column] = [
    Column("conf", conf_label),
    Column("jobs", _get("jobs")),
    Column("finished", _get("finished")),
    Column("unfittable", _get("unfittable", "count")),
    Column("unschedulable at the end", _get("unschedulable", "count")),
    Column("JCT mean", _get("jct", "mean"), "s"),
    Column("JCT p95", _get("jct", "p95"), "s"),
    Column("queueing delay mean", _get("queueingDelay", "mean"), "s"),
    Column("queueing delay p95", _get("queueingDelay", "p95"), "s"),
    Column("GPU allocation (time average)", _pct("gpuAllocationRatio"), "%"),
    Column("peak GPU allocation", _pct("peakGpuAllocationRatio"), "%"),
    Column("jobs split over clusters", _get("crossClusterJobs")),
    Column("cluster GPUs", _get("gpus"), "GPUs"),
    Column("scheduling sessions", _get("sessions")),
    Column("simulated time", _get("simulatedSeconds"), "s"),
    Column("wall clock", _get("wallSeconds"), "s"),
]


def columns_for(summary: Summary) -> list[Column]:
    return JOB_COLUMNS if summary.get("mode") == "jobs" else FGD_COLUMNS


def headline(summary: Summary) -> list[tuple[str, str]]:
    """One run's figures as (what, value with unit), the conf name left to the inputs."""
    return [(c.header, c.display(summary)) for c in columns_for(summary)[1:]]


INPUT_LABELS = {"trace": "trace", "nodes": "node list", "clusters": "cluster layouts", "clusterNames": "clusters",
                "policy": "propagation policy", "schedulerConf": "scheduler conf", "seed": "seed",
                "load": "stop at arrived load", "batch": "pods per session", "period": "scheduling period",
                "coalesce": "event grid", "until": "stop at", "limit": "jobs replayed",
                "percentageNodesToFind": "percentage of nodes to find", "badRows": "unreadable rows skipped"}


def inputs_rows(summary: Summary) -> list[tuple[str, str]]:
    """The run's inputs in words; unset ones are left out."""
    rows = []
    for key, value in (summary.get("inputs") or {}).items():
        text = _input_text(key, value)
        if text is not None:
            rows.append((INPUT_LABELS.get(key, key), text))
    return rows


def _input_text(key: str, value: Any) -> str | None:
    if value is None or value == []:
        return None
    if key == "badRows":
        count = int((value or {}).get("count") or 0)
        return f"{count:,} (listed in summary.json)" if count else "none"
    if key == "load":
        return f"{100 * float(value):.0f} % of the cluster's GPUs"
    if key in ("period", "coalesce", "until"):
        return f"{float(value):g} s"
    if key == "percentageNodesToFind":
        return "adaptive (Volcano's default)" if not value else f"{value} %"
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    return str(value)


def trade_offs(summaries: Sequence[Summary]) -> list[str]:
    """What each conf gains and pays, in sentences (a single run: what it paid)."""
    if not summaries:
        return []
    if summaries[0].get("mode") == "jobs":
        return _job_trade_offs(summaries)
    return _fgd_trade_offs(summaries)


def _n(value: Any) -> str:
    return f"{value:,}" if isinstance(value, int) else NONE if value is None else f"{value:,.0f}"


def _fgd_trade_offs(summaries: Sequence[Summary]) -> list[str]:
    rejected_pct = FGD_COLUMNS[4]
    at_full = FGD_COLUMNS[5]
    lines = []
    for s in summaries:
        lines.append(f"{conf_label(s)} rejects {_n(s.get('rejected'))} of {_n(s.get('pods'))} pods "
                     f"({rejected_pct.display(s)}) and reaches {at_full.display(s)} GPU allocation "
                     f"when the arrived load reaches 100 %.")
    if len(summaries) > 1:
        best = min(summaries, key=lambda s: int(s.get("rejected") or 0))
        for s in summaries:
            if s is best:
                continue
            more = int(s.get("rejected") or 0) - int(best.get("rejected") or 0)
            gain = (at_full.raw(s) or 0.0) - (at_full.raw(best) or 0.0)
            lines.append(f"{conf_label(s)} rejects {more:+,} pods against {conf_label(best)} "
                         f"for {gain:+.2f} percentage points of allocation at 100 % arrived load.")
    return lines


def _job_trade_offs(summaries: Sequence[Summary]) -> list[str]:
    jct, queueing, alloc = JOB_COLUMNS[5], JOB_COLUMNS[7], JOB_COLUMNS[9]
    lines = []
    for s in summaries:
        lines.append(f"{conf_label(s)}: {_n(s.get('finished'))} of {_n(s.get('jobs'))} jobs finished, "
                     f"{_n((s.get('unfittable') or {}).get('count'))} can never fit, "
                     f"{_n((s.get('unschedulable') or {}).get('count'))} were still waiting at the end; "
                     f"mean JCT {jct.display(s)}, mean queueing delay {queueing.display(s)}, "
                     f"GPU allocation {alloc.display(s)}.")
    return lines
