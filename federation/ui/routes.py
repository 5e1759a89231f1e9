"""The dashboard's HTTP side: the page shell, its static files and the two JSON documents it reads.

Paths (docs/dashboard.md):

* ``GET /ui``, ``GET /ui/jobs/{namespace}/{name}``: the page. Without a valid ``Authorization:
  Bearer`` header it answers **401** (``WWW-Authenticate: Bearer``) with the same page, which
  shows a token form; a browser never sends that header on navigation, so a browser always gets
  the 401 shell and signs in there. The page holds no data and no secret.
* ``GET /ui/static/{file}``: the page's JavaScript and CSS (package data, no build step).
* ``GET /ui/api/overview``, ``GET /ui/api/jobs/{namespace}/{name}``: what the page shows. These
  go through the API server's authentication like every API path; any valid token (a viewer's
  suffices) may read them. The page sends the token it keeps in ``sessionStorage``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from datetime import UTC, datetime
from importlib import resources
from typing import Any

import orjson
from aiohttp import web

from federation import metrics
from federation.status_api import (
    BINDINGS,
    CLUSTERS,
    JOBS,
    LEASE_NAMESPACE,
    LEASES,
    ListObjects,
    job_entry,
    status_document,
)
from federation.ui import data
from federation.ui.history import GpuHistory, gpu_totals
from federation.ui.paths import JOB_PAGE_PREFIX, PAGE_PATHS
from federation.ui.prometheus import PrometheusGpuSource
from policies.kinds import lookup

EVENTS = lookup("v1", "Event")
WORKS = lookup("work.karmada.io/v1alpha1", "Work")
PODS = lookup("v1", "Pod")
QUEUES = lookup("scheduling.volcano.sh/v1beta1", "Queue")
STATIC = {"app.js": "application/javascript", "app.css": "text/css"}


def _static(name: str) -> bytes:
    return (resources.files("federation.ui") / "static" / name).read_bytes()


def _json(doc: Any) -> web.Response:
    return web.Response(body=orjson.dumps(doc), content_type="application/json",
                        headers={"Cache-Control": "no-store"})


def add_routes(app: web.Application, authenticate: Callable[[str], object | None], list_objects: ListObjects,
               clock: Callable[[], datetime] = lambda: datetime.now(UTC),
               prometheus_url: str | None = None) -> None:
    """Mount the dashboard. The API server passes its token check (``authenticate(token)``: the user,
    or None) and its registry's lister (federation/apiserver/app.py), so this module needs no import
    of the API server. With ``prometheus_url`` the GPU chart reads Prometheus (federation/ui/prometheus.py)
    and falls back to the server's own samples when it cannot."""
    page = _static("index.html")
    history = GpuHistory()
    prometheus = PrometheusGpuSource(prometheus_url) if prometheus_url else None

    async def gpu_history() -> dict[str, Any]:
        points = await prometheus.points(clock()) if prometheus is not None else None
        if points is not None:
            return {"gpuHistory": points, "gpuHistorySource": {"source": "prometheus", "url": prometheus.shown_url}}
        source: dict[str, Any] = {"source": "server"}
        if prometheus is not None and prometheus.problem:
            source["problem"] = prometheus.problem
        return {"gpuHistory": history.points(), "gpuHistorySource": source}

    def sample(clusters: list[dict[str, Any]]) -> None:
        history.record(clock(), *gpu_totals(clusters))

    async def sampler(_app: web.Application) -> Any:
        async def loop() -> None:
            while True:
                sample(listed(CLUSTERS))
                await asyncio.sleep(history.step)

        task = asyncio.create_task(loop())
        yield
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    def signed_in(request: web.Request) -> bool:
        scheme, _, token = request.headers.get("Authorization", "").partition(" ")
        return scheme.lower() == "bearer" and bool(token.strip()) and authenticate(token.strip()) is not None

    async def shell(request: web.Request) -> web.Response:
        if signed_in(request):
            return web.Response(body=page, content_type="text/html", headers={"Cache-Control": "no-store"})
        return web.Response(body=page, status=401, content_type="text/html",
                            headers={"WWW-Authenticate": 'Bearer realm="caldera"', "Cache-Control": "no-store"})

    async def static(request: web.Request) -> web.Response:
        name = request.match_info["file"]
        if name not in STATIC:
            raise web.HTTPNotFound(text=f"no static file {name!r} (have: {', '.join(sorted(STATIC))})")
        return web.Response(body=_static(name), content_type=STATIC[name])

    def listed(info: Any, namespace: str | None = None) -> list[dict[str, Any]]:
        return list_objects(info, namespace)

    async def overview(_request: web.Request) -> web.Response:
        clusters = listed(CLUSTERS)
        doc = status_document(clusters, listed(LEASES, LEASE_NAMESPACE), listed(JOBS), listed(BINDINGS), clock(),
                              metrics.placement_latency_summary())
        sample(clusters)
        overview = data.overview(doc, clusters, listed(WORKS), listed(EVENTS), listed(QUEUES))
        return _json({**overview, **await gpu_history()})

    async def job(request: web.Request) -> web.Response:
        namespace, name = request.match_info["namespace"], request.match_info["name"]
        found = [j for j in listed(JOBS, namespace) if (j.get("metadata") or {}).get("name") == name]
        if not found:
            raise web.HTTPNotFound(text=f"no Job {namespace}/{name}")
        binding = next((b for b in listed(BINDINGS, namespace)
                        if (b.get("metadata") or {}).get("name") == f"{name}-job"), None)
        key = f"{namespace}.{name}"
        works = [w for w in listed(WORKS) if ((w.get("metadata") or {}).get("labels") or {}).get("caldera.io/job") == key]
        events = [e for e in listed(EVENTS, namespace)
                  if (e.get("involvedObject") or {}).get("name") in (name, f"{name}-job")]
        pods = [p for p in listed(PODS, namespace)  # the member view: every rank, where it runs
                if ((p.get("metadata") or {}).get("labels") or {}).get("volcano.sh/job-name") == name]
        return _json(data.job_page(job_entry(found[0], binding), works, events, pods))

    app.cleanup_ctx.append(sampler)
    for path in PAGE_PATHS:
        app.router.add_get(path, shell)
    app.router.add_get(JOB_PAGE_PREFIX + "{namespace}/{name}", shell)
    app.router.add_get("/ui/static/{file}", static)
    app.router.add_get("/ui/api/overview", overview)
    app.router.add_get("/ui/api/jobs/{namespace}/{name}", job)
