"""An in-process API server running the placement and dispatch controllers with short timers."""

from __future__ import annotations

import asyncio
import copy
import functools
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
import yaml
from kubernetes_asyncio import client as k8s

from federation.apiserver.server import ApiServer, ServerConfig
from federation.cli.compose import FederationServer
from federation.client import ResourceClient, api_client_from_dict
from federation.controllers.common import ControllerOptions
from federation.controllers.dispatch import dispatch_controller
from federation.controllers.placement import placement_controller
from policies.kinds import lookup

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).parent / "data"
SEED = ROOT / "examples" / "seed"
T = TypeVar("T")

FAST = ControllerOptions(workers=2, reserve_timeout_seconds=60, retry_base_seconds=0.3, retry_max_seconds=2.0,
                         watch_timeout=30, request_timeout=10.0)



GPU_NODE_FREE = {"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": "8", "pods": "110"}


def ready_cluster(name: str, count: int, free: dict[str, str]) -> dict[str, Any]:
    """A Pull-mode Cluster that is Ready and reports ``count`` nodes with ``free`` each."""
    return {"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster", "metadata": {"name": name},
            "spec": {"syncMode": "Pull"},
            "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "ClusterReady",
                                       "lastTransitionTime": "2026-12-01T00:00:00Z"}],
                       "nodeShapes": [{"count": count, "free": dict(free)}]}}

def load(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict)]


class Fed:
    """Test-side client: apply objects, read them, poll until a condition holds."""

    def __init__(self, server: ApiServer, api: k8s.ApiClient) -> None:
        self.server = server
        self.api = api
        self.rc = ResourceClient(api, 10.0)

    async def apply(self, obj: dict[str, Any], namespace: str = "default") -> dict[str, Any]:
        obj = copy.deepcopy(obj)
        info = lookup(obj["apiVersion"], obj["kind"])
        status = obj.pop("status", None)
        ns = (obj.get("metadata") or {}).get("namespace") or namespace if info.namespaced else None
        created: dict[str, Any] = await self.rc.create(info, obj, ns)
        if status is not None and info.has_status:
            created = await self.rc.patch(info, obj["metadata"]["name"], {"status": status}, ns, "status")
        return created

    async def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        try:
            found: dict[str, Any] = await self.rc.get(lookup(api_version, kind), name, namespace)
            return found
        except k8s.ApiException as err:
            if err.status == 404:
                return None
            raise

    async def list(self, api_version: str, kind: str, namespace: str | None = None,
                   label_selector: str | None = None) -> list[dict[str, Any]]:
        listed = await self.rc.list(lookup(api_version, kind), namespace, label_selector=label_selector)
        return list(listed.get("items") or [])

    async def patch(self, api_version: str, kind: str, name: str, patch: dict[str, Any], namespace: str | None = None,
                    subresource: str = "") -> dict[str, Any]:
        patched: dict[str, Any] = await self.rc.patch(lookup(api_version, kind), name, patch, namespace, subresource)
        return patched

    async def delete(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> None:
        await self.rc.delete(lookup(api_version, kind), name, namespace)

    async def rb(self, job: str, namespace: str = "default") -> dict[str, Any] | None:
        return await self.get("work.karmada.io/v1alpha2", "ResourceBinding", f"{job}-job", namespace)

    async def works(self, job: str, namespace: str = "default") -> dict[str, dict[str, Any]]:
        items = await self.list("work.karmada.io/v1alpha1", "Work", label_selector=f"caldera.io/job={namespace}.{job}")
        return {w["metadata"]["namespace"][len("karmada-es-"):]: w for w in items}

    async def gang(self, cluster: str, job: str, generation: int, phase: str, namespace: str = "default") -> None:
        """Answer for a share as the cluster's agent would."""
        await self.patch("work.karmada.io/v1alpha1", "Work", f"{namespace}.{job}",
                         {"status": {"gang": {"generation": generation, "phase": phase, "reason": "test agent"}}},
                         f"karmada-es-{cluster}", "status")

    async def events(self, name: str, namespace: str = "default") -> list[dict[str, Any]]:
        items = await self.list("v1", "Event", namespace)
        return [e for e in items if (e.get("involvedObject") or {}).get("name") == name]


async def until(probe: Callable[[], Awaitable[T | None]], what: str, timeout: float = 10.0) -> T:
    """Poll ``probe`` until it returns something truthy; fail naming ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = await probe()
        if last:
            return last
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out after {timeout}s waiting for {what} (last: {last!r})")


def controllers(options: ControllerOptions) -> list[Any]:
    return [functools.partial(placement_controller, options=options),
            functools.partial(dispatch_controller, options=options)]


@pytest.fixture
def options() -> ControllerOptions:
    return copy.copy(FAST)


@pytest.fixture
async def fed(tmp_path: Path, options: ControllerOptions) -> AsyncIterator[Fed]:
    async with FederationServer(ServerConfig(data_dir=tmp_path / "data"), controllers=controllers(options)) as server, \
            api_client_from_dict(server.kubeconfig()) as api:
        yield Fed(server, api)
