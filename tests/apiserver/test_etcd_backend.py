"""What only the etcd backend does: several API replicas on one etcd, history from etcd itself,
lists paged at one revision, conflicts between replicas, and bad --etcd-* flags."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client, watch

from federation.apiserver.server import ApiServer, ServerConfig
from federation.client import ResourceClient, api_client_from_dict
from policies.kinds import lookup
from tests.apiserver.conftest import etcd_config
from tests.etcd_process import EtcdCluster

CM = lookup("v1", "ConfigMap")
REPO = Path(__file__).resolve().parents[2]


def _cm(name: str, value: str = "1") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"},
            "data": {"v": value}}


async def _replicas(stack: AsyncExitStack, cluster: EtcdCluster, tmp_path: Path, n: int,
                    **overrides: Any) -> list[tuple[ApiServer, ResourceClient]]:
    """``n`` API servers on one etcd prefix (one shared token file, as a real deployment has)."""
    shared = etcd_config(cluster)
    tokens = tmp_path / "tokens.csv"
    out = []
    for i in range(n):
        config = ServerConfig(data_dir=tmp_path / f"r{i}", etcd=shared, **overrides)
        if i:
            config.token_file = tokens
        server = await stack.enter_async_context(ApiServer(config))
        if i == 0:
            tokens.write_bytes((tmp_path / "r0" / "tokens.csv").read_bytes())
        api = await stack.enter_async_context(api_client_from_dict(server.kubeconfig()))
        out.append((server, ResourceClient(api)))
    return out


async def _events(rc: ResourceClient, n: int, **kwargs: Any) -> list[tuple[str, str, str]]:
    seen: list[tuple[str, str, str]] = []
    async with watch.Watch() as w:
        async for event in w.stream(rc.list, CM, "default", timeout_seconds=10, **kwargs):
            obj = event["object"]
            seen.append((event["type"], obj["metadata"]["name"], obj["metadata"]["resourceVersion"]))
            if len(seen) >= n:
                break
    return seen


async def test_a_write_through_one_replica_is_watched_in_order_on_another(
        etcd_cluster: EtcdCluster, tmp_path: Path) -> None:
    async with AsyncExitStack() as stack:
        (_, one), (_, two) = await _replicas(stack, etcd_cluster, tmp_path, 2)
        start = (await two.list(CM, "default"))["metadata"]["resourceVersion"]
        watching = asyncio.create_task(_events(two, 4, resource_version=start))
        acked = [await one.create(CM, _cm("a")), await one.create(CM, _cm("b"))]
        acked.append(await one.patch(CM, "a", {"data": {"v": "2"}}, "default"))
        acked.append(await one.delete(CM, "b", "default"))
        seen = await asyncio.wait_for(watching, 15)
        wanted = [("ADDED", "a"), ("ADDED", "b"), ("MODIFIED", "a"), ("DELETED", "b")]
        assert [(t, n) for t, n, _ in seen] == wanted
        assert [rv for _, _, rv in seen[:3]] == [o["metadata"]["resourceVersion"] for o in acked[:3]]
        assert [int(rv) for _, _, rv in seen] == sorted(int(rv) for _, _, rv in seen)
        got = await two.get(CM, "a", "default")  # read-your-writes across replicas
        assert got["data"] == {"v": "2"} and got["metadata"]["resourceVersion"] == seen[2][2]


async def test_two_replicas_updating_one_version_conflict(etcd_cluster: EtcdCluster, tmp_path: Path) -> None:
    async with AsyncExitStack() as stack:
        (_, one), (_, two) = await _replicas(stack, etcd_cluster, tmp_path, 2)
        made = await one.create(CM, _cm("race"))
        first = dict(made, data={"v": "one"})
        second = dict(made, data={"v": "two"})
        await one.replace(CM, first)
        with pytest.raises(client.ApiException) as conflict:
            await two.replace(CM, second)  # the same resourceVersion: etcd's compare fails
        assert conflict.value.status == 409 and "has been modified" in conflict.value.body
        assert (await two.get(CM, "race", "default"))["data"] == {"v": "one"}


async def test_watch_older_than_the_cache_is_replayed_from_etcd(etcd_cluster: EtcdCluster, tmp_path: Path) -> None:
    async with AsyncExitStack() as stack:
        [(_, one)] = await _replicas(stack, etcd_cluster, tmp_path, 1, watch_history=3)
        first = await one.create(CM, _cm("h0"))
        for i in range(1, 8):
            await one.create(CM, _cm(f"h{i}"))
        # The hub keeps 3 events; the other 4 come from etcd's own history, in order.
        seen = await _events(one, 7, resource_version=first["metadata"]["resourceVersion"])
        assert [n for _, n, _ in seen] == [f"h{i}" for i in range(1, 8)]


async def test_pages_of_one_list_are_read_at_one_revision(etcd_cluster: EtcdCluster, tmp_path: Path) -> None:
    async with AsyncExitStack() as stack:
        (_, one), (_, two) = await _replicas(stack, etcd_cluster, tmp_path, 2)
        for i in range(5):
            await one.create(CM, _cm(f"p{i}"))
        page = await one.list(CM, "default", limit=2)
        assert [o["metadata"]["name"] for o in page["items"]] == ["p0", "p1"]
        await one.delete(CM, "p3", "default")
        await one.patch(CM, "p2", {"data": {"v": "changed"}}, "default")
        await one.create(CM, _cm("p9"))
        rest = await two.list(CM, "default", limit=10, _continue=page["metadata"]["continue"])
        assert [o["metadata"]["name"] for o in rest["items"]] == ["p2", "p3", "p4"], "as at the first page"
        assert rest["items"][0]["data"] == {"v": "1"} and rest["metadata"]["resourceVersion"] == \
            page["metadata"]["resourceVersion"]


BAD_FLAGS = [
    (["--etcd-servers", "http://127.0.0.1:1"], "--etcd-servers: cannot use etcd at http://127.0.0.1:1"),
    (["--etcd-servers", "127.0.0.1:2379"], "--etcd-servers '127.0.0.1:2379': expected http://HOST:PORT"),
    (["--etcd-servers", "https://127.0.0.1:2379", "--etcd-cafile", "/nonexistent/ca.crt"],
     "--etcd-cafile /nonexistent/ca.crt: cannot read the file"),
    (["--etcd-servers", "https://127.0.0.1:2379"], "--etcd-cafile: required with https://"),
    (["--etcd-cafile", "x.crt"], "--etcd-cafile needs --etcd-servers"),
]


@pytest.mark.parametrize(("flags", "message"), BAD_FLAGS, ids=[m.split(":")[0] + str(i) for i, (_, m)
                                                               in enumerate(BAD_FLAGS)])
def test_a_bad_etcd_flag_fails_at_start_naming_it(tmp_path: Path, flags: list[str], message: str) -> None:
    from federation.cli import main

    with pytest.raises(SystemExit) as stopped:
        main(["serve", "--plain-http", "--listen", "127.0.0.1:0", "--data-dir", str(tmp_path), *flags])
    text = str(stopped.value.code)
    assert "\n" not in text and message in text
    assert not (tmp_path / "caldera.db").exists(), "nothing was started on SQLite instead"


@pytest.mark.slow
def test_the_cli_prints_one_line_for_an_unreachable_etcd(tmp_path: Path) -> None:
    run = subprocess.run([sys.executable, "-m", "federation", "serve", "--plain-http", "--listen", "127.0.0.1:0",
                          "--data-dir", str(tmp_path), *BAD_FLAGS[0][0]], capture_output=True, text=True,
                         timeout=60, cwd=REPO)
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert run.returncode == 1 and len(lines) == 1 and BAD_FLAGS[0][1] in lines[0], run.stderr


async def test_a_plain_etcd_given_certificates_names_the_tls_flags(etcd_cluster: EtcdCluster,
                                                                   tmp_path: Path) -> None:
    from federation.apiserver.etcd_client import EtcdConfigError
    from federation.apiserver.tls import ensure_self_signed

    cert, _key = ensure_self_signed(tmp_path / "tls", "127.0.0.1")
    https = [url.replace("http://", "https://") for url in etcd_cluster.urls]
    config = ServerConfig(data_dir=tmp_path / "d",
                          etcd=etcd_config(etcd_cluster, servers=https, cafile=cert, request_timeout=3))
    with pytest.raises(EtcdConfigError) as err:
        await ApiServer(config).start()
    assert str(err.value).startswith("--etcd-cafile/--etcd-certfile/--etcd-keyfile: cannot use etcd at https://")


async def test_the_compactor_claims_a_round_and_old_pages_then_expire(etcd_cluster: EtcdCluster,
                                                                      tmp_path: Path) -> None:
    from federation.apiserver.etcd_compactor import compact_once

    async with AsyncExitStack() as stack:
        (one_server, one), (two_server, _) = await _replicas(stack, etcd_cluster, tmp_path, 2)
        for i in range(3):
            await one.create(CM, _cm(f"k{i}"))
        page = await one.list(CM, "default", limit=1)
        version, seen = await compact_once(one_server.store, 0, 0)  # type: ignore[arg-type]
        assert version == 1, "round 0 claimed: nothing to compact yet, the revision noted"
        lost_version, _ = await compact_once(two_server.store, 0, seen)  # type: ignore[arg-type]
        assert lost_version == 1, "the other replica lost round 0 and learns the round"
        await one.create(CM, _cm("k9"))
        version, _ = await compact_once(one_server.store, version, seen)  # type: ignore[arg-type]
        assert version == 2
        with pytest.raises(client.ApiException) as gone:
            await one.list(CM, "default", limit=1, _continue=page["metadata"]["continue"])
        assert gone.value.status == 410 and "continue parameter is too old" in gone.value.body
