"""Events, actions and the requests that carry them (volcano.md §8.1 LifecyclePolicy, §9.1).

A request is what Volcano's job controller puts on its work queue: an event that happened to
the job (or one of its pods), optionally an explicit action (a ``bus.volcano.sh`` Command),
and the job version the pod belonged to, so a late event about a killed generation of pods
cannot restart the job a second time.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from enum import StrEnum
from typing import Optional


class JobEvent(StrEnum):
    ANY = "*"
    POD_FAILED = "PodFailed"
    POD_EVICTED = "PodEvicted"
    POD_PENDING = "PodPending"
    UNKNOWN = "Unknown"
    TASK_COMPLETED = "TaskCompleted"
    TASK_FAILED = "TaskFailed"
    JOB_UPDATED = "JobUpdated"
    # internal
    OUT_OF_SYNC = "OutOfSync"
    COMMAND_ISSUED = "CommandIssued"
    POD_RUNNING = "PodRunning"


#: Events a lifecycle policy never matches: they only make the controller resync.
INTERNAL_EVENTS = frozenset({JobEvent.OUT_OF_SYNC, JobEvent.COMMAND_ISSUED, JobEvent.POD_RUNNING})


class JobAction(StrEnum):
    ABORT_JOB = "AbortJob"
    RESTART_JOB = "RestartJob"
    RESTART_TASK = "RestartTask"
    RESTART_POD = "RestartPod"
    RESTART_PARTITION = "RestartPartition"
    TERMINATE_JOB = "TerminateJob"
    COMPLETE_JOB = "CompleteJob"
    RESUME_JOB = "ResumeJob"
    # internal
    SYNC_JOB = "SyncJob"
    ENQUEUE_JOB = "EnqueueJob"
    SYNC_QUEUE = "SyncQueue"
    OPEN_QUEUE = "OpenQueue"
    CLOSE_QUEUE = "CloseQueue"


#: Actions that restart only part of a job (killTarget instead of killJob).
TARGETED_RESTARTS = frozenset({JobAction.RESTART_TASK, JobAction.RESTART_POD, JobAction.RESTART_PARTITION})


def parse_event(text: str) -> JobEvent:
    try:
        return JobEvent(text)
    except ValueError:
        valid = ", ".join(e.value for e in JobEvent)
        raise ValueError(f"unknown lifecycle event {text!r} (valid: {valid})") from None


def parse_action(text: str) -> JobAction:
    try:
        return JobAction(text)
    except ValueError:
        valid = ", ".join(a.value for a in JobAction)
        raise ValueError(f"unknown lifecycle action {text!r} (valid: {valid})") from None


@dataclass(frozen=True)
class JobRequest:
    """One thing that happened to a job, as the controller's queue would hold it."""

    event: JobEvent
    at: datetime
    task: str = ""
    pod: str = ""
    exit_code: Optional[int] = None
    #: ``volcano.sh/job-version`` of the pod the event is about (None: current version).
    job_version: Optional[int] = None
    job_uid: str = ""
    #: An explicit action (a Command, or a deferred policy action that fell due).
    action: Optional[JobAction] = None
    #: Partition of a RestartPartition target.
    partition: Optional[int] = None

    def with_action(self, action: JobAction) -> "JobRequest":
        return replace(self, action=action)


@dataclass(frozen=True)
class DeferredAction:
    """A policy action with a ``timeout``: runs at ``due`` unless the pod changes phase first.

    The controller is stateless: it returns the deferred actions in the plan and the caller
    hands them back on the next reconcile (``JobObservation.deferred``).
    """

    request: JobRequest
    action: JobAction
    due: datetime

    def key(self) -> tuple[str, str, str]:
        return (self.request.event.value, self.request.task, self.request.pod)
