"""etcd over its space quota (the NOSPACE alarm): writes are answered as kube-apiserver answers them,
500 with etcd's own words, nothing is stored, reads go on; once an operator frees the space
(compact, defragment, disarm the alarm) writes work again on the same API server."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from etcd3aio import Etcd3Client

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


async def free_space(urls: list[str], keys: list[bytes]) -> None:
    """What an operator does (etcd's maintenance guide): delete what is not needed (etcd takes deletes
    under the alarm), compact, defragment, disarm the alarm."""
    client = Etcd3Client([u.removeprefix("http://") for u in urls])
    await client.connect()
    try:
        assert client.kv is not None and client.maintenance is not None
        for key in keys:
            await client.kv.delete(key)
        revision = (await client.kv.get(b"\0")).header.revision
        await client.kv.compact(revision, physical=True)
        await client.maintenance.defragment()
        for alarm in (await client.maintenance.alarms()).alarms:
            await client.maintenance.alarm_deactivate(alarm.alarm, member_id=alarm.memberID)
    finally:
        await client.close()


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

        code, body = await request(server, "POST", CONFIGMAPS, body=configmap("refused"))
        assert (code, body["message"]) == (500, NOSPACE)
        code, body = await request(server, "GET", CONFIGMAPS)
        assert code == 200, body
        assert {item["metadata"]["name"] for item in body["items"]} == set(stored)
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
        assert {item["metadata"]["name"] for item in body["items"]} == set(stored[len(dropped):]) | {"after"}
