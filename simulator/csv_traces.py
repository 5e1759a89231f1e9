"""The two GPU-count csv traces: Microsoft Philly (Jeon et al., ATC'19) and the ITP clusters of
ElasticFlow (Gu et al., ASPLOS'23), read from their tarball without extracting it.

* Philly (``timestamp,duration,num_gpus,gpu_time,cluster``): ``timestamp`` is wall-clock
  ``YYYY-MM-DD HH:MM:SS`` (rows unsorted; arrival = seconds after the earliest),
  ``duration`` seconds, ``cluster`` the virtual cluster: the job's queue ``vc-<cluster>``.
* ITP (``job_id,submission_time,duration,num_gpu``, ``clusterNN.csv`` inside
  ``raw-traces.tar.gz``; name the member as ``raw-traces.tar.gz#cluster05``): seconds from
  the start of the window; every job in queue ``default``.

Neither trace has CPU or memory: a job of G GPUs becomes one task ``worker`` of the fewest
equal pods of at most ``gpus_per_pod`` GPUs, each asking ``cpu_per_gpu`` and
``memory_per_gpu`` per GPU; the gang is every pod (minAvailable = replicas).
"""

from __future__ import annotations

import io
import os
import tarfile
from datetime import datetime
from typing import Callable, Iterable, Iterator

from policies.errors import InvalidQuantity
from policies.quantity import parse_quantity
from simulator.csv_rows import csv_records
from simulator.errors import TraceError
from simulator.trace import Trace, TraceJob, TraceTask, gpu_pods

PHILLY = ("timestamp", "duration", "num_gpus", "cluster")
ITP = ("job_id", "submission_time", "duration", "num_gpu")


def _number(path: str, line: int, record: dict[str, str], column: str, *, integer: bool = False) -> float:
    text = (record.get(column) or "").strip()
    try:
        value = float(text)
    except ValueError:
        raise TraceError(path, line, column, f"{text!r} is not a number") from None
    if value != value or value < 0 or value == float("inf"):
        raise TraceError(path, line, column, f"{text!r} must be a finite number >= 0")
    if integer and (value != int(value) or value < 1):
        raise TraceError(path, line, column, f"{text!r} must be a whole number >= 1")
    return value


class _Shape:
    """Per-GPU defaults turned into pod requests once per GPU count."""

    def __init__(self, gpus_per_pod: int, cpu_per_gpu: str, memory_per_gpu: str) -> None:
        if gpus_per_pod < 1:
            raise TraceError("--gpus-per-pod", 0, "-", "must be >= 1")
        for flag, text in (("--cpu-per-gpu", cpu_per_gpu), ("--memory-per-gpu", memory_per_gpu)):
            try:
                parse_quantity(text)
            except (InvalidQuantity, ValueError) as exc:
                raise TraceError(flag, 0, "-", f"{text!r} is not a quantity: {exc}") from None
        self.gpus_per_pod = gpus_per_pod
        self.cpu, self.memory = parse_quantity(cpu_per_gpu).value, parse_quantity(memory_per_gpu).value
        self._tasks: dict[int, tuple[TraceTask, ...]] = {}

    def tasks(self, gpus: int) -> tuple[TraceTask, ...]:
        if gpus not in self._tasks:
            pods, per_pod = gpu_pods(gpus, self.gpus_per_pod)
            requests = (("cpu", f"{float(self.cpu * per_pod):g}"), ("memory", f"{int(self.memory * per_pod)}"),
                        ("nvidia.com/gpu", str(per_pod)))
            self._tasks[gpus] = (TraceTask("worker", pods, requests),)
        return self._tasks[gpus]


def _collect(rows: Iterator[tuple[int, dict[str, str]]], make: Callable[[int, dict[str, str]], TraceJob],
             skip_bad: bool, fmt: str) -> Trace:
    trace = Trace([], format=fmt)
    for line, record in rows:
        try:
            trace.jobs.append(make(line, record))
        except TraceError as exc:
            if not skip_bad:
                raise
            trace.bad.append(exc)
    return trace


def read_csv_trace(path: str, *, skip_bad: bool = False, gpus_per_pod: int = 8, cpu_per_gpu: str = "4",
                   memory_per_gpu: str = "16Gi") -> Trace:
    """A Philly csv, or an ITP cluster csv extracted from the tarball (told apart by the header)."""
    shape = _Shape(gpus_per_pod, cpu_per_gpu, memory_per_gpu)
    try:
        with open(path, encoding="utf-8", newline="") as handle:
            header = handle.readline()
            handle.seek(0)
            if "submission_time" in header:
                return _itp_rows(handle, path, shape, skip_bad)
            return _philly_rows(handle, path, shape, skip_bad)
    except UnicodeDecodeError as exc:
        raise TraceError(path, 0, "-", f"not UTF-8 text: {exc}") from None


def _philly_rows(handle: Iterable[str], path: str, shape: _Shape, skip_bad: bool) -> Trace:
    stamps: list[float] = []

    def make(line: int, record: dict[str, str]) -> TraceJob:
        text = (record.get("timestamp") or "").strip()
        try:
            when = datetime.fromisoformat(text).timestamp()
        except ValueError:
            raise TraceError(path, line, "timestamp", f"{text!r} is not 'YYYY-MM-DD HH:MM:SS'") from None
        duration = _number(path, line, record, "duration")
        gpus = int(_number(path, line, record, "num_gpus", integer=True))
        vc = (record.get("cluster") or "").strip().lower()
        if not vc or not vc.replace("-", "").isalnum():
            raise TraceError(path, line, "cluster", f"{vc!r} is not a virtual-cluster name")
        stamps.append(when)
        return TraceJob(f"philly-{line:06d}", when, duration, shape.tasks(gpus), queue=f"vc-{vc}",
                        source=f"{os.path.basename(path)}:{line}")

    trace = _collect(csv_records(handle, path, PHILLY), make, skip_bad, "philly")
    start = min(stamps, default=0.0)
    trace.jobs = [TraceJob(j.name, j.arrival - start, j.duration, j.tasks, j.queue, source=j.source)
                  for j in trace.jobs]
    return trace


def _itp_rows(handle: Iterable[str], path: str, shape: _Shape, skip_bad: bool) -> Trace:
    def make(line: int, record: dict[str, str]) -> TraceJob:
        arrival = _number(path, line, record, "submission_time")
        duration = _number(path, line, record, "duration")
        gpus = int(_number(path, line, record, "num_gpu", integer=True))
        return TraceJob(f"itp-{line:06d}", arrival, duration, shape.tasks(gpus), source=f"{os.path.basename(path)}:{line}")

    return _collect(csv_records(handle, path, ITP), make, skip_bad, "itp")


def read_itp(path: str, member: str, *, skip_bad: bool = False, gpus_per_pod: int = 8, cpu_per_gpu: str = "4",
             memory_per_gpu: str = "16Gi") -> Trace:
    """One ``clusterNN.csv`` read straight from the tarball (``member``: ``cluster05`` or ``cluster05.csv``)."""
    shape = _Shape(gpus_per_pod, cpu_per_gpu, memory_per_gpu)
    try:
        archive = tarfile.open(path)  # noqa: SIM115 (closed by the with-block below; the open itself may fail)
    except (OSError, tarfile.TarError) as exc:
        raise TraceError(path, 0, "-", f"cannot open the tarball: {exc}") from None
    with archive:
        names = sorted(m.name for m in archive.getmembers() if m.isfile() and m.name.endswith(".csv"))
        wanted = member if member.endswith(".csv") else f"{member}.csv"
        found = next((n for n in names if n == wanted or os.path.basename(n) == wanted), None) if member else None
        if found is None:
            raise TraceError(path, 0, "-", f"name one member as {path}#MEMBER "
                             f"({'no member ' + repr(member) if member else 'no member given'}; it holds "
                             f"{', '.join(os.path.splitext(os.path.basename(n))[0] for n in names)})")
        raw = archive.extractfile(found)
        assert raw is not None
        text = io.TextIOWrapper(raw, encoding="utf-8", newline="")
        return _itp_rows(text, f"{path}#{os.path.basename(found)}", shape, skip_bad)
