"""An in-process API server running only the JobFlow controller, and helpers to drive it."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
import yaml

from federation.apiserver.server import ApiServer, ServerConfig
from federation.cli.compose import FederationServer
from federation.client import ResourceClient, api_client_from_dict
from federation.controllers.jobflow import FLOWS, JOBS, TEMPLATES, jobflow_controller

HERE = Path(__file__).parent
REPO = HERE.parents[1]
SEED_FLOW: dict[str, Any] = yaml.safe_load((REPO / "examples" / "seed" / "jobflow-ml-pipeline.yaml").read_text())
TEMPLATE_DOCS: list[dict[str, Any]] = list(yaml.safe_load_all((HERE / "data" / "ml-pipeline-templates.yaml").read_text()))
T = TypeVar("T")


async def eventually(probe: Callable[[], Awaitable[T | None]], what: str, timeout: float = 15.0,
                     describe: Callable[[], Any] | None = None) -> T:
    """Poll ``probe`` until it returns something truthy (no fixed sleeps waiting for state)."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = await probe()
        if last:
            return last
        await asyncio.sleep(0.05)
    if describe is not None:
        last = describe()
    raise AssertionError(f"timed out waiting for {what}; last seen: {last!r}")


class Flows:
    """Create flows and templates, fake Job phases, read what the controller did."""

    def __init__(self, server: ApiServer, rc: ResourceClient) -> None:
        self.server = server
        self.rc = rc

    async def templates(self, names: list[str] | None = None) -> None:
        for doc in TEMPLATE_DOCS:
            if names is None or doc["metadata"]["name"] in names:
                await self.rc.create(TEMPLATES, doc, "default")

    async def flow(self, body: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
        body = yaml.safe_load(yaml.safe_dump(body or SEED_FLOW))
        body["spec"].update(spec)
        created: dict[str, Any] = await self.rc.create(FLOWS, body, "default")
        return created

    def jobs(self, flow: str = "ml-pipeline") -> dict[str, dict[str, Any]]:
        items = self.server.store.list("batch.volcano.sh/jobs", "default")
        return {j["metadata"]["name"]: j for j in items
                if (j["metadata"].get("labels") or {}).get("volcano.sh/createdByJobFlow") == f"default.{flow}"}

    def status(self, flow: str = "ml-pipeline") -> dict[str, Any]:
        obj = self.server.store.get("flow.volcano.sh/jobflows", "default", flow)
        return dict((obj or {}).get("status") or {})

    async def set_phase(self, job: str, phase: str) -> None:
        await self.rc.patch(JOBS, job, {"status": {"state": {"phase": phase}}}, "default", subresource="status")

    def events(self, reason: str) -> list[dict[str, Any]]:
        return [e for e in self.server.store.list("events", "default") if e.get("reason") == reason]


@pytest.fixture
async def flows(tmp_path: Path) -> AsyncIterator[Flows]:
    async with FederationServer(ServerConfig(data_dir=tmp_path / "data"), controllers=[jobflow_controller]) as server, \
            api_client_from_dict(server.kubeconfig()) as api:
        yield Flows(server, ResourceClient(api))
