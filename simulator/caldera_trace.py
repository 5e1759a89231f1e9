"""The Caldera trace format: JSON Lines, one job a line (docs/simulate.md "The Caldera format").

    {"name": "llm-7", "arrival": 120, "duration": 3600, "queue": "research", "priority": 100,
     "minAvailable": 4, "tasks": [{"name": "worker", "replicas": 4,
                                   "requests": {"cpu": "8", "memory": "64Gi", "nvidia.com/gpu": 2}}]}

``arrival`` and ``duration`` are seconds (arrival from the start of the trace); ``tasks`` is
required, everything else optional (``name``: ``job-<line>``; ``queue``: ``default``;
``minAvailable``: every replica). ``requests`` are Kubernetes quantities; ``"gpu": 0.25``
is a fractional GPU, asked as ``nvidia.com/gpucores: 25`` (HAMi's percent of one GPU), and
``"gpu": 2`` is ``nvidia.com/gpu: 2``. Blank lines and lines starting with ``#`` are skipped.
A bad line is reported as ``FILE:LINE: column FIELD.PATH: rule``.
"""

from __future__ import annotations

import json
import re
from typing import Any

from policies.errors import InvalidQuantity
from policies.quantity import parse_quantity
from simulator.errors import TraceError
from simulator.trace import Trace, TraceJob, TraceTask

JOB_FIELDS = {"name", "arrival", "duration", "tasks", "queue", "priority", "minAvailable"}
TASK_FIELDS = {"name", "replicas", "minAvailable", "requests"}
NAME = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")


class _Line:
    def __init__(self, path: str, line: int) -> None:
        self.path, self.line = path, line

    def fail(self, column: str, message: str) -> TraceError:
        return TraceError(self.path, self.line, column, message)

    def number(self, value: Any, column: str, *, integer: bool = False, low: float = 0) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.fail(column, f"{value!r} is not a number")
        if value != value or value in (float("inf"), float("-inf")) or value < low:
            raise self.fail(column, f"{value!r} must be a finite number >= {low:g}")
        if integer and value != int(value):
            raise self.fail(column, f"{value!r} must be a whole number")
        return float(value)

    def name(self, value: Any, column: str) -> str:
        if not isinstance(value, str) or not NAME.match(value):
            raise self.fail(column, f"{value!r} is not a DNS-1123 label (lower-case letters, digits, '-')")
        return value

    def unknown(self, obj: dict[str, Any], allowed: set[str], prefix: str) -> None:
        extra = sorted(set(obj) - allowed)
        if extra:
            raise self.fail(f"{prefix}{extra[0]}", f"unknown field (allowed: {', '.join(sorted(allowed))})")


def _requests(at: _Line, raw: Any, prefix: str) -> tuple[tuple[str, str], ...]:
    if not isinstance(raw, dict):
        raise at.fail(prefix.rstrip("."), "must be an object of resource: quantity")
    out: dict[str, str] = {}
    for resource, value in raw.items():
        column = f"{prefix}{resource}"
        if resource == "gpu":
            gpus = at.number(value, column)
            if 0 < gpus < 1:
                out["nvidia.com/gpucores"] = f"{gpus * 100:g}"
            elif gpus >= 1 and gpus == int(gpus):
                out["nvidia.com/gpu"] = str(int(gpus))
            elif gpus:
                raise at.fail(column, f"{value!r}: a fraction of one GPU (0..1) or a whole number of GPUs")
            continue
        text = str(value) if not isinstance(value, bool) else "?"
        try:
            quantity = parse_quantity(text)
        except (InvalidQuantity, ValueError):
            raise at.fail(column, f"{value!r} is not a Kubernetes quantity") from None
        if quantity.value < 0:
            raise at.fail(column, f"{value!r} must not be negative")
        if resource == "nvidia.com/gpu" and quantity.value.denominator != 1:
            raise at.fail(column, f"{value!r}: nvidia.com/gpu is whole GPUs (use \"gpu\": 0.5 for a share of one)")
        out[resource] = text
    return tuple(sorted(out.items()))


def _task(at: _Line, raw: Any, i: int) -> TraceTask:
    prefix = f"tasks[{i}]"
    if not isinstance(raw, dict):
        raise at.fail(prefix, "must be an object")
    at.unknown(raw, TASK_FIELDS, f"{prefix}.")
    if "name" not in raw:
        raise at.fail(f"{prefix}.name", "required")
    name = at.name(raw["name"], f"{prefix}.name")
    replicas = int(at.number(raw.get("replicas", 1), f"{prefix}.replicas", integer=True, low=1))
    minimum = raw.get("minAvailable")
    if minimum is not None:
        minimum = int(at.number(minimum, f"{prefix}.minAvailable", integer=True))
        if minimum > replicas:
            raise at.fail(f"{prefix}.minAvailable", f"{minimum} is more than replicas ({replicas})")
    return TraceTask(name, replicas, _requests(at, raw.get("requests", {}), f"{prefix}.requests."), minimum)


def parse_line(at: _Line, raw: Any) -> TraceJob:
    if not isinstance(raw, dict):
        raise at.fail("-", "a line must be one JSON object")
    at.unknown(raw, JOB_FIELDS, "")
    for required in ("arrival", "duration", "tasks"):
        if required not in raw:
            raise at.fail(required, "required")
    name = at.name(raw.get("name", f"job-{at.line}"), "name")
    arrival = at.number(raw["arrival"], "arrival")
    duration = at.number(raw["duration"], "duration")
    if not isinstance(raw["tasks"], list) or not raw["tasks"]:
        raise at.fail("tasks", "must be a non-empty list")
    tasks = tuple(_task(at, t, i) for i, t in enumerate(raw["tasks"]))
    seen: set[str] = set()
    for i, task in enumerate(tasks):
        if task.name in seen:
            raise at.fail(f"tasks[{i}].name", f"{task.name!r} appears twice")
        seen.add(task.name)
    queue = at.name(raw.get("queue", "default"), "queue")
    priority = raw.get("priority")
    if priority is not None:
        priority = int(at.number(priority, "priority", integer=True, low=-(2**31)))
    minimum = raw.get("minAvailable")
    if minimum is not None:
        minimum = int(at.number(minimum, "minAvailable", integer=True, low=1))
        total = sum(t.replicas for t in tasks)
        if minimum > total:
            raise at.fail("minAvailable", f"{minimum} is more than the job's replicas ({total})")
    return TraceJob(name, arrival, duration, tasks, queue, priority, minimum, source=f"{at.path}:{at.line}")


def read_jsonl(path: str, *, skip_bad: bool = False) -> Trace:
    trace = Trace([], format="caldera")
    names: set[str] = set()
    with open(path, encoding="utf-8") as handle:
        for number, text in enumerate(handle, start=1):
            if not text.strip() or text.lstrip().startswith("#"):
                continue
            at = _Line(path, number)
            try:
                try:
                    raw = json.loads(text.rstrip("\r\n"))
                except ValueError as exc:
                    raise at.fail(f"char {getattr(exc, 'colno', 0)}", f"not JSON: {exc}") from None
                job = parse_line(at, raw)
                if job.name in names:
                    raise at.fail("name", f"{job.name!r}: another line has this job name")
                names.add(job.name)
                trace.jobs.append(job)
            except TraceError as exc:
                if not skip_bad:
                    raise
                trace.bad.append(exc)
    return trace
