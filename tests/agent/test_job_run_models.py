"""JobRun keeps the PodGroup model across passes: when the scheduler moved only the status, the
status is validated again and the rest of the model kept; the result equals a full validation."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from member_agent.job_runner import JobRun
from policies.models.volcano_scheduling import PodGroup

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
