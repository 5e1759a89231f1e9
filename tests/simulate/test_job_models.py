"""The replay's Job models by shape (``simulator/job_models.py``): each equals ``JobRun.start``'s
validation of its manifest, and the jobs of one shape share one spec model."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from member_agent.job_runner import JobRun
from member_agent.works import Placement, WorkRecord
from policies.models.volcano_batch import Job
from simulator import job_models
from simulator.cli import main

ROOT = Path(__file__).resolve().parents[2]
#: the first jobs of the Philly trace on the bench's layout (a few shapes, many jobs each)
REPLAY = ["--trace", str(ROOT / "examples" / "traces" / "philly.csv"), "--clusters",
          str(ROOT / "bench" / "data" / "philly-1000-nodes.yaml"), "--scheduler-conf",
          str(ROOT / "examples" / "scheduler-conf" / "volcano-default.conf"), "--limit", "150", "--no-progress"]
NOW = 1_700_000_000.0


def _record(manifest: dict[str, Any]) -> WorkRecord:
    return WorkRecord("sim", str(manifest.get("metadata", {}).get("name", "j")), "u", Placement(1), manifest)


def _validated(manifest: dict[str, Any], now: float = NOW) -> Job:
    return JobRun.start(_record(copy.deepcopy(manifest)), now).job


def _manifest(name: str, queue: str = "q1", gpus: Any = "1", replicas: int = 1, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
            "metadata": {"name": name, "namespace": "sim", "uid": f"uid-{name}"},
            "spec": {"schedulerName": "volcano", "queue": queue, "minAvailable": replicas, **spec,
                     "tasks": [{"name": "worker", "replicas": replicas, "template": {"spec": {"containers": [
                         {"name": "main", "image": "trace", "resources": {"requests": {"nvidia.com/gpu": gpus}}}]}}}]}}


names = st.text("abcdefgh-", min_size=1, max_size=6)
variants = st.fixed_dictionaries({
    "queue": st.sampled_from(["q1", "q2"]), "gpus": st.sampled_from(["1", "2", 1, 2.0]),
    "replicas": st.integers(1, 3)}, optional={"priorityClassName": st.sampled_from(["p1", "p2"]),
                                              "maxRetry": st.integers(0, 4)})
metadata = st.fixed_dictionaries({}, optional={
    "labels": st.dictionaries(st.sampled_from(["a", "b"]), st.sampled_from(["x", "y"]), max_size=2),
    "annotations": st.dictionaries(st.sampled_from(["c", "d"]), st.sampled_from(["1", "2"]), max_size=2),
    "creationTimestamp": st.sampled_from(["2023-11-14T22:13:20Z"])})


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(names, variants, metadata), min_size=1, max_size=8))
def test_every_model_equals_a_validation_of_its_manifest(jobs: list[tuple[str, dict[str, Any], dict[str, Any]]]) -> None:
    job_models._SHAPES.clear()
    for i, (name, variant, extra) in enumerate(jobs):
        manifest = _manifest(name, **variant)
        manifest["metadata"].update(extra)
        made = job_models.job_model(copy.deepcopy(manifest), NOW + i)
        full = _validated(manifest, NOW + i)
        assert made == full and made.to_wire() == full.to_wire()
        assert made.model_fields_set == full.model_fields_set


def test_jobs_of_one_shape_share_the_spec_and_others_do_not() -> None:
    job_models._SHAPES.clear()
    a = job_models.job_model(_manifest("a"), NOW)
    b = job_models.job_model(_manifest("b"), NOW + 1)
    c = job_models.job_model(_manifest("c", queue="q2"), NOW + 2)
    d = job_models.job_model(_manifest("d", gpus=1), NOW + 3)  # an int, not the string: another shape
    assert b.spec is a.spec and b.metadata.name == "b" and b.metadata.creation_timestamp != a.metadata.creation_timestamp
    assert c.spec is not a.spec and c.spec.queue == "q2"
    assert d.spec is not a.spec and d == _validated(_manifest("d", gpus=1), NOW + 3)
    assert a.metadata.name == "a"  # the kept one unchanged


def test_a_manifest_with_a_status_or_a_refused_one_goes_through_start() -> None:
    seeded = dict(_manifest("s"), status={"state": {"phase": "Running"}})
    assert job_models.start(_record(seeded), NOW).job == JobRun.start(_record(seeded), NOW).job
    bad = _manifest("x")
    bad["spec"]["unknownField"] = 1
    with pytest.raises(ValueError):
        JobRun.start(_record(bad), NOW)
    with pytest.raises(ValueError):
        job_models.start(_record(bad), NOW)


def test_every_share_of_a_replay_starts_with_the_validated_job(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[tuple[dict[str, Any], float, Job]] = []
    original = job_models.job_model

    def checked(manifest: dict[str, Any], first_seen: float) -> Job:
        job = original(manifest, first_seen)
        made.append((copy.deepcopy(manifest), first_seen, job))
        return job

    monkeypatch.setattr(job_models, "job_model", checked)
    assert main([*REPLAY, "-o", str(tmp_path)]) == 0
    assert len(made) == 150 and len({id(job.spec) for _, _, job in made}) < len(made)  # some shapes shared
    for manifest, first_seen, job in made:
        assert job == _validated(manifest, first_seen)
