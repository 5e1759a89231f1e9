"""A 3-member etcd under the API: one member down changes nothing; two down is a clear 503 for
writes and reads (nothing acknowledged that was not committed); quorum back, everything is there."""

from __future__ import annotations

import time
from pathlib import Path

import aiohttp
import pytest

from federation.apiserver.server import ApiServer, ServerConfig
from tests.apiserver.conftest import etcd_config
from tests.apiserver.helpers import request
from tests.etcd_process import EtcdCluster, require_etcd

pytestmark = pytest.mark.slow
PATH = "/api/v1/namespaces/default/configmaps"


def _cm(name: str) -> str:
    return f'{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{name}"}},"data":{{"v":"1"}}}}'


async def _create_until_ok(server: ApiServer, name: str, timeout: float = 15.0) -> int:
    """Create ``name``, retrying 503s (a request in flight to a killed member); returns the 503 count."""
    deadline = time.monotonic() + timeout
    failures = 0
    while True:
        code, body = await request(server, "POST", PATH, body=_cm(name))
        if code == 201:
            return failures
        if code == 409:  # an earlier attempt that answered 503 did commit: allowed, never the reverse
            return failures
        assert code == 503 and time.monotonic() < deadline, (code, body)
        failures += 1


async def test_quorum_loss_is_a_clear_503_and_nothing_acknowledged_is_lost(tmp_path: Path) -> None:
    require_etcd()
    cluster = EtcdCluster(tmp_path / "etcd", size=3).start()
    try:
        config = ServerConfig(data_dir=tmp_path / "api",
                              etcd=etcd_config(cluster, request_timeout=2.0))
        async with ApiServer(config) as server:
            acked = ["before"]
            await _create_until_ok(server, "before")
            cluster.members[2].kill()
            for i in range(5):  # one member down: writes go on
                await _create_until_ok(server, f"one-down-{i}")
                acked.append(f"one-down-{i}")
            cluster.members[1].kill()
            code, body = await request(server, "POST", PATH, body=_cm("no-quorum"))
            assert code == 503 and body["reason"] == "ServiceUnavailable"
            assert body["message"].startswith("storage unavailable: etcd") and "nothing changed" in body["message"]
            code, body = await request(server, "GET", PATH + "/before")
            assert code == 503 and "etcd cannot serve the read" in body["message"], "reads say why"
            async with aiohttp.ClientSession() as session, session.get(server.url + "/readyz") as resp:
                assert resp.status == 503
            for member in cluster.members[1:]:
                cluster.restart(member)
            cluster.wait_healthy()
            await _create_until_ok(server, "after")
            acked.append("after")
            code, listed = await request(server, "GET", PATH)
            assert code == 200
            names = {o["metadata"]["name"] for o in listed["items"]}
            assert set(acked) <= names, f"acknowledged but missing: {set(acked) - names}"
    finally:
        cluster.stop()
