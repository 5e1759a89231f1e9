"""Events from what changed: pod, PodGroup and Job transitions → requests (volcano.md §9.1).

The agent keeps the previous observation and calls these with the old and new objects; the
requests go into the next :func:`reconcile` call. One pod update yields at most one event,
chosen in Volcano's order: PodFailed, TaskCompleted, TaskFailed, PodRunning, PodPending,
else OutOfSync.
"""

from __future__ import annotations

from datetime import datetime
from typing import Collection, Iterable, Optional

from member_agent.controllers import naming, pod_status
from member_agent.controllers.job_view import UNLIMITED, JobView, view_job
from member_agent.controllers.requests import JobEvent, JobRequest
from member_agent.controllers.timestamps import parse_rfc3339
from policies.models.core import Pod
from policies.models.volcano_batch import Job
from policies.models.volcano_scheduling import PodGroup


def _request(event: JobEvent, pod: Pod, now: datetime, exit_code: Optional[int] = None) -> JobRequest:
    return JobRequest(
        event=event,
        at=now,
        task=pod_status.task_of(pod),
        pod=pod.metadata.name or "",
        exit_code=exit_code,
        job_version=pod_status.version_of(pod),
    )


def _task_pods(pods: Iterable[Pod], task: str) -> list[Pod]:
    return [p for p in pods if pod_status.task_of(p) == task]


def task_completed(job: JobView, pods: Iterable[Pod], task: str) -> bool:
    """Every replica of ``task`` (in this share) has succeeded."""
    spec = job.task(task)
    if spec is None or spec.replicas <= 0:
        return False
    succeeded = sum(1 for p in _task_pods(pods, task) if pod_status.phase(p) == pod_status.SUCCEEDED)
    return succeeded >= spec.replicas


def task_failed(job: JobView, pods: Iterable[Pod], task: str) -> bool:
    """Container restarts of the task's pending/running pods reached the task's maxRetry."""
    spec = job.task(task)
    if spec is None or spec.max_retry == UNLIMITED:
        return False
    restarts = sum(
        pod_status.restart_count(p)
        for p in _task_pods(pods, task)
        if pod_status.phase(p) in (pod_status.PENDING, pod_status.RUNNING)
    )
    return restarts >= spec.max_retry


class _TaskTotals:
    """Per-task sums over the new observation, computed once per call (not once per updated pod)."""

    def __init__(self, job: JobView, pods: list[Pod]) -> None:
        self.job = job
        self.succeeded: dict[str, int] = {}
        self.restarts: dict[str, int] = {}
        for pod in pods:
            task, phase = pod_status.task_of(pod), pod_status.phase(pod)
            if phase == pod_status.SUCCEEDED:
                self.succeeded[task] = self.succeeded.get(task, 0) + 1
            elif phase in (pod_status.PENDING, pod_status.RUNNING):
                self.restarts[task] = self.restarts.get(task, 0) + pod_status.restart_count(pod)

    def completed(self, task: str) -> bool:
        spec = self.job.task(task)
        return spec is not None and spec.replicas > 0 and self.succeeded.get(task, 0) >= spec.replicas

    def failed(self, task: str) -> bool:
        spec = self.job.task(task)
        return spec is not None and spec.max_retry != UNLIMITED and self.restarts.get(task, 0) >= spec.max_retry


def _update_event(totals: _TaskTotals, old: Pod, new: Pod, now: datetime) -> JobRequest:
    before, after = pod_status.phase(old), pod_status.phase(new)
    task = pod_status.task_of(new)
    if after == pod_status.FAILED and before != pod_status.FAILED:
        return _request(JobEvent.POD_FAILED, new, now, pod_status.first_exit_code(new))
    if after == pod_status.SUCCEEDED and before != pod_status.SUCCEEDED and totals.completed(task):
        return _request(JobEvent.TASK_COMPLETED, new, now)
    if after in (pod_status.RUNNING, pod_status.PENDING) and totals.failed(task):
        return _request(JobEvent.TASK_FAILED, new, now)
    if after == pod_status.RUNNING and before != pod_status.RUNNING:
        return _request(JobEvent.POD_RUNNING, new, now)
    if after == pod_status.PENDING and before != pod_status.PENDING:
        return _request(JobEvent.POD_PENDING, new, now)
    return _request(JobEvent.OUT_OF_SYNC, new, now)


def observe_pods(
    job: Job | JobView,
    old_pods: Iterable[Pod],
    new_pods: Iterable[Pod],
    now: datetime,
    deleted_by_controller: Collection[str] = (),
) -> list[JobRequest]:
    """Requests for every pod added, changed or removed between two observations.

    A removed pod is ``PodEvicted`` unless the controller deleted it (``deleted_by_controller``
    or the ``volcano.sh/controller-out-of-sync`` annotation) or it is not one of the job's
    task pods; those removals only resync.
    """
    if isinstance(job, Job):
        job = view_job(job)
    before = {p.metadata.name: p for p in old_pods}
    after_list = list(new_pods)
    after = {p.metadata.name: p for p in after_list}
    requests: list[JobRequest] = []
    totals: Optional[_TaskTotals] = None
    for name in sorted(after, key=str):
        pod = after[name]
        old = before.get(name)
        if old is None:
            out_of_sync = pod_status.annotation(pod, naming.OUT_OF_SYNC) is not None
            # Timed from the pod's creation, so a PodPending timeout survives an agent restart.
            created = parse_rfc3339(pod.metadata.creation_timestamp) or now
            requests.append(_request(JobEvent.OUT_OF_SYNC if out_of_sync else JobEvent.POD_PENDING, pod,
                                     min(created, now)))
        elif old is not pod and old != pod:
            if totals is None:
                totals = _TaskTotals(job, after_list)
            requests.append(_update_event(totals, old, pod, now))
    for name in sorted(set(before) - set(after), key=str):
        pod = before[name]
        ours = name in deleted_by_controller or pod_status.annotation(pod, naming.OUT_OF_SYNC) is not None
        known = pod_status.annotation(pod, naming.TASK_SPEC) is not None
        event = JobEvent.POD_EVICTED if known and not ours else JobEvent.OUT_OF_SYNC
        requests.append(_request(event, pod, now))
    return requests


def observe_pod_group(old: Optional[PodGroup], new: Optional[PodGroup], now: datetime) -> list[JobRequest]:
    """A PodGroup phase change resyncs the job; entering ``Unknown`` is the ``Unknown`` event."""
    old_phase = old.status.phase if old is not None and old.status else None
    new_phase = new.status.phase if new is not None and new.status else None
    if new is None or old_phase == new_phase:
        return []
    event = JobEvent.UNKNOWN if new_phase == "Unknown" else JobEvent.OUT_OF_SYNC
    return [JobRequest(event=event, at=now)]


def observe_job(old: Optional[Job], new: Job, now: datetime) -> list[JobRequest]:
    """A spec change is ``JobUpdated``; a phase change written elsewhere only resyncs."""
    if old is None:
        return [JobRequest(event=JobEvent.OUT_OF_SYNC, at=now, job_uid=new.metadata.uid or "")]
    if old is new:
        return []  # a pass that left the status alone keeps the Job itself
    if old.spec is not new.spec and old.spec != new.spec:  # a status change keeps the spec object
        return [JobRequest(event=JobEvent.JOB_UPDATED, at=now, job_uid=new.metadata.uid or "")]
    old_phase = old.status.state.phase if old.status and old.status.state else None
    new_phase = new.status.state.phase if new.status and new.status.state else None
    if old_phase != new_phase:
        return [JobRequest(event=JobEvent.OUT_OF_SYNC, at=now, job_uid=new.metadata.uid or "")]
    return []
