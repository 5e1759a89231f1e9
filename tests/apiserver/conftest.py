"""An in-process API server on a free loopback port, and kubernetes-asyncio clients for it.

The ``server`` fixture runs every test that uses it twice: on the SQLite store and on etcd (one
etcd process for the session on a free loopback port, a fresh key prefix per test). Without the
``etcd`` binary the etcd half skips and says why.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes_asyncio import client

from federation.apiserver.etcd_client import EtcdConfig
from federation.apiserver.server import ApiServer, ServerConfig
from federation.client import api_client_from_dict
from tests.etcd_process import EtcdCluster, require_etcd

HERE = Path(__file__).parent
KIND_SAMPLES: list[dict[str, Any]] = yaml.safe_load((HERE / "data" / "kinds.yaml").read_text())


BACKENDS = ["sqlite", "etcd"]


@pytest.fixture(scope="session")
def etcd_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EtcdCluster]:
    require_etcd()
    cluster = EtcdCluster(tmp_path_factory.mktemp("etcd")).start()
    yield cluster
    cluster.stop()


def etcd_config(cluster: EtcdCluster, **overrides: Any) -> EtcdConfig:
    """A fresh key prefix in the session's etcd: each test sees an empty store."""
    settings: dict[str, Any] = {"servers": cluster.urls, "prefix": f"/caldera-test/{uuid.uuid4().hex[:12]}",
                                "compaction_interval": 0}
    settings.update(overrides)
    return EtcdConfig(**settings)


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def server_config(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> ServerConfig:
    config = ServerConfig(data_dir=tmp_path / "data")
    # pods and PodGroups are read-only at a federation (docs/protocol.md "Member pods"): tests that write
    # them are marked member_mode and run against a member-cluster stand-in
    config.member_mode = request.node.get_closest_marker("member_mode") is not None
    if backend == "etcd":
        config.etcd = etcd_config(request.getfixturevalue("etcd_cluster"))
    return config


@pytest.fixture
async def server(server_config: ServerConfig) -> AsyncIterator[ApiServer]:
    async with ApiServer(server_config) as srv:
        yield srv


@pytest.fixture
async def api(server: ApiServer) -> AsyncIterator[client.ApiClient]:
    async with api_client_from_dict(server.kubeconfig()) as api_client:
        yield api_client


@pytest.fixture
def custom(api: client.ApiClient) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(api)


@pytest.fixture
def core(api: client.ApiClient) -> client.CoreV1Api:
    return client.CoreV1Api(api)
