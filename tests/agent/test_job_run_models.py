"""JobRun keeps the PodGroup model across passes: when the scheduler moved only the status, the
status is validated again and the rest of the model kept; the PodGroup the controller writes is kept
as the model it wrote. Every result equals a full validation of the wire dict."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from member_agent.controllers import ControllerConfig
from member_agent.job_runner import JobRun
from member_agent.pod_group_models import written_model
from member_agent.works import Placement, WorkRecord
from policies.models.volcano_scheduling import PodGroup

T0 = 1_700_000_000.0
CONFIG = ControllerConfig()

WIRE: dict[str, Any] = {
    "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
    "metadata": {"name": "pg", "namespace": "ns"},
    "spec": {"minMember": 2, "queue": "default", "minResources": {"cpu": "2"}},
    "status": {"phase": "Pending"},
}


def _run(wire: dict[str, Any]) -> JobRun:
    run = JobRun.__new__(JobRun)
    run.pod_group, run._group_model = wire, None
    return run


@pytest.mark.parametrize("status", [
    {"phase": "Inqueue"},
    {"phase": "Running", "conditions": [{"type": "Scheduled", "status": "True", "transitionID": "x"}]},
    None,
])
def test_a_status_only_change_keeps_the_spec_and_equals_a_full_validation(status: Any) -> None:
    run = _run(copy.deepcopy(WIRE))
    first = run._pod_group_model()
    assert run._pod_group_model() is first  # unchanged: the same model
    if status is None:
        del run.pod_group["status"]
    else:
        run.pod_group["status"] = status
    second = run._pod_group_model()
    assert second is not first and second.spec is first.spec
    assert second == PodGroup.model_validate(run.pod_group)


def test_a_spec_change_is_validated_whole() -> None:
    run = _run(copy.deepcopy(WIRE))
    first = run._pod_group_model()
    run.pod_group["spec"]["minMember"] = 3
    second = run._pod_group_model()
    assert second.spec is not first.spec and second.spec.min_member == 3


def test_a_bad_status_fails_as_a_full_validation_fails() -> None:
    run = _run(copy.deepcopy(WIRE))
    run._pod_group_model()
    run.pod_group["status"] = {"phase": "Pending", "running": "many"}
    with pytest.raises(ValueError) as caught:
        run._pod_group_model()
    with pytest.raises(ValueError) as full:
        PodGroup.model_validate(run.pod_group)
    assert str(caught.value) == str(full.value)


# --------------------------------------------------------------------------- the PodGroup the controller writes

def _job(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
            "metadata": {"name": "job", "namespace": "ns", "uid": "job-uid", "labels": {"team": "a"}},
            "spec": {"minAvailable": 2, "queue": "default", "tasks": [{"name": "worker", "replicas": 2, "template": {
                "spec": {"containers": [{"name": "main", "image": "x", "resources": {"requests": {"cpu": "1"}}}]}}}],
                **spec}}


def _started(job: dict[str, Any], **kwargs: Any) -> JobRun:
    record = WorkRecord("fed", "job", "work-uid", Placement(1), job)
    run = JobRun.start(record, T0, **kwargs)
    assert run.plan(record, [], T0, CONFIG, {"high": 100}) is not None  # creates the PodGroup
    return run


@pytest.mark.parametrize("spec", [{}, {"priorityClassName": "high"}, {"networkTopology": {"mode": "hard", "highestTierAllowed": 2}}])
def test_the_created_pod_group_is_kept_as_the_model_of_its_wire(spec: dict[str, Any]) -> None:
    run = _started(_job(**spec))
    assert run.pod_group is not None and run._group_model is not None
    kept = run._group_model[1]
    assert run._group_model[0] == run.pod_group and run._group_model[0] is not run.pod_group  # a copy
    assert kept == PodGroup.model_validate(run.pod_group)
    assert run._pod_group_model() is kept  # the next pass validates nothing


def test_a_seeded_phase_is_in_the_kept_model() -> None:
    run = _started(_job(), seeded_pod_group_phase="Running")
    assert run._group_model is not None and run._group_model[1].status is not None
    assert run._group_model[1].status.phase == "Running"
    assert run._group_model[1] == PodGroup.model_validate(run.pod_group)


def test_an_updated_pod_group_keeps_its_observed_status_in_the_kept_model() -> None:
    run = _started(_job())
    record = WorkRecord("fed", "job", "work-uid", Placement(1), _job())
    assert run.pod_group is not None
    run.pod_group["spec"]["minMember"] = 7  # someone else's edit: the controller puts its spec back
    run.set_pod_group_phase("Pending", [{"type": "Unschedulable", "status": "True", "message": "no room"}])
    run.plan(record, [], T0 + 1, CONFIG, {"high": 100})
    assert run.pod_group["spec"]["minMember"] == 2 and run.pod_group["status"]["conditions"]
    assert run._group_model is not None and run._group_model[1] == PodGroup.model_validate(run.pod_group)


def test_the_kept_model_does_not_answer_once_the_wire_changed() -> None:
    run = _started(_job())
    assert run.pod_group is not None and run._group_model is not None
    kept = run._group_model[1]
    run.pod_group["spec"]["minMember"] = 3
    model = run._pod_group_model()
    assert model is not kept and model == PodGroup.model_validate(run.pod_group) and model.spec.min_member == 3


def test_a_refused_status_keeps_no_model() -> None:
    model = PodGroup.model_validate(copy.deepcopy(WIRE))
    wire = {**model.to_wire(), "status": {"phase": "Pending", "running": "many"}}
    wire["metadata"]["creationTimestamp"] = "2023-11-14T22:13:20Z"
    assert written_model(model, wire) is None


def test_after_a_status_only_change_the_kept_copy_is_the_wire_and_private() -> None:
    run = _run(copy.deepcopy(WIRE))
    run._pod_group_model()
    run.set_pod_group_phase("Inqueue", [{"type": "Scheduled", "status": "True"}])
    second = run._pod_group_model()
    assert run._group_model is not None and run._group_model[0] == run.pod_group
    run.pod_group["status"]["conditions"][0]["status"] = "False"  # changed in place: the copy must not follow
    third = run._pod_group_model()
    assert third is not second and third == PodGroup.model_validate(run.pod_group)
    del run.pod_group["status"]
    assert run._pod_group_model() == PodGroup.model_validate(run.pod_group)
    assert run._group_model is not None and "status" not in run._group_model[0]


def test_status_models_without_conditions_are_kept_by_content_and_equal_a_validation() -> None:
    from member_agent.pod_group_models import _STATUSES, status_model

    _STATUSES.clear()
    pending = status_model({"phase": "Pending"})
    assert status_model({"phase": "Pending"}) is pending
    assert status_model({"phase": "Inqueue", "conditions": []}) is status_model({"phase": "Inqueue", "conditions": []})
    condition = {"type": "Scheduled", "status": "True", "transitionID": "x"}
    for status in ({"phase": "Pending"}, {"phase": "Inqueue", "conditions": []}, {"phase": "Running"},
                   {"phase": "Running", "conditions": [condition]}, {"phase": "Pending", "running": 1}):
        assert status_model(copy.deepcopy(status)) == PodGroup.model_validate({**WIRE, "status": status}).status
    assert len(_STATUSES) == 4  # the one with a condition is not kept
