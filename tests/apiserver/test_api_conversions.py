"""VCJob, PyTorchJob, TFJob and MPIJob submitted through the API become a Volcano Job of the same
name (what placement runs), owned by the source: updates follow, deletion cascades, a source
whose Job would be rejected changes nothing, and a Job lost to a crash is made again at start-up."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes_asyncio import client

from federation.apiserver.server import ApiServer, ServerConfig
from federation.client import ResourceClient, api_client_from_dict
from tests.apiserver.conftest import KIND_SAMPLES

SEED = Path(__file__).resolve().parents[2] / "examples" / "seed"
JOBS = ("batch.volcano.sh/jobs")
SAMPLES = {s["object"]["kind"]: s["object"] for s in KIND_SAMPLES}
PYTORCH_SEED: dict[str, Any] = yaml.safe_load((SEED / "pytorchjob-pytorch-dist.yaml").read_text())

#: kind, source object, Job task names, a patch of the source, (Job field path, value after the patch)
CASES = [
    pytest.param(SAMPLES["VCJob"], ["worker"], {"spec": {"minAvailable": 1}}, (("spec", "minAvailable"), 1),
                 id="VCJob"),
    pytest.param(SAMPLES["PyTorchJob"], ["master", "worker"],
                 {"spec": {"pytorchReplicaSpecs": {"Worker": {"replicas": 3}}}},
                 (("spec", "tasks", 1, "replicas"), 3), id="PyTorchJob"),
    pytest.param(SAMPLES["TFJob"], ["worker"], {"spec": {"tfReplicaSpecs": {"Worker": {"replicas": 4}}}},
                 (("spec", "tasks", 0, "replicas"), 4), id="TFJob"),
    pytest.param(SAMPLES["MPIJob"], ["launcher", "worker"],
                 {"spec": {"mpiReplicaSpecs": {"Worker": {"replicas": 1}}}},
                 (("spec", "tasks", 1, "replicas"), 1), id="MPIJob"),
]


def _at(obj: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        obj = obj[step]
    return obj


def _info(obj: dict[str, Any]) -> Any:
    from policies.kinds import lookup

    return lookup(obj["apiVersion"], obj["kind"])


@pytest.mark.parametrize("source,tasks,patch,expect", CASES)
async def test_source_becomes_an_owned_job(server: ApiServer, api: client.ApiClient, source: dict[str, Any],
                                           tasks: list[str], patch: dict[str, Any],
                                           expect: tuple[tuple[Any, ...], Any]) -> None:
    rc = ResourceClient(api)
    info, name = _info(source), source["metadata"]["name"]
    created = await rc.create(info, copy.deepcopy(source))
    job = server.store.get(JOBS, "default", name)
    assert job is not None, f"a {source['kind']} creates a batch.volcano.sh Job"
    assert job["metadata"]["annotations"]["caldera.io/converted-from"] == source["kind"]
    owner = job["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["uid"]) == (source["kind"], name, created["metadata"]["uid"])
    assert [t["name"] for t in job["spec"]["tasks"]] == tasks
    assert job["spec"]["schedulerName"] == "volcano" and job["spec"]["queue"] == "default", "defaulted as a Job"

    await rc.patch(info, name, patch, "default")
    path, value = expect
    assert _at(server.store.get(JOBS, "default", name), path) == value, "the Job follows the source"

    await rc.delete(info, name, "default")
    assert server.store.get(JOBS, "default", name) is None, "deleting the source deletes its Job"


async def test_seed_pytorchjob_through_rest(server: ApiServer, api: client.ApiClient) -> None:
    rc = ResourceClient(api)
    for seed in ("queue-ai-training.yaml", "priorityclass-high-priority.yaml"):
        body = yaml.safe_load((SEED / seed).read_text())
        await rc.create(_info(body), body)
    await rc.create(_info(PYTORCH_SEED), copy.deepcopy(PYTORCH_SEED), "default")
    job = server.store.get(JOBS, "default", "pytorch-dist")
    assert job is not None
    spec = job["spec"]
    assert (spec["minAvailable"], spec["queue"], spec["priorityClassName"]) == (4, "ai-training", "high-priority")
    assert [(t["name"], t["replicas"]) for t in spec["tasks"]] == [("master", 1), ("worker", 3)]
    assert spec["plugins"]["pytorch"] == ["--master=master", "--worker=worker"]


async def test_source_whose_job_is_rejected_changes_nothing(server: ApiServer, api: client.ApiClient) -> None:
    bad = copy.deepcopy(PYTORCH_SEED)  # its queue ai-training does not exist here
    before = server.store.rv
    with pytest.raises(client.ApiException) as err:
        await ResourceClient(api).create(_info(bad), bad, "default")
    assert err.value.status == 422 and "unable to find job queue 'ai-training'" in err.value.body
    assert server.store.rv == before


async def test_name_clash_with_a_foreign_job_is_a_conflict(server: ApiServer, api: client.ApiClient) -> None:
    rc = ResourceClient(api)
    source = copy.deepcopy(SAMPLES["TFJob"])
    foreign = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
               "metadata": {"name": source["metadata"]["name"], "namespace": "default"},
               "spec": {"queue": "default", "tasks": [{"name": "x", "replicas": 1, "template": {
                   "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}]}}
    await rc.create(_info(foreign), foreign)
    before = server.store.rv
    with pytest.raises(client.ApiException) as err:
        await rc.create(_info(source), source)
    assert err.value.status == 409 and "not created from it already exists" in err.value.body
    assert server.store.rv == before and server.store.get("kubeflow.org/tfjobs", "default", "crud-tfj") is None


async def test_job_missing_after_a_crash_is_made_at_start_up(server_config: ServerConfig) -> None:
    config = server_config
    source = copy.deepcopy(SAMPLES["MPIJob"])
    async with ApiServer(config) as first, api_client_from_dict(first.kubeconfig()) as api:
        await ResourceClient(api).create(_info(source), source)
        job = first.store.get(JOBS, "default", "crud-mpij")
        assert job is not None
        # as if the server died between the source's commit and the Job's
        await first.store.remove(JOBS, job, int(job["metadata"]["resourceVersion"]))
    async with ApiServer(config) as second:
        again = second.store.get(JOBS, "default", "crud-mpij")
        assert again is not None and again["metadata"]["ownerReferences"][0]["kind"] == "MPIJob"
