"""Which action a request triggers: Volcano's ``applyPolicies`` (volcano.md §8.1).

Order of resolution:

1. an explicit action in the request (a Command, or a deferred action that fell due) wins;
2. internal events (OutOfSync, CommandIssued, PodRunning) only resync the job;
3. a request about another job uid or an older job version only resyncs (its pods were
   already killed by a restart, so it must not restart the job again);
4. the policies of the request's **task**, then the **job**'s policies, first match wins:
   a policy matches when it lists the event (or ``*``), or when its ``exitCode`` equals the
   request's exit code. ``PodPending`` only matches a policy that has a ``timeout``;
5. otherwise SyncJob.

A match with a non-zero ``timeout`` is not run now: it becomes a :class:`DeferredAction`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Mapping, Optional, Sequence

from member_agent.controllers.job_view import JobView
from member_agent.controllers.requests import (
    INTERNAL_EVENTS,
    DeferredAction,
    JobAction,
    JobEvent,
    JobRequest,
    parse_action,
)
from policies.errors import FieldError, ValidationFailed
from policies.models.fields import duration_seconds
from policies.models.volcano_batch import LifecyclePolicy


@dataclass(frozen=True)
class Resolution:
    action: JobAction
    delay: timedelta = timedelta(0)
    #: Where the action came from (``spec.tasks[1].policies[0]``), for events and tests.
    source: str = ""


SYNC = Resolution(JobAction.SYNC_JOB)


def _policy_action(policy: LifecyclePolicy, path: str, ref: str) -> JobAction:
    try:
        return parse_action(policy.action or "")
    except ValueError as exc:
        raise ValidationFailed(ref, [FieldError(f"{path}.action", str(exc))]) from None


def _matches(policy: LifecyclePolicy, request: JobRequest) -> bool:
    events = policy.all_events()
    if events and (request.event.value in events or JobEvent.ANY.value in events):
        # A pod is Pending the moment it is created: without a timeout the rule would fire at once.
        return request.event != JobEvent.POD_PENDING or bool(policy.timeout)
    return policy.exit_code is not None and request.exit_code is not None and policy.exit_code == request.exit_code


def _first_match(policies: Sequence[LifecyclePolicy], request: JobRequest, path: str, ref: str) -> Optional[Resolution]:
    for i, policy in enumerate(policies):
        if _matches(policy, request):
            delay = timedelta(seconds=duration_seconds(policy.timeout)) if policy.timeout else timedelta(0)
            return Resolution(_policy_action(policy, f"{path}[{i}]", ref), delay, f"{path}[{i}]")
    return None


def resolve(job: JobView, request: JobRequest, current_version: int) -> Resolution:
    """The action ``request`` triggers for ``job`` at status version ``current_version``."""
    if request.action is not None:
        return Resolution(request.action, source="request")
    if request.event in INTERNAL_EVENTS:
        return SYNC
    if request.job_uid and job.uid and request.job_uid != job.uid:
        return SYNC
    if request.job_version is not None and request.job_version < current_version:
        return SYNC
    if request.task:
        task = job.task(request.task)
        if task is not None:
            found = _first_match(task.policies, request, f"spec.tasks[{task.position}].policies", job.ref)
            if found is not None:
                return found
    found = _first_match(job.policies, request, "spec.policies", job.ref)
    return found if found is not None else SYNC


def only_resyncs(job: JobView) -> bool:
    """No policy on the job or its tasks: every request without an explicit action is SyncJob."""
    return not job.policies and not any(task.policies for task in job.tasks)


def defer(request: JobRequest, resolution: Resolution) -> DeferredAction:
    return DeferredAction(request=request, action=resolution.action, due=request.at + resolution.delay)


#: A deferred pod event only still applies while the pod stays in the phase the event reported.
_EXPECTED_PHASE = {JobEvent.POD_PENDING: "Pending", JobEvent.POD_FAILED: "Failed"}


def still_valid(deferred: DeferredAction, later: Sequence[JobRequest], pod_phases: Mapping[str, str],
                version: int) -> bool:
    """A deferred action survives until its pod changes phase or the job restarts.

    ``pod_phases`` maps every live (not terminating) pod to its phase. A repeat of the same
    event (a resync reporting the pod still Pending) keeps the timer running.
    """
    request = deferred.request
    if request.job_version is not None and request.job_version < version:
        return False
    if not request.pod:
        return True
    if request.event == JobEvent.POD_EVICTED:
        # The controller recreates an evicted pod at once; the delay is cancelled only when
        # the replacement is running again.
        if pod_phases.get(request.pod) == "Running":
            return False
        return not any(o.pod == request.pod and o.event == JobEvent.POD_RUNNING and o.at >= request.at
                       for o in later)
    if request.pod not in pod_phases:
        return False
    expected = _EXPECTED_PHASE.get(request.event)
    if expected is not None and pod_phases[request.pod] != expected:
        return False
    return not any(o.pod == request.pod and o.event != request.event and o.at >= request.at for o in later)
