"""Protobuf through the API: request bodies, negotiated answers, lists and watch frames."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import orjson

from federation.apiserver import protobuf
from federation.apiserver.protobuf.codec import CLASSES, MAGIC, envelope
from federation.apiserver.server import ApiServer

PB = protobuf.MEDIA_TYPE
KUBECTL_ACCEPT = f"{PB},application/json"


def _headers(server: ApiServer, **extra: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {server.admin_token}", **extra}


async def _send(server: ApiServer, method: str, path: str, body: bytes | None = None,
                **headers: str) -> tuple[int, str, bytes]:
    async with aiohttp.ClientSession() as http, http.request(
            method, server.url + path, data=body, headers=_headers(server, **headers)) as resp:
        return resp.status, resp.headers.get("Content-Type", ""), await resp.read()


async def test_create_in_protobuf_answers_in_protobuf(server: ApiServer) -> None:
    ns = protobuf.encode({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}})
    status, media, body = await _send(server, "POST", "/api/v1/namespaces", ns,
                                      **{"Content-Type": PB, "Accept": KUBECTL_ACCEPT})
    assert status == 201, body
    assert media == PB
    created = protobuf.decode(body)
    assert created["metadata"]["name"] == "team-a" and created["metadata"]["uid"]
    # JSON clients see the same object
    status, media, body = await _send(server, "GET", "/api/v1/namespaces/team-a", Accept="application/json")
    assert status == 200 and media.startswith("application/json")
    assert orjson.loads(body)["metadata"]["uid"] == created["metadata"]["uid"]


async def test_list_in_protobuf(server: ApiServer) -> None:
    for name in ("cm-a", "cm-b"):
        cm = protobuf.encode({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
                              "data": {"k": name}})
        status, _, body = await _send(server, "POST", "/api/v1/namespaces/default/configmaps", cm,
                                      **{"Content-Type": PB})
        assert status == 201, body
    status, media, body = await _send(server, "GET", "/api/v1/namespaces/default/configmaps", Accept=KUBECTL_ACCEPT)
    assert status == 200 and media == PB
    listed = protobuf.decode(body)
    assert listed["kind"] == "ConfigMapList" and listed["metadata"]["resourceVersion"]
    assert sorted(i["data"]["k"] for i in listed["items"]) == ["cm-a", "cm-b"]


async def test_custom_kinds_stay_json_and_protobuf_only_clients_get_406(server: ApiServer) -> None:
    status, media, _ = await _send(server, "GET", "/apis/scheduling.volcano.sh/v1beta1/queues", Accept=KUBECTL_ACCEPT)
    assert status == 200 and media.startswith("application/json")
    status, _, body = await _send(server, "GET", "/apis/scheduling.volcano.sh/v1beta1/queues", Accept=PB)
    assert status == 406, body
    assert orjson.loads(body)["reason"] == "NotAcceptable"


async def test_a_bad_protobuf_body_is_a_400_and_stores_nothing(server: ApiServer) -> None:
    before = await _send(server, "GET", "/api/v1/namespaces", Accept="application/json")
    names_before = sorted(i["metadata"]["name"] for i in orjson.loads(before[2])["items"])
    truncated = b"\x0a\x10\x0a\x06sneaky"  # metadata claims 16 bytes, holds 8
    for body in (b"not protobuf", MAGIC + b"\x0a\xff", envelope("v1", "Namespace", truncated)):
        status, _, answer = await _send(server, "POST", "/api/v1/namespaces", body, **{"Content-Type": PB})
        assert status == 400, answer
        assert orjson.loads(answer)["reason"] == "BadRequest"
    after = await _send(server, "GET", "/api/v1/namespaces", Accept="application/json")
    assert sorted(i["metadata"]["name"] for i in orjson.loads(after[2])["items"]) == names_before


async def _read_frames(resp: aiohttp.ClientResponse, count: int) -> list[dict[str, Any]]:
    frames = []
    while len(frames) < count:
        size = int.from_bytes(await resp.content.readexactly(4), "big")
        frame = await resp.content.readexactly(size)
        unknown = CLASSES["runtime.Unknown"].FromString(frame[len(MAGIC):])
        assert (unknown.typeMeta.apiVersion, unknown.typeMeta.kind) == ("v1", "WatchEvent")
        event = CLASSES["meta.WatchEvent"].FromString(unknown.raw)
        frames.append({"type": event.type, "object": protobuf.decode(event.object.raw)})
    return frames


async def test_watch_streams_length_prefixed_protobuf_frames(server: ApiServer) -> None:
    url = server.url + "/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=20"
    async with aiohttp.ClientSession() as http, http.get(url, headers=_headers(server, Accept=KUBECTL_ACCEPT)) as resp:
        assert resp.status == 200
        assert resp.headers["Content-Type"] == protobuf.WATCH_MEDIA_TYPE
        cm = protobuf.encode({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "watched"},
                              "data": {"a": "1"}})
        created = await _send(server, "POST", "/api/v1/namespaces/default/configmaps", cm, **{"Content-Type": PB})
        assert created[0] == 201
        frames = await asyncio.wait_for(_read_frames(resp, 1), 15)
    assert frames[0]["type"] == "ADDED"
    assert frames[0]["object"]["metadata"]["name"] == "watched" and frames[0]["object"]["data"] == {"a": "1"}
