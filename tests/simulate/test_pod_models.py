"""The Pod models the replay's member carries to each version of a pod it writes (created, bound,
ended: ``simulator/pod_models.py``) instead of the controller validating the wire again: each
equals ``Pod.model_validate`` of the version it is carried to, and the passes then validate no pod."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from member_agent.job_runner import JobRun
from policies.models.core import Pod
from simulator import pod_models
from simulator.cli import main

ROOT = Path(__file__).resolve().parents[2]
CLUSTER = ROOT / "examples" / "clusters" / "cluster-a.yaml"
TRACES = [ROOT / "tests" / "data" / "simulate" / "wait.jsonl", ROOT / "tests" / "data" / "traces" / "philly-small.csv"]


@pytest.mark.parametrize("trace", TRACES, ids=lambda p: p.name)
def test_every_carried_model_equals_a_validation_and_no_pass_validates_a_pod(
        tmp_path: Path, trace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    carried: list[tuple[dict[str, Any], Pod]] = []
    validated: list[str] = []
    carry, validate = JobRun.carry_pod_model, Pod.model_validate

    def checked_carry(run: JobRun, pod: dict[str, Any], model: Pod) -> None:
        carried.append((copy.deepcopy(pod), model))
        carry(run, pod, model)

    def counted_validate(obj: Any, *args: Any, **kwargs: Any) -> Pod:
        validated.append(str(((obj.get("metadata") or {}) if isinstance(obj, dict) else {}).get("name")))
        return validate(obj, *args, **kwargs)

    monkeypatch.setattr(JobRun, "carry_pod_model", checked_carry)
    original_pod_model = JobRun._pod_model

    def watched_pod_model(run: JobRun, pod: dict[str, Any]) -> Pod:
        monkeypatch.setattr(Pod, "model_validate", counted_validate)
        try:
            return original_pod_model(run, pod)
        finally:
            monkeypatch.setattr(Pod, "model_validate", validate)

    monkeypatch.setattr(JobRun, "_pod_model", watched_pod_model)
    assert main(["--trace", str(trace), "--clusters", str(CLUSTER), "--no-progress", "-o", str(tmp_path)]) == 0
    assert len(carried) >= 6  # created, bound and ended pods of several jobs
    for wire, model in carried:
        full = Pod.model_validate(wire)
        assert model == full and model.to_wire() == full.to_wire() == wire
    assert validated == []  # every version a pass read was carried


def _created() -> tuple[Pod, dict[str, Any]]:
    built = Pod.model_validate({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "j-w-0", "namespace": "sim", "labels": {"a": "1"}, "annotations": {"x": "y"}},
        "spec": {"containers": [{"name": "main", "image": "i", "resources": {"requests": {"nvidia.com/gpu": "1"}}}],
                 "schedulerName": "volcano"}})
    wire = built.to_wire()
    wire["metadata"].update(uid="u-1", creationTimestamp="2023-11-14T22:13:20Z", resourceVersion="1")
    wire["status"] = {"phase": "Pending"}
    return built, wire


def test_each_version_equals_a_validation_of_its_wire() -> None:
    built, wire = _created()
    created = pod_models.created(built, wire)
    assert created == Pod.model_validate(wire)
    bound = dict(wire, spec=dict(wire["spec"], nodeName="n1"),
                 metadata=dict(wire["metadata"], resourceVersion="2",
                               annotations={**wire["metadata"]["annotations"], "volcano.sh/gpu-index": "0"}),
                 status={"phase": "Running", "startTime": "2023-11-14T22:13:21Z",
                         "containerStatuses": [{"name": "main", "ready": True, "state": {"running": {}}}]})
    on_node = pod_models.bound(created, bound)
    assert on_node == Pod.model_validate(bound) and on_node != created
    ended = dict(bound, metadata=dict(bound["metadata"], resourceVersion="3"),
                 status={"phase": "Succeeded", "startTime": "2023-11-14T22:13:21Z"})
    done = pod_models.restatused(on_node, ended)
    assert done == Pod.model_validate(ended) and done.metadata.resource_version == "3"
    assert created.spec.node_name is None and created.metadata.resource_version == "1"  # the earlier ones unchanged


def test_status_models_are_kept_by_content_without_the_start_time() -> None:
    pod_models._STATUSES.clear()
    pending = pod_models.status_model({"phase": "Pending"})
    assert pod_models.status_model({"phase": "Pending"}) is pending
    running = {"phase": "Running", "startTime": "t1", "containerStatuses": [{"name": "main", "ready": True}]}
    for status in (running, {**running, "startTime": "t2"}, {**running, "containerStatuses": [{"name": "main"}]},
                   {"phase": "Succeeded", "startTime": "t1"}, {"phase": "Running", "startTime": 5}):
        try:
            full = Pod.model_validate({"status": status}).status
        except ValueError:
            with pytest.raises(ValueError):
                pod_models.status_model(status)
            continue
        assert pod_models.status_model(copy.deepcopy(status)) == full
    assert len(pod_models._STATUSES) == 4  # Pending; Running twice (t1, t2 share one); the other two
    assert pod_models.status_model(None) is None
