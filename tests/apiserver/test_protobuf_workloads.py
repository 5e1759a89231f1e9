"""Pods and Nodes in protobuf: round trips of realistic objects, bytes checked against an encoder
written here independently of the codec, unknown fields skipped, and the API's lists and watches."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest
import yaml

from federation.apiserver import protobuf
from federation.apiserver.protobuf.codec import CLASSES, MAGIC, envelope
from federation.apiserver.server import ApiServer

OBJECTS: list[dict[str, Any]] = yaml.safe_load(
    (Path(__file__).parent / "data" / "protobuf" / "workloads.yaml").read_text())
PB = protobuf.MEDIA_TYPE


@pytest.mark.parametrize("obj", OBJECTS, ids=[o["kind"] for o in OBJECTS])
def test_json_to_protobuf_to_json_is_the_same_object(obj: dict[str, Any]) -> None:
    wire = protobuf.encode(obj)
    assert wire is not None, f"{obj['kind']} has no protobuf form"
    assert protobuf.decode(wire) == obj


@pytest.mark.parametrize("kind", ["Pod", "Node"])
def test_lists_and_watch_frames_carry_the_objects(kind: str) -> None:
    items = [{k: v for k, v in o.items() if k not in ("apiVersion", "kind")} for o in OBJECTS if o["kind"] == kind]
    listed = {"apiVersion": "v1", "kind": f"{kind}List", "metadata": {"resourceVersion": "77"}, "items": items * 2}
    wire = protobuf.encode(listed)
    assert wire is not None and protobuf.decode(wire) == listed
    frame = protobuf.watch_frame("MODIFIED", {"apiVersion": "v1", "kind": kind, **items[0]})
    assert frame is not None and int.from_bytes(frame[:4], "big") == len(frame) - 4
    event = CLASSES["meta.WatchEvent"].FromString(CLASSES["runtime.Unknown"].FromString(frame[4 + len(MAGIC):]).raw)
    assert event.type == "MODIFIED"
    assert protobuf.decode(event.object.raw) == {"apiVersion": "v1", "kind": kind, **items[0]}


# --------------------------------------------------------------------------- an independent encoder


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        low, n = n & 0x7F, n >> 7
        out.append(low | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _len(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _str(number: int, text: str) -> bytes:
    return _len(number, text.encode())


def _int(number: int, value: int) -> bytes:
    return _varint(number << 3) + _varint(value)


def _payload(wire: bytes) -> bytes:
    return CLASSES["runtime.Unknown"].FromString(wire[len(MAGIC):]).raw


def test_a_small_node_is_byte_for_byte_what_the_field_numbers_say() -> None:
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
            "spec": {"unschedulable": True, "taints": [{"key": "gpu", "effect": "NoSchedule"}]},
            "status": {"capacity": {"cpu": "4"}}}
    # Node{1: ObjectMeta{1: name}, 2: NodeSpec{4: unschedulable, 5: Taint{1: key, 3: effect}},
    #      3: NodeStatus{1: map entry{1: key, 2: Quantity{1: string}}}}
    expected = (_len(1, _str(1, "n1"))
                + _len(2, _int(4, 1) + _len(5, _str(1, "gpu") + _str(3, "NoSchedule")))
                + _len(3, _len(1, _str(1, "cpu") + _len(2, _str(1, "4")))))
    wire = protobuf.encode(node)
    assert wire is not None and _payload(wire) == expected
    assert protobuf.decode(envelope("v1", "Node", expected)) == node


def test_embedded_structs_are_nested_on_the_wire_and_inline_in_json() -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
           "spec": {"containers": [{"name": "c", "env": [
               {"name": "A", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "k"}}}],
               "readinessProbe": {"httpGet": {"port": 8080}, "periodSeconds": 5}}],
               "volumes": [{"name": "v", "emptyDir": {}}]}}
    # ConfigMapKeySelector{1: LocalObjectReference{1: name}, 2: key}; Probe{1: Handler{2: HTTPGetAction
    # {2: IntOrString{1: type 0, 2: intVal}}}, 4: periodSeconds}; Volume{1: name, 2: VolumeSource{2: emptyDir}}
    selector = _len(1, _str(1, "cm")) + _str(2, "k")
    env = _str(1, "A") + _len(3, _len(3, selector))
    probe = _len(1, _len(2, _len(2, _int(1, 0) + _int(2, 8080)))) + _int(4, 5)
    container = _str(1, "c") + _len(7, env) + _len(11, probe)
    volume = _str(1, "v") + _len(2, _len(2, b""))
    expected = _len(1, _str(1, "p")) + _len(2, _len(1, volume) + _len(2, container))
    wire = protobuf.encode(pod)
    assert wire is not None and _payload(wire) == expected
    assert protobuf.decode(envelope("v1", "Pod", expected)) == pod


def test_fields_of_newer_kubernetes_are_skipped_not_refused() -> None:
    # PodSpec.schedulingGates (38) and Container.resizePolicy (23) came after the 1.21 numbers used here
    container = _str(1, "c") + _len(23, _str(1, "cpu") + _str(2, "NotRequired"))
    spec = _len(2, container) + _str(6, "ClusterFirst") + _len(38, _str(1, "wait-for-quota"))
    decoded = protobuf.decode(envelope("v1", "Pod", _len(1, _str(1, "p")) + _len(2, spec)))
    assert decoded["spec"] == {"containers": [{"name": "c"}], "dnsPolicy": "ClusterFirst"}


def test_a_pod_using_an_unmodelled_field_is_answered_in_json() -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
           "spec": {"containers": [{"name": "c"}], "schedulingGates": [{"name": "wait"}]}}
    assert protobuf.encode(pod) is None


# --------------------------------------------------------------------------- through the API


def _headers(server: ApiServer, **extra: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {server.admin_token}", **extra}


def _bare_pod(name: str) -> dict[str, Any]:
    pod = yaml.safe_load(yaml.safe_dump(OBJECTS[0]))
    pod["metadata"] = {"name": name, "namespace": "default", "labels": pod["metadata"]["labels"]}
    del pod["status"]
    return pod


@pytest.mark.member_mode  # pods are written by a member's API server only
async def test_pods_are_created_listed_and_watched_in_protobuf(server: ApiServer) -> None:
    accept = f"{PB},application/json"
    base = server.url + "/api/v1/namespaces/default/pods"
    async with aiohttp.ClientSession() as http:
        async with http.get(base + "?watch=true&timeoutSeconds=20", headers=_headers(server, Accept=accept)) as watch:
            assert watch.status == 200 and watch.headers["Content-Type"] == protobuf.WATCH_MEDIA_TYPE
            body = protobuf.encode(_bare_pod("pb-pod"))
            async with http.post(base, data=body, headers=_headers(server, **{"Content-Type": PB,
                                                                              "Accept": accept})) as made:
                answer = await made.read()
                assert made.status == 201, answer
                assert made.headers["Content-Type"] == PB
            created = protobuf.decode(answer)
            assert created["spec"]["containers"][0]["resources"] == _bare_pod("x")["spec"]["containers"][0]["resources"]
            size = int.from_bytes(await asyncio.wait_for(watch.content.readexactly(4), 15), "big")
            frame = await watch.content.readexactly(size)
        event = CLASSES["meta.WatchEvent"].FromString(CLASSES["runtime.Unknown"].FromString(frame[len(MAGIC):]).raw)
        assert event.type == "ADDED" and protobuf.decode(event.object.raw)["metadata"]["name"] == "pb-pod"
        async with http.get(base, headers=_headers(server, Accept=accept)) as listed:
            assert listed.headers["Content-Type"] == PB
            items = protobuf.decode(await listed.read())["items"]
        async with http.get(base, headers=_headers(server, Accept="application/json")) as as_json:
            assert [i["spec"] for i in orjson.loads(await as_json.read())["items"]] == [i["spec"] for i in items]


@pytest.mark.member_mode  # pods are written by a member's API server only
async def test_protobuf_watchers_share_one_frame_per_event(server: ApiServer, monkeypatch: pytest.MonkeyPatch) -> None:
    encoded: list[str] = []
    real = protobuf.watch_frame

    def counting(type_: str, obj: dict[str, Any]) -> bytes | None:
        encoded.append(f"{type_} {obj['metadata'].get('name')}")
        return real(type_, obj)

    monkeypatch.setattr(protobuf, "watch_frame", counting)
    accept = f"{PB},application/json"
    base = server.url + "/api/v1/namespaces/default/pods"
    async with aiohttp.ClientSession() as http:
        watch = [await http.get(base + "?watch=true&timeoutSeconds=20", headers=_headers(server, Accept=accept))
                 for _ in range(3)]
        async with http.post(base, data=protobuf.encode(_bare_pod("shared")),
                             headers=_headers(server, **{"Content-Type": PB})) as made:
            assert made.status == 201
        frames = []
        for resp in watch:
            size = int.from_bytes(await asyncio.wait_for(resp.content.readexactly(4), 15), "big")
            frames.append(await resp.content.readexactly(size))
            resp.close()
    assert frames[0] == frames[1] == frames[2]
    assert encoded.count("ADDED shared") == 1  # three watchers, one encoding
