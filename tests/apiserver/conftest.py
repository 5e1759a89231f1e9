"""An in-process API server on a free loopback port, and kubernetes-asyncio clients for it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes_asyncio import client

from federation.apiserver.server import ApiServer, ServerConfig
from federation.client import api_client_from_dict

HERE = Path(__file__).parent
KIND_SAMPLES: list[dict[str, Any]] = yaml.safe_load((HERE / "data" / "kinds.yaml").read_text())


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[ApiServer]:
    async with ApiServer(ServerConfig(data_dir=tmp_path / "data")) as srv:
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
