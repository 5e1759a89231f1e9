"""Reading observed pods: phase, task, version, restarts, exit code, and the status counts."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Optional

from member_agent.controllers import naming
from policies.models.core import Pod

PENDING, RUNNING, SUCCEEDED, FAILED, UNKNOWN = "Pending", "Running", "Succeeded", "Failed", "Unknown"
FINISHED_POD_PHASES = frozenset({SUCCEEDED, FAILED})


def phase(pod: Pod) -> str:
    """The pod phase; a pod without status has just been created, so it is Pending."""
    return (pod.status.phase if pod.status else None) or PENDING


def is_terminating(pod: Pod) -> bool:
    return pod.metadata.deletion_timestamp is not None


def annotation(pod: Pod, key: str) -> Optional[str]:
    return (pod.metadata.annotations or {}).get(key)


def task_of(pod: Pod) -> str:
    return annotation(pod, naming.TASK_SPEC) or naming.DEFAULT_TASK_SPEC


def version_of(pod: Pod) -> Optional[int]:
    text = annotation(pod, naming.JOB_VERSION)
    return int(text) if text is not None and text.lstrip("-").isdigit() else None


def _container_statuses(pod: Pod, init: bool = False) -> list[dict[str, Any]]:
    if pod.status is None:
        return []
    statuses = pod.status.init_container_statuses if init else pod.status.container_statuses
    return list(statuses or [])


def restart_count(pod: Pod) -> int:
    """Container restarts of the pod, init containers included (Volcano's TaskFailed input)."""
    return sum(int(s.get("restartCount") or 0) for s in _container_statuses(pod) + _container_statuses(pod, True))


def first_exit_code(pod: Pod) -> Optional[int]:
    """Exit code of the first container's termination, as Volcano reads it for PodFailed."""
    statuses = _container_statuses(pod)
    if not statuses:
        return None
    terminated = (statuses[0].get("state") or {}).get("terminated")
    if not terminated or terminated.get("exitCode") is None:
        return None
    return int(terminated["exitCode"])


def is_ready(pod: Pod) -> bool:
    """Running with every container ready (vacuously true when the kubelet reports none)."""
    return phase(pod) == RUNNING and all(bool(s.get("ready")) for s in _container_statuses(pod))


@dataclass
class PodCounts:
    """The per-phase counts a Job status carries (``pending`` ... ``taskStatusCount``)."""

    pending: int = 0
    running: int = 0
    succeeded: int = 0
    failed: int = 0
    terminating: int = 0
    unknown: int = 0
    task_status: dict[str, dict[str, int]] = field(default_factory=dict)

    def add(self, pod: Pod) -> None:
        """Classify a live pod by phase (terminating pods go through :meth:`add_terminating`)."""
        current = phase(pod)
        if current == PENDING:
            self.pending += 1
        elif current == RUNNING:
            self.running += 1
        elif current == SUCCEEDED:
            self.succeeded += 1
        elif current == FAILED:
            self.failed += 1
        else:
            self.unknown += 1
        per_task = self.task_status.setdefault(task_of(pod), {})
        per_task[current] = per_task.get(current, 0) + 1

    def add_terminating(self) -> None:
        self.terminating += 1

    def add_created(self, task: str) -> None:
        """A pod created in this pass counts as Pending, as Volcano counts a successful create."""
        self.pending += 1
        per_task = self.task_status.setdefault(task, {})
        per_task[PENDING] = per_task.get(PENDING, 0) + 1

    def alive(self) -> int:
        return self.pending + self.running + self.terminating

    def to_status_fields(self) -> dict[str, Any]:
        return {
            "pending": self.pending,
            "running": self.running,
            "succeeded": self.succeeded,
            "failed": self.failed,
            "terminating": self.terminating,
            "unknown": self.unknown,
            "taskStatusCount": {task: {"phase": dict(sorted(p.items()))} for task, p in sorted(self.task_status.items())},
        }


def count(pods: Iterable[Pod], deleted: frozenset[str] = frozenset()) -> PodCounts:
    """Counts over ``pods``; those being deleted (observed or by this pass) count as terminating."""
    counts = PodCounts()
    for pod in pods:
        if is_terminating(pod) or pod.metadata.name in deleted:
            counts.add_terminating()
        else:
            counts.add(pod)
    return counts
