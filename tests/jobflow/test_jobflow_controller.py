"""The JobFlow controller against an in-process API server: the seed's ml-pipeline DAG runs in
order, failures stop the flow, missing templates are reported, retain policies are honoured.

Job phases are faked by writing the Jobs' status (what the status aggregation controller does
from the member clusters' reports)."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes_asyncio.client.exceptions import ApiException

from federation.controllers.jobflow import FLOWS, TEMPLATES
from tests.apiserver.helpers import request
from tests.jobflow.conftest import SEED_FLOW, TEMPLATE_DOCS, Flows, eventually

P = "ml-pipeline-"
PRE, TRAIN, EVAL, EXPORT = (P + f for f in ("data-preprocess", "model-training", "model-evaluation", "model-export"))

#: (job phases to write, Jobs that must then exist, flow phase, completedJobs)
DAG_STEPS: list[tuple[dict[str, str], set[str], str, set[str]]] = [
    ({}, {PRE}, "Pending", set()),
    ({PRE: "Running"}, {PRE}, "Running", set()),
    ({PRE: "Completed"}, {PRE, TRAIN}, "Running", {PRE}),
    ({TRAIN: "Running"}, {PRE, TRAIN}, "Running", {PRE}),
    ({TRAIN: "Completed"}, {PRE, TRAIN, EVAL, EXPORT}, "Running", {PRE, TRAIN}),
    ({EVAL: "Completed"}, {PRE, TRAIN, EVAL, EXPORT}, "Running", {PRE, TRAIN, EVAL}),
    ({EXPORT: "Completed"}, {PRE, TRAIN, EVAL, EXPORT}, "Succeed", {PRE, TRAIN, EVAL, EXPORT}),
]


async def _reach(flows: Flows, jobs: set[str], phase: str, completed: set[str], flow: str = "ml-pipeline") -> None:
    def seen() -> tuple[set[str], str, set[str]]:
        status = flows.status(flow)
        return (set(flows.jobs(flow)), (status.get("state") or {}).get("phase"), set(status.get("completedJobs") or []))

    async def probe() -> bool:
        return seen() == (jobs, phase, completed)
    await eventually(probe, f"jobs {sorted(jobs)}, phase {phase}, completed {sorted(completed)}", describe=seen)


async def test_seed_ml_pipeline_runs_in_dag_order(flows: Flows) -> None:
    await flows.templates()
    flow = await flows.flow()
    for phases, jobs, phase, completed in DAG_STEPS:
        for job, job_phase in phases.items():
            await flows.set_phase(job, job_phase)
        await _reach(flows, jobs, phase, completed)
        status = flows.status()
        not_created = {P + f["name"] for f in SEED_FLOW["spec"]["flows"]} - jobs
        assert not_created <= set(status.get("pendingJobs") or []), status
    created = flows.jobs()
    templates = {t["metadata"]["name"]: t for t in flows.server.store.list("flow.volcano.sh/jobtemplates", "default")}
    for entry in SEED_FLOW["spec"]["flows"]:
        job, template = created[P + entry["name"]], templates[entry["jobTemplate"]["name"]]
        assert job["spec"] == template["spec"], "the Job is the template's spec"
        labels = job["metadata"]["labels"]
        assert labels["volcano.sh/createdByJobTemplate"] == f"default.{entry['jobTemplate']['name']}"
        assert labels["team"] == "ml", "the template's labels are kept (policies may select on them)"
        owner = job["metadata"]["ownerReferences"][0]
        assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == \
            ("JobFlow", "ml-pipeline", flow["metadata"]["uid"], True)
    final = flows.status()
    assert [e["name"] for e in final["jobStatusList"]] == [PRE, TRAIN, EVAL, EXPORT]
    assert all(e["state"] == "Completed" and e["endTimestamp"] for e in final["jobStatusList"])
    assert final["conditions"][TRAIN]["phase"] == "Completed"
    # JobTemplate status: the Jobs made from each template (Volcano's jobDependsOnList)
    await eventually(lambda: _template_status(flows, "training-job"), "jobDependsOnList on training-job")
    # kubectl get jobflows
    code, table = await request(flows.server, "GET", "/apis/flow.volcano.sh/v1alpha1/namespaces/default/jobflows",
                                headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"})
    assert code == 200 and [c["name"] for c in table["columnDefinitions"]][:3] == ["Name", "STATUS", "COMPLETED"]
    assert table["rows"][0]["cells"][:3] == ["ml-pipeline", "Succeed", "4/4"]


async def _template_status(flows: Flows, name: str) -> Any:
    obj = flows.server.store.get("flow.volcano.sh/jobtemplates", "default", name) or {}
    return (obj.get("status") or {}).get("jobDependsOnList") == [TRAIN]


#: a dependency fails: (phases written in order, failed/terminated list, jobs that exist at the end)
FAILURES = [
    pytest.param([(PRE, "Failed")], "failedJobs", {PRE}, id="first-fails"),
    pytest.param([(PRE, "Completed"), (TRAIN, "Terminated")], "terminatedJobs", {PRE, TRAIN}, id="middle-terminated"),
    pytest.param([(PRE, "Completed"), (TRAIN, "Aborted")], "terminatedJobs", {PRE, TRAIN}, id="middle-aborted"),
]


@pytest.mark.parametrize("writes,bucket,jobs", FAILURES)
async def test_failed_dependency_fails_the_flow_and_starts_nothing_more(
        flows: Flows, writes: list[tuple[str, str]], bucket: str, jobs: set[str]) -> None:
    await flows.templates()
    await flows.flow()
    for job, phase in writes:
        await eventually(lambda job=job: _exists(flows, job), f"Job {job}")
        await flows.set_phase(job, phase)

    async def failed() -> Any:
        status = flows.status()
        return (status.get("state") or {}).get("phase") == "Failed" and status
    status = await eventually(failed, "flow Failed")
    assert status[bucket] == [writes[-1][0]]
    assert set(flows.jobs()) == jobs, "no Job starts after a dependency failed"
    assert await eventually(lambda: _events(flows, "JobFlowFailed"), "a JobFlowFailed event")
    # Failed is final: the failed Job completing later neither revives the flow nor starts dependents
    await flows.set_phase(writes[-1][0], "Completed")
    await eventually(lambda: _status_sees(flows, writes[-1][0]), "the late completion in the status")
    assert flows.status()["state"]["phase"] == "Failed" and set(flows.jobs()) == jobs


async def _exists(flows: Flows, job: str) -> bool:
    return job in flows.jobs()


async def _events(flows: Flows, reason: str) -> Any:
    return flows.events(reason)


async def _status_sees(flows: Flows, job: str) -> bool:
    return job in (flows.status().get("completedJobs") or [])


async def test_missing_template_is_reported_and_the_entry_waits_for_it(flows: Flows) -> None:
    await flows.templates(["preprocess-job", "eval-job", "export-job"])
    await flows.flow()
    await eventually(lambda: _exists(flows, PRE), "the first Job")
    await flows.set_phase(PRE, "Completed")
    events = await eventually(lambda: _events(flows, "JobTemplateNotFound"), "a JobTemplateNotFound event")
    assert events[0]["type"] == "Warning"
    assert events[0]["involvedObject"]["name"] == "ml-pipeline"
    assert "JobTemplate 'training-job' not found" in events[0]["message"]
    assert "model-training" in events[0]["message"]
    assert set(flows.jobs()) == {PRE} and TRAIN in flows.status()["pendingJobs"]
    await flows.templates(["training-job"])
    await eventually(lambda: _exists(flows, TRAIN), "the Job once its template exists")


async def test_rejected_job_is_reported(flows: Flows) -> None:
    broken = dict(TEMPLATE_DOCS[0], spec=dict(TEMPLATE_DOCS[0]["spec"], queue="no-such-queue"))
    await flows.rc.create(TEMPLATES, broken, "default")
    await flows.flow()
    events = await eventually(lambda: _events(flows, "JobCreateFailed"), "a JobCreateFailed event")
    assert "no-such-queue" in events[0]["message"] and PRE in events[0]["message"]
    assert flows.jobs() == {}


BAD_FLOWS = [
    pytest.param([{"name": "a", "dependsOn": {"targets": ["b"]}}, {"name": "b", "dependsOn": {"targets": ["a"]}}],
                 "spec.flows", "jobflow Flow is not DAG", id="cycle"),
    pytest.param([{"name": "a", "dependsOn": {"targets": ["nope"]}}], "spec.flows[0].dependsOn.targets[0]",
                 "vertex is not defined", id="unknown-target"),
    pytest.param([{"name": "a"}, {"name": "a"}], "spec.flows[1].name", "duplicated flow name", id="duplicate"),
    pytest.param([], "spec.flows", "at least one flow", id="empty"),
]


@pytest.mark.parametrize("spec_flows,field,says", BAD_FLOWS)
async def test_bad_jobflow_is_rejected_with_the_rule(flows: Flows, spec_flows: list[Any], field: str,
                                                   says: str) -> None:
    with pytest.raises(ApiException) as err:
        await flows.flow({"apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobFlow",
                          "metadata": {"name": "bad"}, "spec": {"flows": spec_flows}})
    assert err.value.status == 422
    assert field in str(err.value.body) and says in str(err.value.body)
    assert flows.server.store.get("flow.volcano.sh/jobflows", "default", "bad") is None


@pytest.mark.parametrize("policy,kept", [("retain", True), ("delete", False), (None, True)])
async def test_job_retain_policy(flows: Flows, policy: str | None, kept: bool) -> None:
    await flows.templates(["preprocess-job"])
    spec: dict[str, Any] = {"flows": [{"name": "only", "jobTemplate": {"name": "preprocess-job"}}]}
    if policy:
        spec["jobRetainPolicy"] = policy
    await flows.flow({"apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobFlow", "metadata": {"name": "one"},
                      "spec": spec})
    await eventually(lambda: _exists_in(flows, "one", "one-only"), "the Job")
    await flows.set_phase("one-only", "Completed")
    await eventually(lambda: _phase(flows, "one", "Succeed"), "flow Succeed")
    if kept:
        assert set(flows.jobs("one")) == {"one-only"}
    else:
        await eventually(lambda: _gone(flows, "one"), "the flow's Jobs deleted")
    status = flows.status("one")
    assert status["state"]["phase"] == "Succeed" and status["completedJobs"] == ["one-only"], \
        "the status keeps the record after the Jobs are deleted"


async def _exists_in(flows: Flows, flow: str, job: str) -> bool:
    return job in flows.jobs(flow)


async def _phase(flows: Flows, flow: str, phase: str) -> bool:
    return (flows.status(flow).get("state") or {}).get("phase") == phase


async def _gone(flows: Flows, flow: str) -> bool:
    return not flows.jobs(flow)


async def test_patch_is_merged_and_deleting_the_flow_deletes_its_jobs(flows: Flows) -> None:
    await flows.templates(["preprocess-job"])
    spec = {"flows": [{"name": "tuned", "jobTemplate": {"name": "preprocess-job"},
                       "patch": {"spec": {"maxRetry": 7}}}]}
    await flows.flow({"apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobFlow", "metadata": {"name": "p"},
                      "spec": spec})
    await eventually(lambda: _exists_in(flows, "p", "p-tuned"), "the Job")
    job = flows.jobs("p")["p-tuned"]
    assert job["spec"]["maxRetry"] == 7 and job["spec"]["tasks"][0]["name"] == "main"
    await flows.rc.delete(FLOWS, "p", "default")
    await eventually(lambda: _gone(flows, "p"), "Jobs garbage-collected with their JobFlow")


async def test_job_name_taken_by_a_foreign_job_is_reported(flows: Flows) -> None:
    from federation.controllers.jobflow import JOBS

    await flows.templates(["preprocess-job"])
    template = flows.server.store.get("flow.volcano.sh/jobtemplates", "default", "preprocess-job") or {}
    await flows.rc.create(JOBS, {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
                                 "metadata": {"name": "one-only"}, "spec": template["spec"]}, "default")
    await flows.flow({"apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobFlow", "metadata": {"name": "one"},
                      "spec": {"flows": [{"name": "only", "jobTemplate": {"name": "preprocess-job"}}]}})
    events = await eventually(lambda: _events(flows, "JobNameTaken"), "a JobNameTaken event")
    assert "'one-only' not created by this JobFlow" in events[0]["message"]

    async def pending() -> list[str] | None:  # the Event is written before the status: wait for both
        return flows.status("one").get("pendingJobs")

    assert await eventually(pending, "the JobFlow's status lists the pending Job") == ["one-only"]
    assert flows.jobs("one") == {}
