"""Issue 42: read-only CustomResourceDefinitions for every custom kind, and TokenReview."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import orjson
import pytest

from federation.apiserver.server import ApiServer, ServerConfig
from federation.apiserver.strategic import served as builtin
from policies.kinds import KINDS
from tests.apiserver.test_kube_answers import call

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[ApiServer]:
    async with ApiServer(ServerConfig(data_dir=tmp_path / "data")) as srv:
        yield srv


async def test_every_custom_kind_has_a_crd_and_no_builtin_does(server: ApiServer) -> None:
    status, listed, _ = await call(server, "GET", CRDS)
    assert status == 200 and listed["kind"] == "CustomResourceDefinitionList", listed
    names = {d["metadata"]["name"] for d in listed["items"]}
    assert names == {f"{k.plural}.{k.group}" for k in KINDS if not builtin(k)}
    assert "jobs.batch.volcano.sh" in names and "pods" not in names
    for crd in listed["items"]:
        established = {c["type"]: c["status"] for c in crd["status"]["conditions"]}
        assert established == {"NamesAccepted": "True", "Established": "True"}, crd["metadata"]["name"]
        assert "$ref" not in orjson.dumps(crd).decode(), crd["metadata"]["name"]  # schemas are self-contained


async def test_crd_schema_is_the_one_the_api_validates_against(server: ApiServer) -> None:
    status, crd, _ = await call(server, "GET", f"{CRDS}/queues.scheduling.volcano.sh")
    assert status == 200, crd
    assert crd["spec"]["scope"] == "Cluster" and crd["spec"]["names"]["kind"] == "Queue"
    version = crd["spec"]["versions"][0]
    assert version["name"] == "v1beta1" and version["subresources"] == {"status": {}}
    spec_schema = version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    assert "weight" in spec_schema and spec_schema["weight"]["type"] == "integer"
    # a field the schema declares is stored; one it does not is dropped with a warning (Warn)
    body = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "q"},
            "spec": {"weight": 3, "notInSchema": 1}}
    _, created, warnings = await call(server, "POST", "/apis/scheduling.volcano.sh/v1beta1/queues", body,
                                      "application/json")
    assert created["spec"]["weight"] == 3 and "notInSchema" not in spec_schema
    assert "notInSchema" not in created["spec"] and warnings


async def test_crds_are_read_only(server: ApiServer) -> None:
    crd = (await call(server, "GET", f"{CRDS}/queues.scheduling.volcano.sh"))[1]
    for method, path in (("POST", CRDS), ("PUT", f"{CRDS}/queues.scheduling.volcano.sh"),
                         ("DELETE", f"{CRDS}/queues.scheduling.volcano.sh")):
        status, refused, _ = await call(server, method, path, crd, "application/json")
        assert status == 405 and refused["reason"] == "MethodNotAllowed", refused
        assert "out of scope" in refused["message"], refused
    status, missing, _ = await call(server, "GET", f"{CRDS}/pods")
    assert status == 404, missing


async def test_crd_watch_sends_each_definition_then_holds(server: ApiServer) -> None:
    headers = {"Authorization": f"Bearer {server.admin_token}"}
    async with aiohttp.ClientSession() as session, \
            session.get(f"{server.url}{CRDS}?watch=true&timeoutSeconds=1&fieldSelector=metadata.name%3D"
                        "jobs.batch.volcano.sh", headers=headers) as resp:
        lines = [orjson.loads(line) for line in (await asyncio.wait_for(resp.read(), 10)).splitlines()]
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in lines] == [("ADDED", "jobs.batch.volcano.sh")]


async def test_token_review(server: ApiServer) -> None:
    path = "/apis/authentication.k8s.io/v1/tokenreviews"
    review = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": server.admin_token}}
    status, answer, _ = await call(server, "POST", path, review, "application/json")
    assert status == 201 and answer["status"]["authenticated"] is True, answer
    assert "system:authenticated" in answer["status"]["user"]["groups"]
    review["spec"]["token"] = "not-a-token"
    status, answer, _ = await call(server, "POST", path, review, "application/json")
    assert status == 201 and answer["status"]["authenticated"] is False, answer
    review["spec"] = {}
    status, answer, _ = await call(server, "POST", path, review, "application/json")
    assert status == 422 and "spec.token" in answer["message"], answer
    assert server.state is not None
    viewer = server.state.auth.mint_for("nobody")
    status, answer, _ = await call(server, "POST", path, review, "application/json", viewer)
    assert status == 403, answer
