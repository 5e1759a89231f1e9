"""The seed's ml-pipeline JobFlow runs its Jobs in dependency order, placed across both clusters."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from e2e.harness import Recorder, api, apply, capacity_reported, phase, seed_one, until
from federation.demo.manifests import DATA as DEMO_DATA
from federation.demo.manifests import with_sim_duration
from federation.demo.processes import System
from policies.kinds import resolve

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(240)]
#: flow -> the flows it depends on (the seed's ml-pipeline)
DEPENDS = {"data-preprocess": [], "model-training": ["data-preprocess"],
           "model-evaluation": ["model-training"], "model-export": ["model-training"]}


def order(events: list[tuple[str, dict[str, Any]]]) -> tuple[dict[str, int], dict[str, int]]:
    """Index of each Job's creation and of its first Completed status in the watch stream."""
    created: dict[str, int] = {}
    completed: dict[str, int] = {}
    for i, (_type, obj) in enumerate(events):
        name = obj["metadata"]["name"]
        created.setdefault(name, i)
        if phase(obj) == "Completed":
            completed.setdefault(name, i)
    return created, completed


async def test_ml_pipeline_runs_in_dependency_order(seed_system: System) -> None:
    templates = [with_sim_duration(t, 30) for t in yaml.safe_load_all((DEMO_DATA / "ml-pipeline-templates.yaml").read_text())]
    async with api(seed_system) as rc, Recorder(rc, "jobs", "default") as jobs:
        await capacity_reported(rc, seed_system)  # placement counts on every cluster's capacity
        await apply(rc, seed_one("propagationpolicy-volcano-job-policy.yaml"), *templates,
                    seed_one("jobflow-ml-pipeline.yaml"))

        async def succeeded() -> Any:
            flow = await rc.get(resolve("jobflows"), "ml-pipeline", "default")
            return flow if phase(flow) == "Succeed" else None

        flow = await until(succeeded, 180, "ml-pipeline Succeed")
    created, completed = order(jobs.events)
    job = {f: f"ml-pipeline-{f}" for f in DEPENDS}
    for flow_name, targets in DEPENDS.items():
        assert job[flow_name] in completed, f"{job[flow_name]} completed"
        for target in targets:
            assert completed[job[target]] < created[job[flow_name]], f"{flow_name} started before {target} completed"
    assert sorted(flow["status"].get("completedJobs") or []) == sorted(job.values())
    # the 2 x 8-GPU training step is divided 1:2 by the policy: one worker on each cluster
    training = next(obj for _, obj in reversed(jobs.events) if obj["metadata"]["name"] == job["model-training"])
    assert sorted(c["name"] for c in training["status"]["clusters"]) == ["cluster-a", "cluster-b"]
