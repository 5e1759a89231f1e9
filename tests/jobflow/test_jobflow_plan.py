"""The JobFlow controller's pure decisions: DAG order, which Jobs to create, the flow's phase."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from federation.controllers.jobflow import entries, plan
from policies.k8s.patches import merge_patch

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
#: upstream spelling: the flow's name is the JobTemplate's; "b" is listed before its target "a"
DIAMOND = {"apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobFlow",
           "metadata": {"name": "f", "namespace": "ns", "uid": "u1"},
           "spec": {"flows": [{"name": "b", "dependsOn": {"targets": ["a"]}},
                              {"name": "a"},
                              {"name": "c", "dependsOn": {"targets": ["a"]}},
                              {"name": "d", "dependsOn": {"targets": ["b", "c"]}}]}}
TEMPLATES = {n: {"metadata": {"name": n, "namespace": "ns"}, "spec": {"queue": "default", "tasks": [{"name": n}]}}
             for n in "abcd"}


def _jobs(phases: dict[str, str]) -> dict[str, Any]:
    return {f"f-{flow}": {"metadata": {"name": f"f-{flow}", "creationTimestamp": "2026-12-02T11:00:00Z"},
                          "status": {"state": {"phase": phase}} if phase else {}} for flow, phase in phases.items()}


def test_entries_follow_the_dag_then_spec_order() -> None:
    assert [e.flow for e in entries(DIAMOND)] == ["a", "b", "c", "d"]
    assert [(e.job, e.template) for e in entries(DIAMOND)][0] == ("f-a", "a")


#: existing Job phases -> (Jobs to create, flow phase)
CASES = [
    ({}, ["f-a"], "Pending"),
    ({"a": ""}, [], "Pending"),
    ({"a": "Running"}, [], "Running"),
    ({"a": "Completed"}, ["f-b", "f-c"], "Running"),
    ({"a": "Completed", "b": "Completed", "c": "Running"}, [], "Running"),
    ({"a": "Completed", "b": "Completed", "c": "Completed"}, ["f-d"], "Running"),
    ({"a": "Completed", "b": "Completed", "c": "Completed", "d": "Completed"}, [], "Succeed"),
    ({"a": "Completed", "b": "Failed"}, [], "Failed"),
    ({"a": "Completed", "b": "Completed", "c": "Terminated"}, [], "Failed"),
    ({"a": "Restarting"}, [], "Running"),
]


@pytest.mark.parametrize("phases,create,phase", CASES, ids=[str(c[0]) for c in CASES])
def test_plan(phases: dict[str, str], create: list[str], phase: str) -> None:
    decision = plan(DIAMOND, _jobs(phases), TEMPLATES, NOW)
    assert [job["metadata"]["name"] for _, job in decision.create] == create
    assert decision.status is not None and decision.status["state"]["phase"] == phase
    created = {f"f-{f}" for f in phases}
    assert set(decision.status.get("pendingJobs") or []) >= {f"f-{f}" for f in "abcd"} - created


def test_failed_is_final_and_succeed_keeps_its_record() -> None:
    failed = dict(DIAMOND, status={"state": {"phase": "Failed"}})
    decision = plan(failed, _jobs({"a": "Completed"}), TEMPLATES, NOW)
    assert decision.create == [] and decision.status is not None and decision.status["state"]["phase"] == "Failed"
    done = dict(DIAMOND, spec=dict(DIAMOND["spec"], jobRetainPolicy="delete"),
                status={"state": {"phase": "Succeed"}, "completedJobs": ["f-a"]})
    decision = plan(done, _jobs({"a": "Completed", "b": "Completed"}), TEMPLATES, NOW)
    assert decision.delete == ["f-a", "f-b"] and decision.status is None, "status untouched, Jobs deleted"


def test_missing_template_is_a_problem_not_a_job() -> None:
    decision = plan(DIAMOND, {}, {}, NOW)
    assert decision.create == []
    assert decision.problems == [("JobTemplateNotFound", "flow 'a': JobTemplate 'a' not found in namespace 'ns'; "
                                                         "Job 'f-a' waits for it")]


def test_status_entries_and_merge_patch() -> None:
    jobs = _jobs({"a": "Completed"})
    jobs["f-a"]["status"].update(retryCount=2, taskStatusCount={"a": {"phase": {"Succeeded": 1}}})
    status = plan(DIAMOND, jobs, TEMPLATES, NOW).status or {}
    assert status["jobStatusList"] == [{"name": "f-a", "state": "Completed", "startTimestamp": "2026-12-02T11:00:00Z",
                                        "restartCount": 2, "endTimestamp": "2026-12-02T12:00:00Z"}]
    assert status["conditions"]["f-a"]["taskStatusCount"] == {"a": {"phase": {"Succeeded": 1}}}
    assert merge_patch({"a": 1, "b": {"c": 2, "d": 3}}, {"b": {"c": None, "e": 4}, "f": [1]}) == \
        {"a": 1, "b": {"d": 3, "e": 4}, "f": [1]}


def test_registered_with_caldera_serve() -> None:
    import federation.controllers
    from federation.controllers.jobflow import jobflow_controller

    assert jobflow_controller in federation.controllers.CONTROLLERS
