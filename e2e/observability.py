"""Helpers for the observability e2e tests: a demo system with a real Prometheus, Prometheus's HTTP
API, and headless Chromium driven by Playwright (the system's ``/usr/bin/chromium``, never a
downloaded browser)."""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any, Optional, TypeVar

from e2e.harness import AGENT_ARGS, SPEED, api, seed_clusters
from federation.demo.manifests import NAMESPACE, demo_plan
from federation.demo.processes import ClusterSpec, System
from federation.demo.prometheus import secure_agent_metrics

CHROMIUM = shutil.which("chromium") or ("/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None)
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
#: fast cluster health so a killed agent turns its cluster not Ready within seconds (docs/status.md)
SERVE_ARGS = ["--cluster-lease-grace", "4", "--cluster-failover-grace", "600", "--cluster-success-threshold", "1",
              "--cluster-monitor-period", "1"]
T = TypeVar("T")


def demo_clusters(data_dir: Path) -> list[ClusterSpec]:
    """The seed's clusters, each agent on fixed ports (Prometheus's targets survive a restart) and
    serving /metrics over HTTPS with token review, as ``caldera demo --prometheus`` runs them."""
    clusters = seed_clusters()
    secure_agent_metrics(clusters, data_dir)
    return clusters


def start_system(data_dir: Path, serve_args: tuple[str, ...] = ()) -> System:
    """A federation (with ``serve_args`` besides the defaults) and the seed's two agents, with fast cluster health."""
    system = System(data_dir, demo_clusters(data_dir), speed=SPEED, serve_args=[*SERVE_ARGS, *serve_args],
                    agent_args=list(AGENT_ARGS))
    return system.start()


def apply_demo(system: System) -> list[str]:
    """Apply the demo's objects (the seed's queues, policy and jobs); returns the names of its Jobs."""
    plan = demo_plan(cluster_names=[c.name for c in system.clusters])
    asyncio.run(_apply(system, plan.manifests))
    return sorted(name for kind, name in plan.expected if kind == "Job")


async def _apply(system: System, manifests: list[dict[str, Any]]) -> None:
    from federation.cli.apply import apply_one

    async with api(system) as rc:
        for manifest in manifests:
            await apply_one(rc, manifest, argparse.Namespace(namespace=NAMESPACE))


def poll(probe: Callable[[], Optional[T]], timeout: float, what: str, system: Optional[System] = None) -> T:
    """Call ``probe`` until it returns something truthy; fail naming ``what`` and the last value."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while True:
        try:
            last = probe()
        except OSError as exc:  # a server still starting
            last = exc
        if last and not isinstance(last, Exception):
            return last  # type: ignore[no-any-return]
        died = system.unexpected_exits() if system is not None else []
        if died:
            raise AssertionError(f"while waiting for {what}: " + "\n".join(died))
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}; last seen: {last!r}")
        time.sleep(0.25)


def prom_get(base: str, path: str, **params: str) -> Any:
    """GET Prometheus's HTTP API; the ``data`` of a successful answer (an error raises with its message)."""
    url = f"{base}{path}" + (f"?{urllib.parse.urlencode(params)}" if params else "")
    try:
        with urllib.request.urlopen(url, timeout=10) as response:  # noqa: S310 - loopback only
            body = json.load(response)
    except urllib.error.HTTPError as exc:  # e.g. 503 while Prometheus starts; close the connection it holds
        with exc:
            raise OSError(f"{url}: HTTP {exc.code}: {exc.read()[:300]!r}") from None
    if body.get("status") != "success":
        raise AssertionError(f"{url}: {body.get('errorType')}: {body.get('error')}")
    return body["data"]


def query(base: str, expr: str) -> list[dict[str, Any]]:
    result: list[dict[str, Any]] = prom_get(base, "/api/v1/query", query=expr)["result"]
    return result


def alerts(base: str, name: str) -> list[dict[str, Any]]:
    return [a for a in prom_get(base, "/api/v1/alerts")["alerts"] if a["labels"].get("alertname") == name]


def launch_chromium(playwright: Any) -> Any:
    return playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True, timeout=60_000)
