"""Every hostile request of issue 13 answers as kube-apiserver does, with a Status naming the field,
within a bounded time, and changes nothing in the store (cases: ``hostile_cases.py``)."""

from __future__ import annotations

import asyncio
import io
from typing import Any

import aiohttp
import orjson
import pytest

from federation.apiserver.server import ApiServer
from tests.apiserver.hostile_cases import CASES, JOBS, QUEUES, job, queue

#: A refused watch answers at once; a hang would be a bug, so the client gives up long before pytest.
CLIENT_TIMEOUT = 10.0


def encode(body: Any) -> bytes | None:
    if body is None or isinstance(body, bytes):
        return body
    return orjson.dumps(body)


async def send(server: ApiServer, method: str, path: str, body: Any = None,
               content_type: str | None = "application/json") -> tuple[int, Any]:
    headers = {"Authorization": f"Bearer {server.admin_token}"}
    data = encode(body)
    if content_type is not None and data is not None:
        headers["Content-Type"] = content_type
    timeout = aiohttp.ClientTimeout(total=CLIENT_TIMEOUT)
    async with aiohttp.ClientSession(timeout=timeout, skip_auto_headers=["Content-Type"]) as session, \
            session.request(method, server.url + path, data=None if data is None else io.BytesIO(data),
                            headers=headers) as resp:
        raw = await resp.read()
        first = raw.split(b"\n", 1)[0]
        try:
            return resp.status, orjson.loads(first or b"null")
        except orjson.JSONDecodeError:
            return resp.status, raw.decode(errors="replace")


def snapshot(server: ApiServer) -> tuple[int, list[Any]]:
    return server.store.rv, sorted((r, orjson.dumps(o)) for r, o in server.store.iter_all())


@pytest.mark.parametrize("case", [pytest.param(c, marks=pytest.mark.member_mode) if c["id"].startswith("podgroup-")
                                  else c for c in CASES], ids=lambda c: c["id"])
async def test_hostile_request_is_refused_like_kube(server: ApiServer, case: dict[str, Any]) -> None:
    for path, obj in case.get("setup", []):
        status, created = await send(server, "POST", path, obj)
        assert status == 201, created
    before = snapshot(server)
    status, body = await asyncio.wait_for(
        send(server, case["method"], case["path"], case.get("body"), case.get("type", "application/json")),
        CLIENT_TIMEOUT + 5)
    assert status == case["code"], body
    assert isinstance(body, dict) and body["kind"] == "Status", body
    assert body["code"] == case["code"] and body["reason"] == case["reason"], body
    if "says" in case:
        assert case["says"] in body["message"], body["message"]
    if "field" in case:
        fields = [c.get("field") for c in body.get("details", {}).get("causes", [])]
        assert case["field"] in fields, (fields, body["message"])
    assert snapshot(server) == before, "a refused request must not change the store"


async def test_accepted_neighbours_of_the_edges(server: ApiServer) -> None:
    """The values just inside each limit are accepted (the rules refuse only what kube refuses)."""
    pc = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"}, "value": 10}
    assert (await send(server, "POST", "/apis/scheduling.k8s.io/v1/priorityclasses", pc))[0] == 201
    gpu = {"limits": {"nvidia.com/gpu": 8}, "requests": {"nvidia.com/gpu": "8"}}
    good = job("ok", replicas=2**31 - 1, resources=gpu, priorityClassName="high")
    good["metadata"]["labels"] = {"example.com/app": "a" * 63, "empty": ""}
    good["metadata"]["annotations"] = {"note": "x" * 200_000}
    status, body = await send(server, "POST", JOBS, good)
    assert status == 201, body
    assert (await send(server, "POST", JOBS, job("system", priorityClassName="system-cluster-critical")))[0] == 201
    status, _ = await send(server, "POST", QUEUES, queue("big", capability={"cpu": "9223372036854775807m"}))
    assert status == 201


async def test_continue_token_round_trip_and_expiry(server: ApiServer) -> None:
    for index in range(3):
        assert (await send(server, "POST", QUEUES, queue(f"q{index}")))[0] == 201
    status, page = await send(server, "GET", f"{QUEUES}?limit=2")
    assert status == 200 and len(page["items"]) == 2
    token = page["metadata"]["continue"]
    status, rest = await send(server, "GET", f"{QUEUES}?limit=2&continue={token}")
    assert status == 200 and [q["metadata"]["name"] for q in rest["items"]] == ["q1", "q2"]  # after default, q0
    assert server.state is not None
    server.state.hub.floor = server.store.rv + 1  # the history no longer reaches the token's list
    if server.store.keeps_history:  # etcd reads the page at the token's revision until it is compacted
        assert (await send(server, "POST", QUEUES, queue("q9")))[0] == 201
        await server.store.conn.compact(server.store.rv)  # type: ignore[attr-defined]
    status, body = await send(server, "GET", f"{QUEUES}?limit=2&continue={token}")
    assert status == 410 and body["reason"] == "Expired", body


async def test_watch_with_valid_timeout_ends(server: ApiServer) -> None:
    status, _ = await asyncio.wait_for(send(server, "GET", f"{QUEUES}?watch=true&timeoutSeconds=1"), 8)
    assert status == 200
