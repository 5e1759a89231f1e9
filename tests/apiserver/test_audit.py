"""The audit log: one kube audit Event per request with the right user, policy levels, rotation."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest

from federation.apiserver.audit import AuditPolicyError, RotatingWriter, load_policy
from federation.apiserver.server import ApiServer, ServerConfig

CM = "/api/v1/namespaces/default/configmaps"
JOBS = "/apis/batch.volcano.sh/v1alpha1/namespaces/default/jobs"
POLICY = """apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: None
  resources: [{group: "", resources: [configmaps]}]
- level: RequestResponse
  resources: [{group: batch.volcano.sh, resources: ["jobs", "jobs/*"]}]
- level: None
  nonResourceURLs: ["/healthz*", "/version"]
- level: Metadata
"""


async def _call(server: ApiServer, method: str, path: str, token: str | None, body: Any = None) -> tuple[int, str]:
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    async with aiohttp.ClientSession() as session, session.request(
            method, server.url + path, data=orjson.dumps(body) if body is not None else None,
            headers=headers) as resp:
        await resp.read()
        return resp.status, resp.headers.get("Audit-Id", "")


def _lines(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


@pytest.fixture
async def audited(tmp_path: Path) -> AsyncIterator[ApiServer]:
    config = ServerConfig(data_dir=tmp_path / "data", audit_log_path=tmp_path / "audit" / "audit.log")
    async with ApiServer(config) as srv:
        yield srv


# (who, method, path, body, code, verb, objectRef)
REQUESTS: list[tuple[str, str, str, Any, int, str, dict[str, str]]] = [
    ("admin", "POST", CM, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}, 201, "create",
     {"resource": "configmaps", "namespace": "default", "name": "a", "apiVersion": "v1"}),
    ("alice", "GET", CM + "/a", None, 403, "get",
     {"resource": "configmaps", "namespace": "default", "name": "a", "apiVersion": "v1"}),
    ("", "GET", CM, None, 401, "list", {"resource": "configmaps", "namespace": "default", "apiVersion": "v1"}),
    ("viewer", "GET", "/apis/scheduling.volcano.sh/v1beta1/queues", None, 200, "list",
     {"resource": "queues", "apiGroup": "scheduling.volcano.sh", "apiVersion": "v1beta1"}),
    ("viewer", "GET", "/apis", None, 200, "get", {}),
    ("admin", "DELETE", CM + "/a", None, 200, "delete",
     {"resource": "configmaps", "namespace": "default", "name": "a", "apiVersion": "v1"}),
]


async def test_one_event_per_request_with_the_right_user(audited: ApiServer, tmp_path: Path) -> None:
    assert audited.state is not None
    tokens = {"admin": audited.admin_token, "alice": audited.state.auth.mint_for("alice"),
              "viewer": audited.mint_token("viewer", "vera"), "": ""}
    ids = []
    for who, method, path, body, code, _verb, _ref in REQUESTS:
        status, audit_id = await _call(audited, method, path, tokens[who], body)
        assert status == code, (who, method, path)
        ids.append(audit_id)
    lines = _lines(tmp_path / "audit" / "audit.log")
    assert len(lines) == len(REQUESTS)
    users = {"admin": "admin", "alice": "alice", "viewer": "vera", "": None}
    for event, audit_id, (who, _method, path, _body, code, verb, ref) in zip(lines, ids, REQUESTS, strict=True):
        assert event["kind"] == "Event" and event["apiVersion"] == "audit.k8s.io/v1"
        assert event["level"] == "Metadata" and event["stage"] == "ResponseComplete"
        assert event["auditID"] == audit_id and audit_id
        assert event["user"].get("username") == users[who]
        assert event["verb"] == verb and event["requestURI"] == path
        got_ref = dict(event.get("objectRef", {}))
        if verb == "create":  # kube fills the created object's uid and resourceVersion in
            assert got_ref.pop("uid") and got_ref.pop("resourceVersion")
        assert got_ref == ref
        assert event["responseStatus"]["code"] == code
        assert event["requestReceivedTimestamp"] <= event["stageTimestamp"]
        assert "requestObject" not in event and "responseObject" not in event
    forbidden = lines[1]
    assert forbidden["annotations"]["authorization.k8s.io/decision"] == "forbid"
    assert forbidden["responseStatus"]["reason"] == "Forbidden"
    assert forbidden["responseStatus"]["message"].startswith('configmaps "a" is forbidden: User "alice"')
    assert lines[0]["annotations"]["authorization.k8s.io/decision"] == "allow"
    assert lines[3]["annotations"]["authorization.k8s.io/reason"] == (
        'RBAC: allowed by ClusterRoleBinding "caldera:viewers" of ClusterRole "caldera:viewer" to Group '
        '"caldera:viewer"')
    assert "system:authenticated" in lines[3]["user"]["groups"]


async def test_policy_levels(tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)
    log = tmp_path / "audit.log"
    config = ServerConfig(data_dir=tmp_path / "data", audit_log_path=log, audit_policy_file=policy)
    async with ApiServer(config) as server:
        token = server.admin_token
        await _call(server, "POST", CM, token, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}})
        await _call(server, "GET", "/version", token)
        job = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": "j"},
               "spec": {"minAvailable": 1, "tasks": [{"name": "w", "replicas": 1, "template": {
                   "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}]}}
        status, _ = await _call(server, "POST", JOBS, token, job)
        assert status == 201
        await _call(server, "GET", "/apis/scheduling.volcano.sh/v1beta1/queues", token)
    events = _lines(log)
    assert [(e["verb"], e["objectRef"]["resource"], e["level"]) for e in events] == [
        ("create", "jobs", "RequestResponse"), ("list", "queues", "Metadata")]
    assert events[0]["requestObject"]["metadata"]["name"] == "j"
    assert events[0]["responseObject"]["metadata"]["uid"] == events[0]["objectRef"]["uid"]


def test_rotation_by_size_keeps_maxbackup_files(tmp_path: Path) -> None:
    writer = RotatingWriter(tmp_path / "audit.log", max_bytes=100, max_backups=2)
    lines = [f'{{"n": {i:03d}, "pad": "{"x" * 30}"}}\n'.encode() for i in range(12)]
    for line in lines:
        writer.write(line)
    writer.close()
    backups = writer.backups()
    assert len(backups) == 2
    kept = b"".join(p.read_bytes() for p in sorted(backups, key=lambda p: p.stat().st_mtime_ns))
    kept += (tmp_path / "audit.log").read_bytes()
    assert all(len(p.read_bytes()) <= 100 for p in [*backups, tmp_path / "audit.log"])
    assert kept == b"".join(lines[-len(kept.splitlines()):])  # the newest lines, in order
    assert all(p.name.startswith("audit-") and p.suffix == ".log" for p in backups)


# (policy text, what the error names)
BAD_POLICIES = [
    ("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Loud\n", "rules[0].level"),
    ("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: None\n  omitStages: [Later]\n",
     "rules[0].omitStages"),
    ("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: None\n  nonResourceURLs: [/x]\n"
     "  resources: [{group: ''}]\n", "rules[0]"),
    ("apiVersion: v1\nkind: ConfigMap\n", "audit.k8s.io/v1"),
]


@pytest.mark.parametrize("text,names", BAD_POLICIES)
def test_bad_policy_files(tmp_path: Path, text: str, names: str) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text(text)
    with pytest.raises(AuditPolicyError) as err:
        load_policy(path)
    assert names in str(err.value) and str(path) in str(err.value)


# (omitStages of the policy, request, the stages its events must carry, in order)
STAGE_CASES = [
    ("[]", "watch", ["RequestReceived", "ResponseStarted", "ResponseComplete"]),
    ("[]", "get", ["RequestReceived", "ResponseComplete"]),
    ("[ResponseStarted]", "watch", ["RequestReceived", "ResponseComplete"]),
    ("[RequestReceived]", "watch", ["ResponseStarted", "ResponseComplete"]),
]


@pytest.mark.parametrize(("omit", "request_kind", "stages"), STAGE_CASES,
                         ids=[f"{kind}-omit{omit}" for omit, kind, _ in STAGE_CASES])
async def test_a_watch_gets_a_response_started_stage(tmp_path: Path, omit: str, request_kind: str,
                                                     stages: list[str]) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text(f"apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: {omit}\nrules:\n- level: Metadata\n")
    log = tmp_path / "audit.log"
    config = ServerConfig(data_dir=tmp_path / "data", audit_log_path=log, audit_policy_file=policy)
    async with ApiServer(config) as server:
        path = CM + ("?watch=true&timeoutSeconds=1" if request_kind == "watch" else "")
        status, audit_id = await _call(server, "GET", path, server.admin_token)
        assert status == 200
    mine = [e for e in _lines(log) if e["auditID"] == audit_id]
    assert [e["stage"] for e in mine] == stages
    assert {e["verb"] for e in mine} == {"watch" if request_kind == "watch" else "list"}
    times = [e["stageTimestamp"] for e in mine]
    assert times == sorted(times)
    assert all(e["responseStatus"]["code"] == 200 for e in mine if e["stage"] != "RequestReceived")
