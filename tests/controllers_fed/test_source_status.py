"""The source status controller: a converted Job's status shows on the PyTorchJob/TFJob/MPIJob
(Kubeflow's JobStatus) or VCJob (Volcano's JobStatus, as is) the user wrote."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client as k8s

from federation.apiserver.server import ApiServer, ServerConfig
from federation.cli.compose import FederationServer
from federation.client import ResourceClient, api_client_from_dict
from federation.controllers.source_status import (
    SourceStatusController,
    kubeflow_status,
    source_status_controller,
)
from policies.k8s.patches import merge_diff
from policies.kinds import lookup
from policies.models.kubeflow import MPIJob, PyTorchJob, TFJob
from tests.controllers_fed.conftest import until

NOW = datetime(2026, 12, 2, 12, 0, 0, tzinfo=UTC)
T0, T1 = "2026-12-02T10:00:00Z", "2026-12-02T10:05:00Z"
MODELS = {"PyTorchJob": PyTorchJob, "TFJob": TFJob, "MPIJob": MPIJob}
SPEC_FIELD = {"PyTorchJob": "pytorchReplicaSpecs", "TFJob": "tfReplicaSpecs", "MPIJob": "mpiReplicaSpecs"}
POD = {"template": {"spec": {"containers": [{"name": "main", "image": "busybox"}]}}}


def source(kind: str, replica_types: list[str], status: dict[str, Any] | None = None) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": "kubeflow.org/v1", "kind": kind,
        "metadata": {"name": "train", "namespace": "default", "uid": "u1", "creationTimestamp": T0},
        "spec": {SPEC_FIELD[kind]: {rt: dict(POD, replicas=2) for rt in replica_types}},
    }
    if status is not None:
        obj["status"] = status
    return obj


def job(phase: str, tasks: dict[str, dict[str, int]] | None = None, reason: str = "", message: str = "") -> dict[str, Any]:
    state = {"phase": phase, "lastTransitionTime": T1}
    if reason:
        state["reason"] = reason
    if message:
        state["message"] = message
    status: dict[str, Any] = {"state": state}
    if tasks is not None:
        status["taskStatusCount"] = {t: {"phase": p} for t, p in tasks.items()}
    return {"metadata": {"name": "train", "namespace": "default", "creationTimestamp": T0}, "status": status}


def types(status: dict[str, Any]) -> dict[str, str]:
    return {c["type"]: c["status"] for c in status["conditions"]}


#: kind, replica types, Volcano phase, taskStatusCount, expected {condition: status}, expected replicaStatuses,
#: completion time expected
CASES = [
    pytest.param("PyTorchJob", ["Master", "Worker"], "Pending", {"master": {"Pending": 1}},
                 {"Created": "True"}, {"Master": {"active": 0, "succeeded": 0, "failed": 0},
                                       "Worker": {"active": 0, "succeeded": 0, "failed": 0}}, False, id="pending"),
    pytest.param("PyTorchJob", ["Master", "Worker"], "Inqueue", None, {"Created": "True"},
                 {"Master": {"active": 0, "succeeded": 0, "failed": 0},
                  "Worker": {"active": 0, "succeeded": 0, "failed": 0}}, False, id="inqueue"),
    pytest.param("PyTorchJob", ["Master", "Worker"], "Running",
                 {"master": {"Running": 1}, "worker": {"Running": 1, "Pending": 1}},
                 {"Created": "True", "Running": "True"},
                 {"Master": {"active": 1, "succeeded": 0, "failed": 0},
                  "Worker": {"active": 1, "succeeded": 0, "failed": 0}}, False, id="running"),
    pytest.param("TFJob", ["Chief", "PS", "Worker"], "Restarting", {"ps": {"Failed": 1}, "worker": {"Running": 2}},
                 {"Created": "True", "Restarting": "True"},
                 {"Chief": {"active": 0, "succeeded": 0, "failed": 0}, "PS": {"active": 0, "succeeded": 0, "failed": 1},
                  "Worker": {"active": 2, "succeeded": 0, "failed": 0}}, False, id="restarting"),
    pytest.param("MPIJob", ["Launcher", "Worker"], "Completed",
                 {"launcher": {"Succeeded": 1}, "worker": {"Succeeded": 2}},
                 {"Created": "True", "Succeeded": "True"},
                 {"Launcher": {"active": 0, "succeeded": 1, "failed": 0},
                  "Worker": {"active": 0, "succeeded": 2, "failed": 0}}, True, id="completed"),
    pytest.param("PyTorchJob", ["Master"], "Failed", {"master": {"Failed": 1}}, {"Created": "True", "Failed": "True"},
                 {"Master": {"active": 0, "succeeded": 0, "failed": 1}}, True, id="failed"),
    pytest.param("PyTorchJob", ["Master"], "Aborted", {}, {"Created": "True", "Failed": "True"},
                 {"Master": {"active": 0, "succeeded": 0, "failed": 0}}, True, id="aborted"),
    pytest.param("PyTorchJob", ["Master"], "Terminated", {}, {"Created": "True", "Failed": "True"},
                 {"Master": {"active": 0, "succeeded": 0, "failed": 0}}, True, id="terminated"),
]


@pytest.mark.parametrize("kind,replica_types,phase,tasks,conditions,replicas,completed", CASES)
def test_volcano_phase_maps_to_kubeflow_status(kind: str, replica_types: list[str], phase: str,
                                               tasks: dict[str, dict[str, int]] | None, conditions: dict[str, str],
                                               replicas: dict[str, Any], completed: bool) -> None:
    src = source(kind, replica_types)
    status = kubeflow_status(kind, src, job(phase, tasks), NOW)
    assert types(status) == conditions
    assert status["replicaStatuses"] == replicas
    assert status["startTime"] == T0
    assert ("completionTime" in status) is completed
    if completed:
        assert status["completionTime"] == T1
    assert status["conditions"][-1]["reason"] == f"{kind}{list(conditions)[-1]}"
    # the training-operator model accepts what is written
    MODELS[kind].model_validate(dict(src, status=status))
    # the same inputs on top of the written status give the same status: no write loop
    assert kubeflow_status(kind, dict(src, status=status), job(phase, tasks), NOW) == status


def test_transitions_follow_the_training_operator() -> None:
    src = source("PyTorchJob", ["Master"])
    running = kubeflow_status("PyTorchJob", src, job("Running"), NOW)
    restarting = kubeflow_status("PyTorchJob", dict(src, status=running),
                                 job("Restarting", reason="PodFailed", message="master-0 exited 1"), NOW)
    assert types(restarting) == {"Created": "True", "Restarting": "True"}  # Running and Restarting exclude
    assert "PodFailed: master-0 exited 1" in restarting["conditions"][-1]["message"]
    again = kubeflow_status("PyTorchJob", dict(src, status=restarting), job("Running"), NOW)
    assert types(again) == {"Created": "True", "Running": "True"}
    done = kubeflow_status("PyTorchJob", dict(src, status=again), job("Completed"), NOW)
    assert types(done) == {"Created": "True", "Running": "False", "Succeeded": "True"}
    assert done["conditions"][-1]["type"] == "Succeeded"  # kubectl's STATE column reads the last one
    created = next(c for c in done["conditions"] if c["type"] == "Created")
    assert created == next(c for c in running["conditions"] if c["type"] == "Created"), "unchanged: same times"


def test_merge_patch_turns_old_into_new() -> None:
    old = {"state": {"phase": "Running", "reason": "x"}, "running": 2, "taskStatusCount": {"w": {"phase": {"R": 1}}}}
    new = {"state": {"phase": "Completed"}, "succeeded": 2, "taskStatusCount": {}}
    assert merge_diff(old, new) == {"state": {"phase": "Completed", "reason": None}, "running": None,
                                     "succeeded": 2, "taskStatusCount": {"w": None}}


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[ApiServer]:
    async with FederationServer(ServerConfig(data_dir=tmp_path / "data"), controllers=[source_status_controller]) as srv:
        yield srv


PYTORCH = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "train"},
           "spec": {"pytorchReplicaSpecs": {"Master": dict(POD, replicas=1), "Worker": dict(POD, replicas=2)}}}
VCJOB = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "VCJob", "metadata": {"name": "vc"},
         "spec": {"tasks": [{"name": "worker", "replicas": 2, "pod": {"containers": [
             {"name": "main", "image": "busybox"}]}}]}}
JOBS = lookup("batch.volcano.sh/v1alpha1", "Job")
PYTORCHJOBS = lookup("kubeflow.org/v1", "PyTorchJob")
VCJOBS = lookup("batch.volcano.sh/v1alpha1", "VCJob")


async def test_pytorchjob_and_vcjob_follow_their_jobs(server: ApiServer) -> None:
    async with api_client_from_dict(server.kubeconfig()) as api:
        rc = ResourceClient(api, 10.0)
        await rc.create(PYTORCHJOBS, copy.deepcopy(PYTORCH), "default")
        await rc.create(VCJOBS, copy.deepcopy(VCJOB), "default")

        async def state(name: str = "train") -> str:
            found = await rc.get(PYTORCHJOBS, name, "default")
            conditions = (found.get("status") or {}).get("conditions") or []
            return str(conditions[-1]["type"]) if conditions else ""

        assert await until(lambda: _eq(state(), "Created"), "PyTorchJob Created")
        # written as the status aggregator would
        await rc.patch(JOBS, "train", {"status": {"state": {"phase": "Running", "lastTransitionTime": T1},
                                                  "running": 3, "taskStatusCount": {
                                                      "master": {"phase": {"Running": 1}},
                                                      "worker": {"phase": {"Running": 2}}}}}, "default", "status")
        await until(lambda: _eq(state(), "Running"), "PyTorchJob Running")
        running = await rc.get(PYTORCHJOBS, "train", "default")
        assert running["status"]["replicaStatuses"]["Worker"] == {"active": 2, "succeeded": 0, "failed": 0}
        await rc.patch(JOBS, "train", {"status": {"state": {"phase": "Completed", "lastTransitionTime": T1},
                                                  "running": 0, "succeeded": 3, "taskStatusCount": {
                                                      "master": {"phase": {"Running": None, "Succeeded": 1}},
                                                      "worker": {"phase": {"Running": None, "Succeeded": 2}}}}},
                       "default", "status")
        await until(lambda: _eq(state(), "Succeeded"), "PyTorchJob Succeeded")
        done = await rc.get(PYTORCHJOBS, "train", "default")
        assert done["status"]["completionTime"] == T1
        assert done["status"]["replicaStatuses"]["Master"] == {"active": 0, "succeeded": 1, "failed": 0}

        await rc.patch(JOBS, "vc", {"status": {"state": {"phase": "Running"}, "running": 2}}, "default", "status")

        async def vc_mirrors() -> bool:
            vc, vjob = await rc.get(VCJOBS, "vc", "default"), await rc.get(JOBS, "vc", "default")
            return bool(vc.get("status")) and vc.get("status") == vjob.get("status")

        await until(vc_mirrors, "VCJob status mirrors its Job")

        # a fresh controller (a restart) finds nothing to write
        table = await _table(api)
        assert table[:2] == ["train", "Succeeded"]
        versions = {k: (await rc.get(i, n, "default"))["metadata"]["resourceVersion"]
                    for k, i, n in (("p", PYTORCHJOBS, "train"), ("v", VCJOBS, "vc"))}
        again = SourceStatusController(api)
        stop = asyncio.Event()
        task = asyncio.create_task(again.run(stop))
        try:
            await until(lambda: _synced(again), "second controller synced")
            for key in again.source_keys():
                await again.reconcile(key)
            assert again.writes == 0
        finally:
            stop.set()
            await task
        assert versions == {k: (await rc.get(i, n, "default"))["metadata"]["resourceVersion"]
                            for k, i, n in (("p", PYTORCHJOBS, "train"), ("v", VCJOBS, "vc"))}


async def _eq(probe: Any, expected: str) -> bool:
    return bool(await probe == expected)


async def _synced(controller: SourceStatusController) -> bool:
    return controller.jobs.synced.is_set() and all(i.synced.is_set() for i in controller.sources.values())


async def _table(api: k8s.ApiClient) -> list[Any]:
    """``kubectl get pytorchjobs``: the Table row of ``train`` (name, STATE, AGE)."""
    response = await api.call_api(
        "/apis/kubeflow.org/v1/namespaces/default/pytorchjobs", "GET", {}, [],
        {"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}, response_types_map={200: "object"},
        auth_settings=["BearerToken"], _return_http_data_only=True)
    defs = [d["name"] for d in response["columnDefinitions"]]
    assert defs == ["Name", "STATE", "Age"]
    row = next(r for r in response["rows"] if r["cells"][0] == "train")
    return list(row["cells"])
