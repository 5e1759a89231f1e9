"""CRUD of every served kind over real HTTP through kubernetes-asyncio."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from kubernetes_asyncio import client

from federation.client import ResourceClient
from policies.kinds import KINDS, lookup
from tests.apiserver.conftest import KIND_SAMPLES

SAMPLES = {(s["object"]["apiVersion"], s["object"]["kind"]): s for s in KIND_SAMPLES}


def test_every_kind_has_a_sample() -> None:
    missing = [k.kind for k in KINDS if (k.api_version, k.kind) not in SAMPLES]
    assert missing == []


def _touches_spec(patch: dict[str, Any]) -> bool:
    return any(key not in ("metadata", "status") for key in patch)


@pytest.mark.parametrize("sample", [pytest.param(s, marks=pytest.mark.member_mode) if s["object"]["kind"] in (
    "Pod", "PodGroup") else s for s in KIND_SAMPLES], ids=lambda s: s["object"]["kind"])
async def test_crud_roundtrip(api: client.ApiClient, sample: dict[str, Any]) -> None:
    body = copy.deepcopy(sample["object"])
    info = lookup(body["apiVersion"], body["kind"])
    rc = ResourceClient(api)
    ns = body["metadata"].get("namespace")
    if ns and ns not in ("default", "karmada-cluster"):
        await rc.create(lookup("v1", "Namespace"), {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})

    created = await rc.create(info, body)
    meta = created["metadata"]
    assert meta["name"] == body["metadata"]["name"]
    assert meta["uid"] and meta["creationTimestamp"] and meta["generation"] == 1
    assert int(meta["resourceVersion"]) > 0

    got = await rc.get(info, meta["name"], ns)
    assert got["metadata"]["uid"] == meta["uid"]
    listed = await rc.list(info, ns)
    assert meta["name"] in [o["metadata"]["name"] for o in listed["items"]]
    assert listed["kind"] == info.list_kind and int(listed["metadata"]["resourceVersion"]) >= int(meta["resourceVersion"])

    with pytest.raises(client.ApiException) as exists:
        await rc.create(info, copy.deepcopy(sample["object"]))
    assert exists.value.status == 409 and "already exists" in exists.value.body

    patched = await rc.patch(info, meta["name"], sample["patch"], ns)
    assert int(patched["metadata"]["resourceVersion"]) > int(meta["resourceVersion"])
    assert patched["metadata"]["generation"] == (2 if _touches_spec(sample["patch"]) else 1)

    stale = copy.deepcopy(got)  # still carries the first resourceVersion
    stale["metadata"].setdefault("labels", {})["stale"] = "yes"
    with pytest.raises(client.ApiException) as conflict:
        await rc.replace(info, stale)
    assert conflict.value.status == 409 and "has been modified" in conflict.value.body

    fresh = await rc.get(info, meta["name"], ns)
    fresh["metadata"].setdefault("labels", {})["replaced"] = "yes"
    replaced = await rc.replace(info, fresh)
    assert replaced["metadata"]["labels"]["replaced"] == "yes"

    await rc.delete(info, meta["name"], ns)
    if info.kind != "Namespace":  # namespaces keep their finalizer until emptied: gone right after
        with pytest.raises(client.ApiException) as gone:
            await rc.get(info, meta["name"], ns)
        assert gone.value.status == 404 and "not found" in gone.value.body


async def test_generate_name_and_missing_namespace(api: client.ApiClient) -> None:
    rc = ResourceClient(api)
    cm = lookup("v1", "ConfigMap")
    made = await rc.create(cm, {"apiVersion": "v1", "kind": "ConfigMap",
                                "metadata": {"generateName": "gen-", "namespace": "default"}})
    assert made["metadata"]["name"].startswith("gen-") and len(made["metadata"]["name"]) == 9
    with pytest.raises(client.ApiException) as missing:
        await rc.create(cm, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "nope"}})
    assert missing.value.status == 404
    assert json.loads(missing.value.body)["message"] == 'namespaces "nope" not found'


async def test_status_subresource_keeps_spec_and_status_apart(api: client.ApiClient) -> None:
    rc = ResourceClient(api)
    job = copy.deepcopy(SAMPLES[("batch.volcano.sh/v1alpha1", "Job")]["object"])
    info = lookup(job["apiVersion"], job["kind"])
    created = await rc.create(info, job)
    status = await rc.patch(info, "crud-job", {"status": {"state": {"phase": "Running"}, "running": 1},
                                               "spec": {"minAvailable": 2}}, "default", subresource="status")
    assert status["status"]["running"] == 1
    assert status["spec"]["minAvailable"] == 1, "a status write must not change spec"
    assert status["metadata"]["generation"] == created["metadata"]["generation"]
    spec = await rc.patch(info, "crud-job", {"spec": {"minAvailable": 2}, "status": {"running": 7}}, "default")
    assert spec["spec"]["minAvailable"] == 2 and spec["status"]["running"] == 1, "a spec write must not change status"
    assert spec["metadata"]["generation"] == 2
    same = await rc.patch(info, "crud-job", {"spec": {"minAvailable": 2}}, "default")
    assert same["metadata"]["resourceVersion"] == spec["metadata"]["resourceVersion"], "a no-op write is free"
    via_api = await client.CustomObjectsApi(api).get_namespaced_custom_object_status(
        "batch.volcano.sh", "v1alpha1", "default", "jobs", "crud-job")
    assert via_api["status"]["state"]["phase"] == "Running"


async def test_json_patch_and_strategic_merge(api: client.ApiClient) -> None:
    rc = ResourceClient(api)
    queue = lookup("scheduling.volcano.sh/v1beta1", "Queue")
    await rc.create(queue, {"apiVersion": queue.api_version, "kind": "Queue", "metadata": {"name": "jp"},
                            "spec": {"weight": 1}})
    ops = [{"op": "replace", "path": "/spec/weight", "value": 7},
           {"op": "add", "path": "/metadata/labels", "value": {"tier": "gold"}}]
    out = await rc.patch(queue, "jp", ops, content_type="application/json-patch+json")
    assert out["spec"]["weight"] == 7 and out["metadata"]["labels"] == {"tier": "gold"}
    with pytest.raises(client.ApiException) as failed:
        await rc.patch(queue, "jp", [{"op": "test", "path": "/spec/weight", "value": 1}],
                       content_type="application/json-patch+json")
    assert failed.value.status == 422
    core = client.CoreV1Api(api)
    await core.create_namespaced_config_map("default", {"metadata": {"name": "smp"}, "data": {"a": "1"}})
    cm = await core.patch_namespaced_config_map("smp", "default", {"data": {"b": "2"}})  # strategic merge
    assert cm.data == {"a": "1", "b": "2"}


async def test_finalizers_delay_deletion(api: client.ApiClient) -> None:
    rc = ResourceClient(api)
    cm = lookup("v1", "ConfigMap")
    await rc.create(cm, {"apiVersion": "v1", "kind": "ConfigMap",
                         "metadata": {"name": "fin", "namespace": "default", "finalizers": ["caldera.io/hold"]}})
    await rc.delete(cm, "fin", "default")
    held = await rc.get(cm, "fin", "default")
    assert held["metadata"]["deletionTimestamp"]
    await rc.patch(cm, "fin", {"metadata": {"finalizers": None}}, "default")
    with pytest.raises(client.ApiException) as gone:
        await rc.get(cm, "fin", "default")
    assert gone.value.status == 404


async def test_owner_references_garbage_collected(api: client.ApiClient) -> None:
    rc = ResourceClient(api)
    cm = lookup("v1", "ConfigMap")
    owner = await rc.create(cm, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "owner", "namespace": "default"}})
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner["metadata"]["uid"]}
    for name in ("dep-1", "dep-2"):
        await rc.create(cm, {"apiVersion": "v1", "kind": "ConfigMap",
                             "metadata": {"name": name, "namespace": "default", "ownerReferences": [ref]}})
    await rc.create(cm, {"apiVersion": "v1", "kind": "ConfigMap",
                         "metadata": {"name": "kept", "namespace": "default", "ownerReferences": [ref]}})
    await rc.patch(cm, "kept", {"metadata": {"ownerReferences": None}}, "default")
    await rc.delete(cm, "owner", "default")
    names = {o["metadata"]["name"] for o in (await rc.list(cm, "default"))["items"]}
    assert "dep-1" not in names and "dep-2" not in names and "kept" in names
