"""A pass over a Job without lifecycle policies and without a deferred action derives no requests
(``reconcile.requests_matter``): each would resolve to SyncJob, which the pass runs anyway. Each
scenario of ``test_settled_passes`` is replayed by a run that derives them on every pass and by one
that skips them when they cannot matter: after every step both must have planned the same and hold
the same state."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Optional

import pytest

from member_agent.controllers import JobObservation, reconcile
from member_agent.controllers.reconcile import requests_matter
from member_agent.controllers.requests import DeferredAction, JobAction, JobEvent, JobRequest
from member_agent.job_runner import JobRun
from member_agent.works import Placement, WorkRecord
from policies.models.core import Pod
from policies.models.volcano_scheduling import PodGroup
from tests.agent.test_settled_passes import CONFIG, SCENARIOS, T0, World, manifest, state


class AlwaysDerives(JobRun):
    def _requests(self, live: list[Pod], pod_group: Optional[PodGroup], when: datetime) -> list[JobRequest]:
        return self._derive(live, pod_group, when)


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_requests_left_underived_are_requests_that_change_nothing(name: str) -> None:
    job, steps, _skips = SCENARIOS[name]
    lean, full = World(JobRun, job), World(AlwaysDerives, job)
    derived = [0]
    derive = JobRun._derive

    def counting(self: JobRun, live: list[Pod], pod_group: Optional[PodGroup], when: datetime) -> list[JobRequest]:
        derived[0] += not isinstance(self, AlwaysDerives)
        return derive(self, live, pod_group, when)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(JobRun, "_derive", counting)
        for world in (lean, full):
            world.settle()
        for step in steps:
            for world in (lean, full):
                world.step(*step)
            assert lean.plans == full.plans, step
            assert state(lean.run) == state(full.run), step
    # only the job with policies derives them (its deferred actions read them too)
    assert (derived[0] > 0) == ("policies" in name)


def test_requests_matter_with_a_policy_or_a_deferred_action() -> None:
    record = WorkRecord("fed", "job", "work-uid", Placement(1), manifest())
    plain = JobRun.start(record, T0).job
    assert not requests_matter(plain, [])
    request = JobRequest(event=JobEvent.POD_PENDING, at=datetime.fromtimestamp(T0, UTC), task="worker", pod="p")
    deferred = DeferredAction(request=request, action=JobAction.RESTART_JOB, due=request.at + timedelta(seconds=60))
    assert requests_matter(plain, [deferred])
    for policies in ([{"event": "PodEvicted", "action": "RestartJob"}], [{"exitCode": 3, "action": "AbortJob"}]):
        with_policy = JobRun.start(WorkRecord("fed", "job", "work-uid", Placement(1), manifest(policies=policies)), T0)
        assert requests_matter(with_policy.job, [])
    task_policy = manifest(tasks=[{"name": "w", "replicas": 1, "policies": [{"event": "PodFailed", "action": "AbortJob"}],
                                   "template": {"spec": {"containers": [{"name": "m", "image": "x"}]}}}])
    assert requests_matter(JobRun.start(WorkRecord("fed", "job", "work-uid", Placement(1), task_policy), T0).job, [])


@pytest.mark.parametrize("event", [e for e in JobEvent if e not in (JobEvent.COMMAND_ISSUED, JobEvent.ANY)])
def test_every_event_without_an_action_plans_as_no_request(event: JobEvent) -> None:
    """Where requests do not matter, any event the observers report plans what no request plans."""
    job = JobRun.start(WorkRecord("fed", "job", "work-uid", Placement(1), manifest()), T0).job
    now = datetime.fromtimestamp(T0, UTC)
    request = JobRequest(event=event, at=now, task="worker", pod="job-worker-0", exit_code=1, job_version=0)
    assert reconcile(JobObservation(job=job, requests=[request]), now, CONFIG) == \
        reconcile(JobObservation(job=job), now, CONFIG)
