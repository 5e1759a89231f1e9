"""etcd over its space quota (the NOSPACE alarm): writes are answered as kube-apiserver answers them,
500 with etcd's own words, nothing after the write that tripped the alarm is stored, reads go on;
once an operator frees the space (compact, defragment, disarm the alarm) writes work again on the
same API server."""

from __future__ import annotations

import asyncio
import base64
import json
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from federation.apiserver.etcd_client import NOSPACE, EtcdConfig
from federation.apiserver.server import ApiServer, ServerConfig
from tests.apiserver.helpers import request
from tests.etcd_process import EtcdCluster, require_etcd

CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
QUOTA = 2 * 1024 * 1024  # bytes: small enough to fill in a second, large enough for the server's start-up objects


@pytest.fixture
def small_etcd(tmp_path: Path) -> Iterator[EtcdCluster]:
    require_etcd()
    cluster = EtcdCluster(tmp_path / "etcd", extra_args=[f"--quota-backend-bytes={QUOTA}"]).start()
    try:
        yield cluster
    finally:
        cluster.stop()


def configmap(name: str) -> str:
    return json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
                       "data": {"payload": uuid.uuid4().hex * 2000}})  # 64 KiB, incompressible enough


def _gateway(url: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
    """One call to etcd's JSON gateway (what etcdctl's maintenance commands send over gRPC)."""
    request = urllib.request.Request(url + path, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as resp:  # noqa: S310 (loopback)
        answer: dict[str, Any] = json.loads(resp.read() or b"{}")
        return answer


def _b64(key: bytes) -> str:
    return base64.b64encode(key).decode()


def free_space_sync(url: str, keys: list[bytes]) -> None:
    """What an operator does (etcd's maintenance guide): delete what is not needed (etcd takes deletes
    under the alarm), compact, defragment, disarm the alarm."""
    for key in keys:
        _gateway(url, "/v3/kv/deleterange", {"key": _b64(key)})
    revision = _gateway(url, "/v3/kv/range", {"key": _b64(b"\0")})["header"]["revision"]
    _gateway(url, "/v3/kv/compaction", {"revision": revision, "physical": True})
    _gateway(url, "/v3/maintenance/defragment", {})
    for alarm in _gateway(url, "/v3/maintenance/alarm", {"action": "GET"}).get("alarms") or []:
        _gateway(url, "/v3/maintenance/alarm", {"action": "DEACTIVATE", "memberID": alarm["memberID"],
                                                "alarm": alarm["alarm"]})
    left = _gateway(url, "/v3/maintenance/alarm", {"action": "GET"}).get("alarms") or []
    assert not left, f"alarms still raised: {left}"


async def free_space(urls: list[str], keys: list[bytes]) -> None:
    await asyncio.to_thread(free_space_sync, urls[0], keys)


@pytest.mark.slow
async def test_nospace_is_a_500_with_etcds_words_reads_go_on_and_writes_return(
        small_etcd: EtcdCluster, tmp_path: Path) -> None:
    config = ServerConfig(data_dir=tmp_path / "data",
                          etcd=EtcdConfig(servers=small_etcd.urls, prefix="/nospace", compaction_interval=0,
                                          request_timeout=15))  # fsyncs of 64 KiB on 2 loaded cores
    async with ApiServer(config) as server:
        stored: list[str] = []
        for i in range(200):
            code, body = await request(server, "POST", CONFIGMAPS, body=configmap(f"fill-{i}"))
            if code != 201:
                break
            stored.append(f"fill-{i}")
        else:
            pytest.fail(f"etcd took 200 writes of 64 KiB under a {QUOTA}-byte quota")
        assert code == 500, body
        assert body["message"] == NOSPACE and body["reason"] == "" and body["kind"] == "Status", body
        # etcd checks its quota twice: before proposing (nothing is committed) and when applying, where
        # the write that crosses the quota is applied and then answered NOSPACE (its quota applier). So
        # the one write that tripped the alarm may be stored although it was refused; none after it is.
        tripped = f"fill-{i}"

        code, body = await request(server, "POST", CONFIGMAPS, body=configmap("refused"))
        assert (code, body["message"]) == (500, NOSPACE)
        code, body = await request(server, "GET", CONFIGMAPS)
        assert code == 200, body
        listed = {item["metadata"]["name"] for item in body["items"]}
        assert listed - {tripped} == set(stored), sorted(listed ^ set(stored))
        code, body = await request(server, "GET", f"{CONFIGMAPS}/{stored[0]}")
        assert code == 200, body
        code, text = await request(server, "GET", "/metrics")
        assert "apiserver_storage_failed_commits_total 2.0" in str(text)

        dropped = stored[: len(stored) // 2]
        await free_space(small_etcd.urls, [f"/nospace/configmaps/default/{name}".encode() for name in dropped])
        code, body = await request(server, "POST", CONFIGMAPS, body=configmap("after"))
        assert code == 201, body
        code, body = await request(server, "GET", f"{CONFIGMAPS}/refused")
        assert code == 404, body
        code, body = await request(server, "GET", CONFIGMAPS)
        kept = set(stored[len(dropped):]) | {"after"} | (listed & {tripped})
        assert {item["metadata"]["name"] for item in body["items"]} == kept
