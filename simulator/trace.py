"""A job trace as the replay reads it: :class:`TraceJob` rows, whatever the file format.

:func:`simulator.trace_formats.read_trace` picks the reader by the file (the readers build these
rows, so the types live here and the choice of reader there, with no import circle). Each reader
stops at the first bad row with a :class:`TraceError` (file, line, column), or with ``skip_bad``
collects them and goes on.

A row becomes a Volcano Job (:meth:`TraceJob.manifest`): one template per task with the pods'
requests, ``minAvailable`` from the row (a gang of every replica by default), the queue and the
priority (a PriorityClass ``sim-priority-<value>``); the replay's kubelet ends each pod
``duration`` seconds after it starts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from simulator.errors import TraceError

NAMESPACE = "sim"
JOB_API = "batch.volcano.sh/v1alpha1"


def priority_class_name(value: int) -> str:
    return f"sim-priority-{value}" if value >= 0 else f"sim-priority-minus-{-value}"


@dataclass(frozen=True)
class TraceTask:
    name: str
    replicas: int
    #: one pod's requests as Kubernetes quantities ({"nvidia.com/gpu": "1", "cpu": "4", ...})
    requests: tuple[tuple[str, str], ...]
    min_available: Optional[int] = None

    @property
    def gpus_per_pod(self) -> float:
        """Whole GPUs a pod holds (a shared pod: its share of one GPU)."""
        r = dict(self.requests)
        if "nvidia.com/gpu" in r:
            return float(r["nvidia.com/gpu"])
        if "nvidia.com/gpucores" in r:
            return float(r["nvidia.com/gpucores"]) / 100
        return 0.0


@dataclass(frozen=True)
class TraceJob:
    name: str
    arrival: float  # seconds from the start of the trace
    duration: float  # seconds each pod runs once started
    tasks: tuple[TraceTask, ...]
    queue: str = "default"
    priority: Optional[int] = None
    min_available: Optional[int] = None
    #: where the row came from ("philly.csv:12"), for reports
    source: str = ""

    @property
    def gpus(self) -> float:
        return sum(t.replicas * t.gpus_per_pod for t in self.tasks)

    @property
    def pods(self) -> int:
        return sum(t.replicas for t in self.tasks)

    def manifest(self, uid: str) -> dict[str, Any]:
        """The Volcano Job a user would submit for this row."""
        tasks = []
        for task in self.tasks:
            entry: dict[str, Any] = {
                "name": task.name, "replicas": task.replicas,
                "template": {"spec": {"containers": [{"name": "main", "image": "trace",
                                                      "resources": {"requests": dict(task.requests)}}]}},
            }
            if task.min_available is not None:
                entry["minAvailable"] = task.min_available
            tasks.append(entry)
        spec: dict[str, Any] = {"schedulerName": "volcano", "queue": self.queue, "tasks": tasks,
                                "minAvailable": self.min_available if self.min_available is not None else self.pods}
        if self.priority is not None:
            spec["priorityClassName"] = priority_class_name(self.priority)
        return {"apiVersion": JOB_API, "kind": "Job",
                "metadata": {"name": self.name, "namespace": NAMESPACE, "uid": uid}, "spec": spec}


@dataclass
class Trace:
    jobs: list[TraceJob]
    bad: list[TraceError] = field(default_factory=list)
    format: str = ""


def gpu_pods(gpus: int, gpus_per_pod: int) -> tuple[int, int]:
    """(pods, GPUs per pod) for a job of ``gpus`` GPUs on nodes of ``gpus_per_pod``: the fewest
    equal pods of at most ``gpus_per_pod`` GPUs (12 on 8-GPU nodes: 2 pods of 6)."""
    pods = max(1, -(-gpus // gpus_per_pod))
    while gpus % pods:
        pods += 1
    return pods, gpus // pods
