"""JobRun reuses the models of the pods and the PodGroup it created when it observes them again
(member_agent/controllers/built.py): the reused model must equal a fresh validation of the
observed wire, set fields included, whatever the server, scheduler or kubelet changed; anything
the shortcut cannot carry is validated whole."""

from __future__ import annotations

import copy
from typing import Any, Callable

import pytest
from pydantic import BaseModel

from member_agent.controllers import ControllerConfig
from member_agent.job_runner import JobRun
from member_agent.works import Placement, WorkRecord
from policies.models.core import Pod
from policies.models.volcano_scheduling import PodGroup

Obj = dict[str, Any]
NOW = 1_700_000_000.0
MANIFEST: Obj = {
    "apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
    "metadata": {"name": "train", "namespace": "ns", "uid": "job-uid", "labels": {"team": "a"}},
    "spec": {"minAvailable": 2, "queue": "default", "tasks": [{
        "name": "worker", "replicas": 2,
        "template": {"metadata": {"labels": {"app": "x"}}, "spec": {
            "nodeSelector": {"gpu": "a100"},
            "containers": [{"name": "main", "image": "trace", "env": [{"name": "A", "value": "1"}],
                            "resources": {"requests": {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": "1"}}}]}},
    }]},
}


def fields_set(model: Any) -> Any:
    """Every nested model's set fields, to compare two models beyond ``==``."""
    if isinstance(model, BaseModel):
        return (sorted(model.model_fields_set), {k: fields_set(v) for k, v in model.__dict__.items()})
    if isinstance(model, (list, tuple)):
        return [fields_set(v) for v in model]
    if isinstance(model, dict):
        return {k: fields_set(v) for k, v in model.items()}
    return None


def assert_fresh(model: BaseModel, wire: Obj, cls: type[BaseModel]) -> None:
    fresh = cls.model_validate(wire)
    assert model == fresh
    assert fields_set(model) == fields_set(fresh)
    assert model.to_wire() == fresh.to_wire()  # type: ignore[attr-defined]


def started() -> tuple[JobRun, Obj, list[Obj]]:
    """A run past its first passes: the PodGroup made, Inqueue, and the pods made."""
    record = WorkRecord("fed", "train", "work-uid", Placement(1), copy.deepcopy(MANIFEST))
    run = JobRun.start(record, NOW)
    run.plan(record, [], NOW, ControllerConfig(), {})
    run.plan(record, [], NOW, ControllerConfig(), {})
    assert run.set_pod_group_phase("Inqueue")
    plan = run.plan(record, [], NOW + 1, ControllerConfig(), {})
    assert plan is not None and len(plan.create_pods) == 2
    return run, plan.create_pods[0], plan.create_pods


def stamped(wire: Obj) -> Obj:
    pod = copy.deepcopy(wire)
    pod["metadata"].update(uid="pod-uid", creationTimestamp="2023-11-14T22:13:20Z", resourceVersion="7")
    pod["status"] = {"phase": "Pending"}
    return pod


def bound(pod: Obj) -> None:
    pod["spec"]["nodeName"] = "node-1"
    pod["metadata"]["annotations"]["volcano.sh/gpu-index"] = "0"
    pod["status"] = {"phase": "Running", "startTime": "2023-11-14T22:13:21Z",
                     "containerStatuses": [{"name": "main", "ready": True, "state": {"running": {}}}]}


def succeeded(pod: Obj) -> None:
    bound(pod)
    pod["status"] = {"phase": "Succeeded", "containerStatuses": [
        {"name": "main", "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}]}


def terminating(pod: Obj) -> None:
    pod["metadata"]["deletionTimestamp"] = "2023-11-14T22:14:00Z"


def no_status(pod: Obj) -> None:
    del pod["status"]


REUSED: list[Callable[[Obj], None]] = [lambda pod: None, bound, succeeded, terminating, no_status]


@pytest.mark.parametrize("change", REUSED, ids=["stamped", "bound", "succeeded", "terminating", "no-status"])
def test_an_observed_pod_reuses_the_built_model_and_equals_a_fresh_validation(change: Callable[[Obj], None]) -> None:
    run, wire, _ = started()
    built = run._built_pods[wire["metadata"]["name"]]
    pod = stamped(wire)
    change(pod)
    model = run._pod_model(pod)
    assert_fresh(model, pod, Pod)
    # reused, not validated again: the containers are the built model's own
    assert model.spec.containers is built.model.spec.containers


def _label(pod: Obj) -> None:
    pod["metadata"]["labels"]["team"] = "b"


def _image(pod: Obj) -> None:
    pod["spec"]["containers"][0]["image"] = "other"


def _env(pod: Obj) -> None:
    pod["spec"]["containers"][0]["env"].append({"name": "B", "value": "2"})


def _node_number(pod: Obj) -> None:
    pod["spec"]["priority"] = 7


def _int_uid(pod: Obj) -> None:
    pod["metadata"]["generation"] = 3


def _top(pod: Obj) -> None:
    pod["apiVersion"] = "v1"  # the same value: still reused
    pod["metadata"]["annotations"] = {"only": "this"}


VALIDATED: list[Callable[[Obj], None]] = [_label, _image, _env, _node_number, _int_uid]


@pytest.mark.parametrize("change", VALIDATED, ids=["label", "image", "env", "priority", "generation"])
def test_any_other_change_is_validated_whole(change: Callable[[Obj], None]) -> None:
    run, wire, _ = started()
    built = run._built_pods[wire["metadata"]["name"]]
    pod = stamped(wire)
    change(pod)
    model = run._pod_model(pod)
    assert_fresh(model, pod, Pod)
    assert model.spec.containers is not built.model.spec.containers


def test_replaced_annotations_are_carried() -> None:
    run, wire, _ = started()
    pod = stamped(wire)
    _top(pod)
    assert_fresh(run._pod_model(pod), pod, Pod)


def test_a_bad_status_fails_as_a_full_validation_fails() -> None:
    run, wire, _ = started()
    pod = stamped(wire)
    pod["status"] = {"phase": "Sleeping"}
    with pytest.raises(ValueError) as caught:
        run._pod_model(pod)
    with pytest.raises(ValueError) as full:
        Pod.model_validate(pod)
    assert str(caught.value) == str(full.value)


def test_the_created_pod_group_is_reused_through_phases_and_annotations() -> None:
    run, _, _ = started()
    assert run._group_built is not None and run.pod_group is not None
    for phase, conditions in [("Inqueue", None), ("Running", [{"type": "Scheduled", "status": "True"}]),
                              ("Pending", [{"type": "Unschedulable", "status": "True", "message": "full"}])]:
        run.set_pod_group_phase(phase, conditions)
        run.set_pod_group_annotations({"volcano.sh/job-allocated-hypernode": phase})
        model = run._pod_group_model()
        assert model is not None
        assert_fresh(model, run.pod_group, PodGroup)
        assert model.spec is run._group_built.model.spec


def test_an_edited_pod_group_spec_is_validated_whole() -> None:
    run, _, _ = started()
    assert run.pod_group is not None and run._group_built is not None
    run.pod_group["spec"]["minMember"] = 1
    model = run._pod_group_model()
    assert model is not None and model.spec.min_member == 1
    assert_fresh(model, run.pod_group, PodGroup)
