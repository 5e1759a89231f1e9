"""The scheduling queue in the placement controller, against the in-process API server.

The backoffs are an hour long: a job placed within the tests' deadlines was moved by an event.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from federation.controllers.common import ControllerOptions
from tests.controllers_fed.conftest import DATA, FAST, Fed, load, until

FREE = {"conditions": [{"type": "Ready", "status": "True", "reason": "ClusterReady",
                        "lastTransitionTime": "2026-12-01T00:00:00Z"}],
        "resourceSummary": {"allocatable": {"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": "8", "pods": "110"},
                            "allocated": {"cpu": "0", "memory": "0", "nvidia.com/gpu": "0", "pods": "0"}},
        "nodeShapes": [{"count": 1, "free": {"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": "8", "pods": "110"}}]}


@pytest.fixture
def options() -> ControllerOptions:
    slow = copy.copy(FAST)
    slow.queue_initial_backoff_seconds = slow.queue_max_backoff_seconds = 3600.0
    slow.queue_max_unschedulable_seconds = 3600.0
    slow.retry_base_seconds = slow.retry_max_seconds = 3600.0
    return slow


def job(name: str, tier: str, gpus: int = 8) -> dict[str, Any]:
    template = {"spec": {"containers": [{"name": "c", "image": "x",
                                         "resources": {"requests": {"nvidia.com/gpu": str(gpus), "cpu": "1"},
                                                       "limits": {"nvidia.com/gpu": str(gpus)}}}]}}
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
            "metadata": {"name": name, "namespace": "default", "labels": {"tier": tier}},
            "spec": {"minAvailable": 1, "schedulerName": "volcano",
                     "tasks": [{"name": "worker", "replicas": 1, "template": template}]}}


async def scheduled(fed: Fed, name: str, status: str) -> dict[str, Any] | None:
    rb = await fed.rb(name)
    for cond in ((rb or {}).get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Scheduled" and cond.get("status") == status:
            return rb
    return None


async def seed(fed: Fed) -> None:
    for doc in load(DATA / "queue-priority.yaml"):
        await fed.apply(doc)


async def free_capacity(fed: Fed) -> None:
    await fed.patch("cluster.karmada.io/v1alpha1", "Cluster", "solo", {"status": FREE}, None, "status")


async def test_a_waiting_job_is_placed_when_a_cluster_reports_freed_capacity(fed: Fed) -> None:
    await seed(fed)
    await fed.apply(job("waiter", "ordinary"))
    rb = await until(lambda: scheduled(fed, "waiter", "False"), "the job unschedulable on the full cluster")
    assert rb["spec"].get("clusters") in (None, [])
    await free_capacity(fed)
    rb = await until(lambda: scheduled(fed, "waiter", "True"), "the job placed after the capacity report")
    assert [t["name"] for t in rb["spec"]["clusters"]] == ["solo"]


async def test_of_two_waiting_jobs_the_higher_binding_priority_is_placed_first(fed: Fed) -> None:
    await seed(fed)
    await fed.apply(job("ordinary-job", "ordinary"))
    await until(lambda: scheduled(fed, "ordinary-job", "False"), "the ordinary job waiting")
    await fed.apply(job("urgent-job", "urgent"))
    urgent = await until(lambda: scheduled(fed, "urgent-job", "False"), "the urgent job waiting")
    assert urgent["spec"]["schedulePriority"] == {"priority": 1000, "preemptionPolicy": "PreemptLowerPriority"}
    await free_capacity(fed)  # room for one of them
    await until(lambda: scheduled(fed, "urgent-job", "True"), "the urgent job placed")
    ordinary = await until(lambda: scheduled(fed, "ordinary-job", "False"), "the ordinary job still waiting")
    assert not ordinary["spec"].get("clusters")


async def test_a_missing_priority_class_falls_back_with_an_event_on_the_binding(fed: Fed) -> None:
    await seed(fed)
    await fed.apply(job("orphan", "missing"))
    rb = await until(lambda: scheduled(fed, "orphan", "False"), "the binding written")
    assert rb["spec"]["schedulePriority"] == {"priority": 0, "preemptionPolicy": "Never"}

    async def fallback_event() -> list[dict[str, Any]]:
        return [e for e in await fed.events("orphan-job") if e.get("reason") == "SchedulePriorityFallback"]

    events = await until(fallback_event, "a SchedulePriorityFallback event on the binding")
    assert "'no-such-class'" in events[0]["message"] and "priority 0" in events[0]["message"]
