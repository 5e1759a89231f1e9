"""Issue 42: requests real clients send, answered as kube-apiserver answers them (each failed before).

Content-Type defaults, ``fieldValidation``, field selectors, the YAML alias bomb, strategic merge
patch, the Namespace name label, aggregationRule escalation. Raw HTTP, so every status code,
message and header is the server's own.
"""

from __future__ import annotations

import io
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest

from federation.apiserver.server import ApiServer, ServerConfig

NS = "default"
QUEUES = "/apis/scheduling.volcano.sh/v1beta1/queues"
JOBS = f"/apis/batch.volcano.sh/v1alpha1/namespaces/{NS}/jobs"
PODS = f"/api/v1/namespaces/{NS}/pods"
CONFIGMAPS = f"/api/v1/namespaces/{NS}/configmaps"
NODES = "/api/v1/nodes"
SMP = "application/strategic-merge-patch+json"


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[ApiServer]:
    async with ApiServer(ServerConfig(data_dir=tmp_path / "data")) as srv:
        yield srv


@pytest.fixture
async def member(tmp_path: Path) -> AsyncIterator[ApiServer]:
    """A member-mode server: Pods and Nodes are stored there (the federation serves them as a view)."""
    async with ApiServer(ServerConfig(data_dir=tmp_path / "member", member_mode=True)) as srv:
        yield srv


async def call(server: ApiServer, method: str, path: str, body: Any = None, content_type: str | None = None,
               token: str | None = None) -> tuple[int, Any, list[str]]:
    """(status, decoded body, Warning headers); ``content_type`` None sends no Content-Type at all."""
    headers = {"Authorization": f"Bearer {token or server.admin_token}"}
    if content_type:
        headers["Content-Type"] = content_type
    data = body if isinstance(body, bytes) or body is None else orjson.dumps(body)
    async with aiohttp.ClientSession(skip_auto_headers=["Content-Type"]) as session, \
            session.request(method, server.url + path, data=None if data is None else io.BytesIO(data),
                            headers=headers) as resp:
        raw = await resp.read()
        try:
            decoded = orjson.loads(raw)
        except orjson.JSONDecodeError:
            decoded = raw.decode(errors="replace")
        return resp.status, decoded, resp.headers.getall("Warning", [])


def queue(name: str = "q", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": name},
            "spec": dict({"weight": 1}, **spec)}


def pod(name: str = "p") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": {"containers": [
        {"name": "a", "image": "busybox", "env": [{"name": "X", "value": "1"}, {"name": "Y", "value": "2"}]},
        {"name": "b", "image": "busybox"}]}}


# -- Content-Type -----------------------------------------------------------------------------


async def test_post_and_put_without_content_type_are_read_as_json(server: ApiServer) -> None:
    status, created, _ = await call(server, "POST", QUEUES, queue(), content_type=None)
    assert status == 201, created
    created["spec"]["weight"] = 5
    status, updated, _ = await call(server, "PUT", f"{QUEUES}/q", created, content_type=None)
    assert status == 200 and updated["spec"]["weight"] == 5, updated
    status, refused, _ = await call(server, "PATCH", f"{QUEUES}/q", {"spec": {"weight": 2}}, content_type=None)
    assert status == 415 and refused["reason"] == "UnsupportedMediaType", refused


# -- fieldValidation --------------------------------------------------------------------------


async def test_field_validation_strict_refuses_unknown_fields_with_400(server: ApiServer) -> None:
    body = queue(bogus=1)
    body["metadata"]["extra"] = "x"
    status, refused, _ = await call(server, "POST", f"{QUEUES}?fieldValidation=Strict", body, "application/json")
    assert status == 400 and refused["reason"] == "BadRequest", refused
    assert refused["message"] == ('Queue in version "v1beta1" cannot be handled as a Queue: strict decoding error: '
                                  'unknown field "metadata.extra", unknown field "spec.bogus"'), refused
    assert (await call(server, "GET", f"{QUEUES}/q"))[0] == 404


@pytest.mark.parametrize("mode", [None, "Warn", "Ignore"])
async def test_field_validation_warn_and_ignore_drop_unknown_fields(server: ApiServer, mode: str | None) -> None:
    query = f"?fieldValidation={mode}" if mode else ""
    status, created, warnings = await call(server, "POST", QUEUES + query, queue(bogus=1), "application/json")
    assert status == 201, created
    assert "bogus" not in created["spec"] and created["spec"]["weight"] == 1
    if mode == "Ignore":
        assert warnings == []
    else:  # Warn is the default when the parameter is absent
        assert warnings == ['299 - "unknown field \\"spec.bogus\\""'], warnings
    stored = (await call(server, "GET", f"{QUEUES}/q"))[1]
    assert "bogus" not in stored["spec"]


async def test_field_validation_applies_to_patches_and_status_writes(server: ApiServer) -> None:
    assert (await call(server, "POST", QUEUES, queue(), "application/json"))[0] == 201
    status, patched, warnings = await call(server, "PATCH", f"{QUEUES}/q/status",
                                           {"status": {"state": "Open", "kopf": {"progress": {}}}},
                                           "application/merge-patch+json")
    assert status == 200 and "kopf" not in patched["status"], patched  # kube prunes it; kopf relies on that
    assert warnings == ['299 - "unknown field \\"status.kopf\\""']
    status, refused, _ = await call(server, "PATCH", f"{QUEUES}/q?fieldValidation=Strict", {"spec": {"x": 1}},
                                    "application/merge-patch+json")
    assert status == 400 and 'unknown field "spec.x"' in refused["message"], refused


async def test_field_validation_bogus_value_is_422_on_the_options_kind(server: ApiServer) -> None:
    status, refused, _ = await call(server, "POST", f"{QUEUES}?fieldValidation=Loose", queue(), "application/json")
    assert status == 422 and refused["reason"] == "Invalid", refused
    assert refused["message"].startswith('CreateOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported '
                                         'value: "Loose"'), refused


async def test_other_schema_errors_stay_422_under_every_mode(server: ApiServer) -> None:
    status, refused, _ = await call(server, "POST", QUEUES, queue(weight="heavy", bogus=1), "application/json")
    assert status == 422 and refused["reason"] == "Invalid", refused
    assert [c["field"] for c in refused["details"]["causes"]] == ["spec.weight"], refused


# -- field selectors --------------------------------------------------------------------------


async def test_empty_field_selector_terms_are_skipped(server: ApiServer) -> None:
    for name in ("a", "b"):
        assert (await call(server, "POST", QUEUES, queue(name), "application/json"))[0] == 201
    status, listed, _ = await call(server, "GET", f"{QUEUES}?fieldSelector=metadata.name%3Da%2C")
    assert status == 200 and [o["metadata"]["name"] for o in listed["items"]] == ["a"], listed
    status, listed, _ = await call(server, "GET", f"{QUEUES}?fieldSelector=%2C")
    assert status == 200 and len(listed["items"]) == 3  # a, b and the default queue


@pytest.mark.parametrize(("path", "selector"), [(QUEUES, "spec.bogus=1"), (QUEUES, "spec.weight=1"),
                                                (PODS, "spec.bogus=1"), (CONFIGMAPS, "data.k=v"),
                                                (f"{JOBS}?watch=true", "status.state.phase=Running")])
async def test_unsupported_field_labels_are_400(server: ApiServer, path: str, selector: str) -> None:
    joiner = "&" if "?" in path else "?"
    status, refused, _ = await call(server, "GET", f"{path}{joiner}fieldSelector={selector}")
    if isinstance(refused, str):  # a refused watch is one ERROR event line, as kubernetes-asyncio reads it
        refused = orjson.loads(refused.splitlines()[0])["object"]
    label = selector.split("=")[0]
    assert refused["code"] == 400 and refused["message"] == f"field label not supported: {label}", refused


@pytest.mark.parametrize(("path", "selector"), [
    (PODS, "spec.nodeName=,status.phase!=Failed,spec.schedulerName=volcano,spec.restartPolicy=Always"),
    (NODES, "spec.unschedulable=false,metadata.name=n"),
    ("/api/v1/namespaces", "status.phase=Active"),
    (f"/api/v1/namespaces/{NS}/events", "involvedObject.uid=x,reason=Started,type=Normal,source=s"),
    (QUEUES, "metadata.name=default,metadata.namespace="),
])
async def test_kube_field_labels_are_accepted(server: ApiServer, path: str, selector: str) -> None:
    status, listed, _ = await call(server, "GET", f"{path}?fieldSelector={selector}")
    assert status == 200, listed


# -- YAML -------------------------------------------------------------------------------------


def alias_bomb(levels: int) -> bytes:
    lines = ["apiVersion: v1", "kind: ConfigMap", "metadata: {name: bomb}", "a0: &a0 [lol, lol, lol, lol, lol]"]
    for level in range(1, levels + 1):
        lines.append(f"a{level}: &a{level} [{', '.join([f'*a{level - 1}'] * 9)}]")
    return "\n".join(lines).encode()


@pytest.mark.parametrize("levels", [4, 7, 12])
async def test_yaml_alias_bomb_is_refused_before_expansion(server: ApiServer, levels: int) -> None:
    started = time.perf_counter()
    status, refused, _ = await call(server, "POST", CONFIGMAPS, alias_bomb(levels), "application/yaml")
    assert status == 400 and "excessive aliasing" in refused["message"], refused
    assert (await call(server, "GET", f"{CONFIGMAPS}/bomb"))[0] == 404
    print(f"{levels} levels refused in {time.perf_counter() - started:.3f} s")


async def test_recursive_yaml_alias_is_refused(server: ApiServer) -> None:
    body = b"apiVersion: v1\nkind: ConfigMap\nmetadata: &m {name: loop, labels: *m}\n"
    status, refused, _ = await call(server, "POST", CONFIGMAPS, body, "application/yaml")
    assert status == 400 and "excessive aliasing" in refused["message"], refused


async def test_yaml_with_a_few_aliases_is_accepted(server: ApiServer) -> None:
    body = (b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ok\n  labels: &l {app: web}\n"
            b"  annotations: *l\ndata: {a: x}\n")
    status, created, _ = await call(server, "POST", CONFIGMAPS, body, "application/yaml")
    assert status == 201 and created["metadata"]["annotations"] == {"app": "web"}, created


# -- strategic merge patch --------------------------------------------------------------------


async def test_strategic_merge_patch_of_a_custom_resource_is_415(server: ApiServer) -> None:
    assert (await call(server, "POST", QUEUES, queue(), "application/json"))[0] == 201
    status, refused, _ = await call(server, "PATCH", f"{QUEUES}/q", {"spec": {"weight": 2}}, SMP)
    assert status == 415 and refused["reason"] == "UnsupportedMediaType", refused
    accepted = refused["message"].split("accepted media types include: ")[1].split(", ")
    assert accepted == ["application/json-patch+json", "application/merge-patch+json",
                        "application/apply-patch+yaml"], refused


async def test_strategic_merge_patch_merges_pod_containers_by_name(member: ApiServer) -> None:
    server = member
    assert (await call(server, "POST", PODS, pod(), "application/json"))[0] == 201
    patch = {"spec": {"containers": [{"name": "a", "image": "nginx", "env": [{"name": "Y", "value": "3"}]},
                                     {"name": "c", "image": "redis"}]},
             "metadata": {"finalizers": ["x/y"]}}
    status, patched, _ = await call(server, "PATCH", f"{PODS}/p", patch, SMP)
    assert status == 200, patched
    containers = {c["name"]: c for c in patched["spec"]["containers"]}
    assert list(containers) == ["a", "b", "c"]
    assert containers["a"]["image"] == "nginx"
    assert containers["a"]["env"] == [{"name": "X", "value": "1"}, {"name": "Y", "value": "3"}]
    delete = {"spec": {"containers": [{"name": "b", "$patch": "delete"}]},
              "metadata": {"$deleteFromPrimitiveList/finalizers": ["x/y"]}}
    status, patched, _ = await call(server, "PATCH", f"{PODS}/p", delete, SMP)
    assert status == 200, patched
    assert [c["name"] for c in patched["spec"]["containers"]] == ["a", "c"]
    assert not patched["metadata"].get("finalizers")


async def test_strategic_merge_patch_merges_node_conditions_by_type(member: ApiServer) -> None:
    server = member
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}, "status": {"conditions": [
        {"type": "Ready", "status": "True"}, {"type": "MemoryPressure", "status": "False"}]}}
    assert (await call(server, "POST", NODES, node, "application/json"))[0] == 201
    await call(server, "PUT", f"{NODES}/n/status", node, "application/json")
    patch = {"status": {"conditions": [{"type": "Ready", "status": "False", "reason": "KubeletDown"}]}}
    status, patched, _ = await call(server, "PATCH", f"{NODES}/n/status", patch, SMP)
    assert status == 200, patched
    assert patched["status"]["conditions"] == [{"type": "Ready", "status": "False", "reason": "KubeletDown"},
                                               {"type": "MemoryPressure", "status": "False"}]


async def test_strategic_merge_patch_replace_directive_and_atomic_lists(member: ApiServer) -> None:
    server = member
    created = pod()
    created["spec"]["tolerations"] = [{"key": "a", "operator": "Exists"}]
    assert (await call(server, "POST", PODS, created, "application/json"))[0] == 201
    patch = {"spec": {"tolerations": [{"key": "b", "operator": "Exists"}],
                      "containers": [{"$patch": "replace"}, {"name": "only", "image": "x"}]}}
    status, patched, _ = await call(server, "PATCH", f"{PODS}/p", patch, SMP)
    assert status == 200, patched
    assert patched["spec"]["tolerations"] == [{"key": "b", "operator": "Exists"}]  # no merge key: replaced
    assert [c["name"] for c in patched["spec"]["containers"]] == ["only"]


# -- Namespaces, RBAC -------------------------------------------------------------------------


async def test_namespaces_carry_their_name_label(server: ApiServer) -> None:
    status, created, _ = await call(server, "POST", "/api/v1/namespaces", {
        "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a", "labels": {
            "kubernetes.io/metadata.name": "forged", "team": "a"}}}, "application/json")
    assert status == 201, created
    assert created["metadata"]["labels"] == {"kubernetes.io/metadata.name": "team-a", "team": "a"}
    status, listed, _ = await call(server, "GET", "/api/v1/namespaces?labelSelector=kubernetes.io/metadata.name%3Ddefault")
    assert status == 200 and [n["metadata"]["name"] for n in listed["items"]] == ["default"], listed
    status, patched, _ = await call(server, "PATCH", "/api/v1/namespaces/team-a", {
        "metadata": {"labels": {"kubernetes.io/metadata.name": None}}}, "application/merge-patch+json")
    assert patched["metadata"]["labels"]["kubernetes.io/metadata.name"] == "team-a", patched


def _role(name: str, **extra: Any) -> dict[str, Any]:
    return dict({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": name},
                 "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]}, **extra)


async def test_aggregation_rule_needs_full_authority_or_escalate(server: ApiServer) -> None:
    rbac = "/apis/rbac.authorization.k8s.io/v1"
    assert server.state is not None
    token = server.state.auth.mint_for("rbac-writer")
    grant = _role("role-writer")
    grant["rules"] = [{"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"],
                       "verbs": ["create", "update"]}, {"apiGroups": [""], "resources": ["configmaps"],
                                                        "verbs": ["get"]}]
    assert (await call(server, "POST", f"{rbac}/clusterroles", grant, "application/json"))[0] == 201
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
               "metadata": {"name": "writer"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io",
                                                           "kind": "ClusterRole", "name": "role-writer"},
               "subjects": [{"kind": "User", "name": "rbac-writer", "apiGroup": "rbac.authorization.k8s.io"}]}
    assert (await call(server, "POST", f"{rbac}/clusterrolebindings", binding, "application/json"))[0] == 201
    assert (await call(server, "POST", f"{rbac}/clusterroles", _role("plain"), "application/json", token))[0] == 201
    aggregating = _role("gatherer", aggregationRule={"clusterRoleSelectors": [{"matchLabels": {"x": "y"}}]})
    status, refused, _ = await call(server, "POST", f"{rbac}/clusterroles", aggregating, "application/json", token)
    assert status == 403 and refused["reason"] == "Forbidden", refused
    assert refused["message"].endswith("must have cluster-admin privileges to use the aggregationRule"), refused
    assert (await call(server, "POST", f"{rbac}/clusterroles", aggregating, "application/json"))[0] == 201
