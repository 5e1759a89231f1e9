"""The aiohttp application: middlewares (errors as Status, auth, metrics) and routes."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from federation.apiserver import keys, openapi, paths
from federation.apiserver import status as st
from federation.apiserver.audit import (
    SHORT_REQUEST_STAGES,
    Exchange,
    events,
    is_long_running,
    request_info,
    request_verb,
)
from federation.apiserver.auth import with_default_groups
from federation.apiserver.bodies import json_response
from federation.apiserver.rbac.authorizer import DECISION, attributes
from federation.apiserver.routes import Handlers
from federation.apiserver.state import STATE_KEY, ApiServerState
from federation.apiserver.storage import StorageUnavailable, StoreFailed
from federation.ui.paths import is_public as is_public_ui_path
from federation.version import caldera_version
from policies.kinds import KindInfo

PUBLIC_PATHS = frozenset({"/healthz", "/livez", "/readyz", "/version", "/version/", "/metrics"})
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _error_response(exc: st.ApiError) -> web.Response:
    return web.Response(body=orjson.dumps(exc.to_status()), status=exc.code, content_type="application/json")


@web.middleware
async def errors_and_metrics(request: web.Request, handler: Handler) -> web.StreamResponse:
    state: ApiServerState = request.app[STATE_KEY]
    started = time.perf_counter()
    code = 500
    try:
        response = await handler(request)
        code = response.status
        return response
    except st.ApiError as exc:
        code = exc.code
        return _error_response(exc)
    except StoreFailed as exc:  # the backend refused the write for good (a full disk, etcd's quota)
        code = 500  # kube-apiserver: a storage error it cannot interpret is a 500 with the error's words
        return _error_response(st.ApiError(500, "", str(exc)))
    except StorageUnavailable as exc:  # etcd without quorum or unreachable: nothing was acknowledged
        code = 503
        return _error_response(st.ApiError(503, "ServiceUnavailable", f"storage unavailable: {exc}"))
    except web.HTTPRequestEntityTooLarge:
        code = 413
        return _error_response(st.too_large(state.max_body))
    except web.HTTPException as exc:
        code = exc.status
        return _error_response(st.ApiError(exc.status, exc.reason, exc.text or exc.reason))
    finally:
        state.metrics.observe(request.get(keys.VERB, request.method.lower()), request.get(keys.RESOURCE, ""),
                              code, time.perf_counter() - started)


AUDIT_ID: web.RequestKey[str] = web.RequestKey("caldera_audit_id", str)
AUDIT_RECEIVED: web.RequestKey[Any] = web.RequestKey("caldera_audit_received", object)
#: set once a long-running request's RequestReceived and ResponseStarted stages are written
AUDIT_STARTED: web.RequestKey[bool] = web.RequestKey("caldera_audit_started", bool)


def _exchange(request: web.Request, response: web.StreamResponse | None, body: bytes | None) -> Exchange:
    return Exchange(request.path, request.path_qs, request.method, _verb(request), request.get(keys.USER),
                    request.remote or "", request.headers.get("User-Agent", ""),
                    response.status if response is not None else 500, request[AUDIT_RECEIVED], body,
                    response.body if isinstance(response, web.Response) and isinstance(
                        response.body, bytes) else None, DECISION.get())


def _verb(request: web.Request) -> str:
    return request.get(keys.VERB) or request_verb(request.method, request_info(request.path),
                                                  request.query.get("watch") in ("true", "1"))


@web.middleware
async def audit_requests(request: web.Request, handler: Handler) -> web.StreamResponse:
    """The audit Events of each request (federation/apiserver/audit.py), written once it is answered."""
    log = request.app[STATE_KEY].audit
    if log is None:
        return await handler(request)
    request[AUDIT_ID] = request.headers.get("Audit-ID") or log.new_id()
    DECISION.set(None)
    request[AUDIT_RECEIVED] = log.clock()
    response: web.StreamResponse | None = None
    try:
        response = await handler(request)
        return response
    finally:
        body = None
        if request.method in ("POST", "PUT", "PATCH") and request.body_exists:
            with contextlib.suppress(Exception):
                body = await request.read()
        stages = ("ResponseComplete",) if request.get(AUDIT_STARTED) else SHORT_REQUEST_STAGES
        for event in events(log, request[AUDIT_ID], _exchange(request, response, body), stages):
            log.emit(event)


async def _audit_response_started(request: web.Request, response: web.StreamResponse) -> None:
    """Send the Audit-Id header; a watch's first two audit stages are written as its headers go out."""
    if AUDIT_ID not in request:
        return
    response.headers["Audit-Id"] = request[AUDIT_ID]
    log = request.app[STATE_KEY].audit
    if log is not None and is_long_running(_verb(request)) and not request.get(AUDIT_STARTED):
        request[AUDIT_STARTED] = True
        for event in events(log, request[AUDIT_ID], _exchange(request, response, None),
                            ("RequestReceived", "ResponseStarted")):
            log.emit(event)


@web.middleware
async def authenticate(request: web.Request, handler: Handler) -> web.StreamResponse:
    if request.path in PUBLIC_PATHS or (not request.app[STATE_KEY].member_mode and is_public_ui_path(request.path)):
        return await handler(request)
    state: ApiServerState = request.app[STATE_KEY]
    header = request.headers.get("Authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise st.unauthorized()
    user = state.auth.authenticate(token.strip())
    if user is None and state.sa_tokens is not None:
        user = state.sa_tokens.authenticate(token.strip())
    if user is None:
        raise st.unauthorized()
    user = with_default_groups(user)
    request[keys.USER] = user
    if not paths.is_resource_path(request.path):  # discovery, OpenAPI, /status, /ui: kube's non-resource URLs
        state.authorizer.check(attributes(user, request.method.lower(), path=request.path))
    return await handler(request)


def build_app(state: ApiServerState) -> web.Application:
    app = web.Application(middlewares=[audit_requests, errors_and_metrics, authenticate],
                          client_max_size=state.max_body)
    app.on_response_prepare.append(_audit_response_started)
    app[STATE_KEY] = state
    handlers = Handlers(state)

    async def health(_request: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def ready(_request: web.Request) -> web.Response:
        if state.stopping:
            raise st.ApiError(503, "ServiceUnavailable", "shutting down")
        if state.store.failure is not None and not await state.store.probe():
            raise st.ApiError(503, "ServiceUnavailable",
                              f"store cannot commit writes: {state.store.failure} ({state.store.describe}); "
                              f"reads are served, writes get 500 until it can commit again")
        try:
            await state.store.consistent()
        except StorageUnavailable as exc:
            raise st.ApiError(503, "ServiceUnavailable", f"storage unavailable: {exc}") from None
        return web.Response(text="ok")

    async def version(_request: web.Request) -> web.Response:
        return json_response({"major": "1", "minor": "37", "gitVersion": f"v1.37.0-caldera.{caldera_version()}",
                              "gitCommit": "", "gitTreeState": "clean", "buildDate": "", "goVersion": "",
                              "compiler": "caldera", "platform": "python"})

    async def metrics(_request: web.Request) -> web.Response:
        state.metrics.objects.set(state.store.rv)
        state.metrics.commits.set(state.store.commits)
        state.metrics.committed_writes.set(state.store.committed_writes)
        state.metrics.count_failed_commits(state.store.failed_commits)
        return web.Response(body=generate_latest(state.metrics.registry),
                            headers={"Content-Type": CONTENT_TYPE_LATEST})

    for path in ("/healthz", "/livez"):
        app.router.add_get(path, health)
    app.router.add_get("/readyz", ready)
    app.router.add_get("/version", version)
    app.router.add_get("/version/", version)
    app.router.add_get("/metrics", metrics)
    if not state.member_mode:  # federation dashboards: GET /status (federation/status_api.py, docs/status.md)
        from federation.status_api import add_routes as add_status_routes
        from federation.ui.routes import add_routes as add_ui_routes  # the dashboard, /ui (docs/dashboard.md)

        def list_objects(info: KindInfo, namespace: str | None) -> list[dict[str, Any]]:
            if state.members is not None and info.kind in ("Pod", "PodGroup"):  # what the agents report
                return state.members.list(info, namespace, None)
            return state.registry.list(info, namespace, None)

        add_status_routes(app, list_objects, state.metrics.registry)
        add_ui_routes(app, state.auth.authenticate, list_objects, prometheus_url=state.extra.get("prometheus_url"))
    openapi.add_routes(app)
    if not state.member_mode:  # karmada-search's proxy path for the member pods (docs/protocol.md "Member pods")
        from federation.apiserver import member_logs
        from federation.apiserver.member_routes import add_cluster_proxy, add_karmada_proxy

        add_karmada_proxy(app, handlers)
        add_cluster_proxy(app, handlers)  # .../clusters/C/proxy/api/v1/...pods: one member's copies
        member_logs.add_routes(app, state)  # agents answer log requests here (member_logs.py)
    app.router.add_route("*", "/api", handlers.core)
    app.router.add_route("*", "/api/{tail:.*}", handlers.core)
    app.router.add_route("*", "/apis", handlers.groups)
    app.router.add_route("*", "/apis/{tail:.*}", handlers.groups)
    return app
