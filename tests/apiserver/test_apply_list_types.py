"""Server-side apply's list types come from the kinds' schemas: keyed lists merge entry by entry
with separate owners, atomic lists are owned and replaced whole (conflicts in kube's words), and the
OpenAPI documents publish exactly the markers apply uses."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from federation.apiserver.apply.list_types import FieldPath, lists_of
from federation.apiserver.server import ApiServer
from tests.apiserver.helpers import request

APPLY = "application/apply-patch+yaml"
PODS = "/api/v1/namespaces/default/pods"
JOBS = "/apis/batch.volcano.sh/v1alpha1/namespaces/default/jobs"


def _pod(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec}


def _job(tasks: list[tuple[str, int]]) -> dict[str, Any]:
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": "train"},
            "spec": {"minAvailable": 1, "tasks": [{"name": t, "replicas": r, "template": {"spec": {"containers": [
                {"name": "c", "image": "busybox"}]}}} for t, r in tasks]}}


async def _apply(server: ApiServer, url: str, manager: str, obj: dict[str, Any],
                 force: bool = False) -> tuple[int, Any]:
    query = f"?fieldManager={manager}" + ("&force=true" if force else "")
    return await request(server, "PATCH", url + query, content_type=APPLY, body=orjson.dumps(obj))


def _owned(obj: dict[str, Any], manager: str) -> dict[str, Any]:
    return next(e["fieldsV1"] for e in obj["metadata"]["managedFields"] if e["manager"] == manager)


@pytest.mark.member_mode  # pods are written by a member's API server only
async def test_two_managers_keep_their_own_entries_of_keyed_lists(server: ApiServer) -> None:
    mine = _pod(containers=[{"name": "main", "image": "busybox", "env": [{"name": "A", "value": "1"}]}])
    status, body = await _apply(server, PODS + "/p", "a", mine)
    assert status == 201, body
    theirs = _pod(containers=[{"name": "main", "env": [{"name": "B", "value": "2"}]},
                              {"name": "sidecar", "image": "envoy"}])
    status, body = await _apply(server, PODS + "/p", "b", theirs)
    assert status == 200, body  # different entries of containers (by name) and env (by name): no conflict
    mine["spec"]["containers"][0]["env"][0]["value"] = "3"
    status, body = await _apply(server, PODS + "/p", "a", mine)
    assert status == 200, body
    containers = {c["name"]: c for c in body["spec"]["containers"]}
    assert containers["main"]["env"] == [{"name": "A", "value": "3"}, {"name": "B", "value": "2"}]
    assert containers["sidecar"]["image"] == "envoy" and containers["main"]["image"] == "busybox"
    a_env = _owned(body, "a")["f:spec"]["f:containers"]['k:{"name":"main"}']["f:env"]
    b_spec = _owned(body, "b")["f:spec"]["f:containers"]
    assert set(a_env) == {'k:{"name":"A"}'}
    assert 'k:{"name":"B"}' in b_spec['k:{"name":"main"}']["f:env"] and 'k:{"name":"sidecar"}' in b_spec


# (kind's URL, first manager's object, second manager's object, the atomic list's path, read it)
ATOMIC_CASES = [
    (PODS + "/p", _pod(containers=[{"name": "c", "image": "x"}], tolerations=[{"key": "gpu", "operator": "Exists"}]),
     _pod(containers=[{"name": "c", "image": "x"}], tolerations=[{"key": "spot", "operator": "Exists"}]),
     ".spec.tolerations", lambda o: o["spec"]["tolerations"]),
    # Volcano lets an update change only tasks' replicas; keyed by name the conflict would be
    # .spec.tasks[name="worker"].replicas, atomic it is the whole list
    (JOBS + "/train", _job([("master", 1), ("worker", 2)]), _job([("master", 1), ("worker", 3)]), ".spec.tasks",
     lambda o: [(t["name"], t["replicas"]) for t in o["spec"]["tasks"]]),
]


@pytest.mark.parametrize(("url", "first", "second", "path", "read"), [
    pytest.param(*ATOMIC_CASES[0], marks=pytest.mark.member_mode), ATOMIC_CASES[1]], ids=["tolerations", "tasks"])
async def test_an_atomic_list_conflicts_as_one_field_and_force_replaces_it_whole(
        server: ApiServer, url: str, first: dict[str, Any], second: dict[str, Any], path: str, read: Any) -> None:
    status, created = await _apply(server, url, "a", first)
    assert status == 201, created
    before = server.store.rv
    status, body = await _apply(server, url, "b", second)
    assert status == 409, body
    assert body["message"] == f'Apply failed with 1 conflict: conflict with "a": {path}'
    assert body["details"]["causes"] == [{"reason": "FieldManagerConflict", "message": 'conflict with "a"',
                                          "field": path}]
    assert server.store.rv == before  # nothing stored
    status, body = await _apply(server, url, "b", second, force=True)
    assert status == 200, body.get("message")
    assert read(body) == read(second)  # replaced whole, never merged item by item
    field = path.rsplit(".", 1)[1]
    assert f"f:{field}" in _owned(body, "b")["f:spec"] and f"f:{field}" not in _owned(body, "a").get("f:spec", {})


# --------------------------------------------------------------------------- OpenAPI


def _resolve(doc: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    while True:
        ref = node.get("$ref") or next((o.get("$ref") for o in node.get("allOf") or [] if "$ref" in o), None)
        if not ref:
            return node
        node = doc["components"]["schemas"][ref.rsplit("/", 1)[1]]


def _published(doc: dict[str, Any], node: dict[str, Any], path: FieldPath = (), depth: int = 0,
               out: dict[FieldPath, Any] | None = None) -> dict[FieldPath, Any]:
    """Every array property reachable from ``node`` -> its published list markers (None: none)."""
    out = {} if out is None else out
    node = _resolve(doc, node)
    if depth > 14:
        return out
    for prop, schema in (node.get("properties") or {}).items():
        here = path + (prop,)
        if schema.get("type") == "array":
            kind, keys = schema.get("x-kubernetes-list-type"), schema.get("x-kubernetes-list-map-keys")
            out.setdefault(here, (kind, tuple(keys or ())) if kind else None)
            items = schema.get("items") or {}
            _published(doc, items, here, depth + 1, out)
        else:
            _published(doc, schema, here, depth + 1, out)
    return out


@pytest.mark.parametrize(("doc_path", "schema", "api_version", "kind"), [
    ("api/v1", "io.caldera.core.v1.Pod", "v1", "Pod"),
    ("api/v1", "io.caldera.core.v1.Node", "v1", "Node"),
    ("apis/batch.volcano.sh/v1alpha1", "io.caldera.batch.volcano.sh.v1alpha1.Job", "batch.volcano.sh/v1alpha1", "Job"),
])
async def test_openapi_publishes_the_list_types_apply_uses(server: ApiServer, doc_path: str, schema: str,
                                                            api_version: str, kind: str) -> None:
    status, doc = await request(server, "GET", f"/openapi/v3/{doc_path}")
    assert status == 200
    published = _published(doc, doc["components"]["schemas"][schema])
    declared = lists_of(api_version, kind)
    assert published, "no arrays found"
    for path, markers in published.items():
        assert markers == declared.get(path), ".".join(path)
    expected = {("spec", "containers"), ("spec", "containers", "ports")} if kind == "Pod" else (
        {("spec", "taints"), ("status", "conditions")} if kind == "Node" else
        {("spec", "tasks"), ("spec", "tasks", "template", "spec", "containers", "env")})
    assert expected <= {p for p, m in published.items() if m is not None}
