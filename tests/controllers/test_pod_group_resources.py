"""PodGroup minResources (volcano.md §9.5) as a table: priority order, the two branches."""

from __future__ import annotations

from typing import Any

import pytest

from member_agent.controllers.job_view import view_job
from member_agent.controllers.podgroup import min_resources
from tests.controllers.harness import make_job


def task(name: str, replicas: int, min_available: int, cpu: str, priority_class: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}
    if priority_class:
        spec["priorityClassName"] = priority_class
    return {"name": name, "replicas": replicas, "minAvailable": min_available, "template": {"spec": spec}}


HIGH_FIRST = [task("b", 3, 2, "10"), task("a", 2, 1, "1", "high")]

CASES = [
    # (tasks, job minAvailable, expected cpu)
    (HIGH_FIRST, 2, "2"),    # below Σ task minAvailable (3): first 2 pods by priority are both of `a`
    (HIGH_FIRST, 3, "21"),   # each task's minAvailable: a×1 + b×2
    (HIGH_FIRST, 4, "22"),   # then fill by priority: one more `a`
    (HIGH_FIRST, 5, "32"),   # `a` exhausted, one more `b`
    ([task("b", 3, 2, "10"), task("a", 2, 1, "1")], 2, "20"),  # equal priority: spec order
    ([task("b", 3, 2, "10"), task("a", 2, 1, "1")], 0, "0"),
]


@pytest.mark.parametrize(("tasks", "min_available", "cpu"), CASES)
def test_min_resources(tasks: list[dict[str, Any]], min_available: int, cpu: str) -> None:
    job = view_job(make_job({"tasks": tasks, "minAvailable": min_available}))
    resources = min_resources(job, {"high": 1000}).to_resource_list()
    assert resources.get("cpu", "0") == cpu
    assert "pods" not in resources


def test_seed_pytorch_job_min_resources_counts_gpu_limits() -> None:
    def seed_task(name: str, replicas: int) -> dict[str, Any]:
        return {"name": name, "replicas": replicas, "template": {"spec": {"containers": [
            {"name": name, "image": "pytorch/pytorch:2.0.0-cuda11.8", "resources": {"limits": {"nvidia.com/gpu": 4}}}]}}}

    job = view_job(make_job({"minAvailable": 4, "tasks": [seed_task("master", 1), seed_task("worker", 3)]}))
    assert min_resources(job, {}).to_resource_list() == {"nvidia.com/gpu": "16"}


def test_the_desired_pod_group_is_built_again_only_when_the_job_or_its_priority_classes_change() -> None:
    from member_agent.controllers.podgroup import reconcile_pod_group

    model = make_job({"tasks": HIGH_FIRST, "minAvailable": 2})
    action, first = reconcile_pod_group(view_job(model), None, {"high": 1000})
    assert action == "create"
    # A pass changes only the Job's status (model_copy keeps spec and metadata): same desired object.
    passed = model.model_copy(update={"status": None})
    assert reconcile_pod_group(view_job(passed), None, {"high": 1000})[1] is first
    # Other PriorityClass values: another minResources.
    _, other = reconcile_pod_group(view_job(passed), None, {"high": -1})
    assert other.spec.to_wire()["minResources"]["cpu"] == "20"  # `b` first now
    assert first.spec.to_wire()["minResources"]["cpu"] == "2"
    # A new revision of the Job (validated again): built again, and the observed one is updated.
    changed = make_job({"tasks": HIGH_FIRST, "minAvailable": 4})
    action, updated = reconcile_pod_group(view_job(changed), first, {"high": 1000})
    assert action == "update" and updated.spec.to_wire()["minResources"]["cpu"] == "22"
    assert reconcile_pod_group(view_job(changed), updated, {"high": 1000})[0] is None


# --------------------------------------------------------------------------- kept by what it reads

def test_the_kept_min_resources_equal_the_computed_ones_over_random_jobs() -> None:
    """``desired_spec``'s minResources come from a memo keyed by what ``min_resources`` reads: over
    random jobs (drawn so that many share a key and many differ in one part of it: a quantity's
    text or type, a limit instead of a request, an init container, a priority, replicas), each
    equals the computation."""
    import copy
    import random

    from member_agent.controllers.podgroup import _MIN_RESOURCES, desired_spec

    rng = random.Random(7)

    def container() -> dict[str, Any]:
        kind = rng.choice(["requests", "limits"])
        cpu = rng.choice(["1", "2", 1, 2, 1.5, "1500m"])
        return {"name": "c", "resources": {kind: {"cpu": cpu, "nvidia.com/gpu": rng.choice([0, 1, "1", 8])}}}

    def template() -> dict[str, Any]:
        spec: dict[str, Any] = {"containers": [container() for _ in range(rng.choice([1, 1, 2]))]}
        if rng.random() < 0.2:
            init = container()  # a sidecar (restartPolicy Always) or an ordinary init container
            spec["initContainers"] = [{**init, "restartPolicy": "Always"} if rng.random() < 0.5 else init]
        if rng.random() < 0.2:
            spec["overhead"] = {"cpu": rng.choice(["100m", "1"])}
        if rng.random() < 0.3:
            spec["priorityClassName"] = rng.choice(["high", "low"])
        return {"spec": spec}

    _MIN_RESOURCES.clear()
    templates = [template() for _ in range(6)]  # few: many jobs differ only in counts or priorities
    drawn = []
    for _ in range(200):
        tasks = [{"name": f"t{i}", "replicas": rng.choice([1, 2, 3]), "minAvailable": rng.choice([0, 1, 2]),
                  "template": rng.choice(templates)} for i in range(rng.choice([1, 1, 2]))]
        drawn.append(({"tasks": tasks, "minAvailable": rng.choice([1, 2, 3])}, rng.choice([{}, {"high": 1000, "low": -5}])))
    for _ in range(2):  # the second round: other Job objects of the same specs, read from the memo
        for spec, classes in drawn:
            job = view_job(make_job(copy.deepcopy(spec)))
            assert desired_spec(job, classes)["minResources"] == min_resources(job, classes).to_resource_list()
    assert len(_MIN_RESOURCES) <= len(drawn)


def test_a_caller_changing_its_min_resources_does_not_change_the_kept_ones() -> None:
    from member_agent.controllers.podgroup import desired_spec

    job = view_job(make_job({"tasks": [task("w", 2, 2, "3")], "minAvailable": 2}))
    desired_spec(job, {})["minResources"]["cpu"] = "999"
    assert desired_spec(job, {})["minResources"] == {"cpu": "6"}
