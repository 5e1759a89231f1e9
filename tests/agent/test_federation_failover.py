"""The agent's federation endpoints: repeated --server or a kubeconfig with several clusters; a failing
endpoint moves the agent to the next; with every endpoint down calls fail (sync retries them) and
they work again, by themselves, once a replica answers."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from federation.apiserver.server import ApiServer, ServerConfig
from member_agent.cluster.gateway import NotFound, Unavailable
from member_agent.federation_failover import FailoverFederationAPI, endpoint_kubeconfigs
from tests.etcd_process import free_port


def _write(path: Path, config: dict) -> str:  # type: ignore[type-arg]
    path.write_text(yaml.safe_dump(config))
    return str(path)


def test_endpoints_from_servers_or_from_every_cluster(tmp_path: Path) -> None:
    config = {"apiVersion": "v1", "kind": "Config", "current-context": "c",
              "clusters": [{"name": "one", "cluster": {"server": "https://a:7443", "certificate-authority-data": "Q0E="}},
                           {"name": "two", "cluster": {"server": "https://b:7443"}}],
              "users": [{"name": "agent", "user": {"token": "t"}}],
              "contexts": [{"name": "c", "context": {"cluster": "two", "user": "agent"}}]}
    path = _write(tmp_path / "k", config)
    listed = endpoint_kubeconfigs(path, [])
    assert [c["clusters"][0]["cluster"]["server"] for c in listed] == ["https://b:7443", "https://a:7443"]
    assert all(c["users"] == config["users"] for c in listed)
    flagged = endpoint_kubeconfigs(path, ["https://x:1", "https://y:2"])
    assert [c["clusters"][0]["cluster"]["server"] for c in flagged] == ["https://x:1", "https://y:2"]
    bad = dict(config, **{"current-context": "nope"})
    with pytest.raises(ValueError, match="current-context 'nope' is not one of contexts"):
        endpoint_kubeconfigs(_write(tmp_path / "bad", bad), [])


async def test_a_dead_endpoint_moves_the_agent_to_the_next_and_back(tmp_path: Path) -> None:
    port = free_port()
    async with ApiServer(ServerConfig(data_dir=tmp_path / "api")) as live:
        path = _write(tmp_path / "agent.kubeconfig", live.kubeconfig("agent:cluster-a"))
        dead = f"http://127.0.0.1:{port}"
        api = await FailoverFederationAPI.from_kubeconfig(path, [dead, live.url])
        try:
            with pytest.raises(Unavailable):
                await api.get_cluster("cluster-a")  # the first endpoint is down
            assert api.current == live.url and api.failovers == 1
            with pytest.raises(NotFound):
                await api.get_cluster("cluster-a")  # answered by the second replica
            works, rv = await api.list_works("karmada-es-cluster-a")
            assert works == [] and int(rv) > 0
        finally:
            await api.close()


async def test_with_every_endpoint_down_the_agent_reconnects_by_itself(tmp_path: Path) -> None:
    config = ServerConfig(data_dir=tmp_path / "api", listen=f"127.0.0.1:{free_port()}")
    server = await ApiServer(config).start()
    path = _write(tmp_path / "agent.kubeconfig", server.kubeconfig("agent:cluster-a"))
    url = server.url
    await server.stop()
    api = await FailoverFederationAPI.from_kubeconfig(path, [url])
    try:
        for _ in range(2):
            with pytest.raises(Unavailable):
                await api.list_queues()
        async with ApiServer(config):  # the replica is back on the same address
            queues = await api.list_queues()
            assert [q["metadata"]["name"] for q in queues] == ["default"]
    finally:
        await api.close()
