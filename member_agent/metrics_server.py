"""The agent's secure metrics listener: ``/metrics`` over HTTPS, scrapes authenticated and authorized
by the federation (docs/monitoring.md).

As controller-runtime's secure metrics serving and kube components' delegated auth do, the agent
keeps no token list of its own: each scrape's bearer token is sent to the federation as a
SelfSubjectAccessReview (``get`` on the non-resource URL ``/metrics``) *with that token*, so the
federation authenticates it (a bad or missing token is 401) and its RBAC decides (the viewer role
may ``get /metrics``; others get 403). Answers are cached for :data:`REVIEW_CACHE_SECONDS` per
token (kube's token cache does the same), so a scrape every second costs one review per 10 s.
Flags, named as kube components name them: ``--metrics-bind-address``, ``--tls-cert-file``,
``--tls-private-key-file``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import ssl
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Optional

import aiohttp
from aiohttp import web

from member_agent.metrics import CONTENT_TYPE

log = logging.getLogger("caldera.agent.metrics")
#: How long one review's answer (allowed, refused or unauthenticated) stands for a token.
REVIEW_CACHE_SECONDS = 10.0
REVIEW_PATH = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
REVIEW_TIMEOUT = 5.0

#: token -> HTTP status for the scrape: 200 allowed, 401 unauthenticated, 403 forbidden (raises
#: ConnectionError when no federation endpoint answers).
Review = Callable[[str], Awaitable[int]]


def federation_review(endpoints: Sequence[tuple[str, ssl.SSLContext | bool]]) -> Review:
    """A :data:`Review` asking each federation endpoint in turn (the first that answers decides)."""
    body = json.dumps({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
                       "spec": {"nonResourceAttributes": {"path": "/metrics", "verb": "get"}}})

    async def review(token: str) -> int:
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        last: Optional[BaseException] = None
        async with aiohttp.ClientSession() as session:
            for server, context in endpoints:
                try:
                    async with session.post(server + REVIEW_PATH, data=body, headers=headers, ssl=context,
                                            timeout=aiohttp.ClientTimeout(total=REVIEW_TIMEOUT)) as resp:
                        if resp.status in (401, 403):
                            return resp.status
                        if resp.status >= 400:
                            raise ConnectionError(f"{server}: review answered HTTP {resp.status}")
                        answer = await resp.json(content_type=None)
                        return 200 if (answer.get("status") or {}).get("allowed") else 403
                except (aiohttp.ClientError, TimeoutError, ConnectionError, ValueError) as exc:
                    last = exc
        raise ConnectionError(f"no federation endpoint answered the review: {last}")

    return review


@dataclass
class ScrapeAuth:
    """Bearer-token checks with a per-token cache (tokens are kept only as SHA-256 digests)."""

    review: Review
    now: Callable[[], float]
    ttl: float = REVIEW_CACHE_SECONDS
    cache: dict[str, tuple[float, int]] = field(default_factory=dict)

    async def status(self, authorization: Optional[str]) -> int:
        scheme, _, token = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return 401
        key = hashlib.sha256(token.strip().encode()).hexdigest()
        cached = self.cache.get(key)
        if cached is not None and self.now() - cached[0] < self.ttl:
            return cached[1]
        answer = await self.review(token.strip())
        if len(self.cache) > 1000:  # a flood of made-up tokens must not grow memory without bound
            self.cache.clear()
        self.cache[key] = (self.now(), answer)
        return answer


def build_metrics_app(render: Callable[[], bytes], auth: ScrapeAuth) -> web.Application:
    app = web.Application()

    async def metrics(request: web.Request) -> web.Response:
        try:
            code = await auth.status(request.headers.get("Authorization"))
        except ConnectionError as exc:
            log.warning("metrics scrape refused: %s", exc)
            return web.Response(status=503, text="cannot verify the token: the federation is unreachable\n")
        if code == 401:
            return web.Response(status=401, text="Unauthorized: send a federation token (a viewer token "
                                                 "suffices) as 'Authorization: Bearer TOKEN'\n",
                                headers={"WWW-Authenticate": 'Bearer realm="caldera-agent"'})
        if code == 403:
            return web.Response(status=403, text='Forbidden: the token may not "get" the path "/metrics"\n')
        return web.Response(body=render(), headers={"Content-Type": CONTENT_TYPE})

    async def healthz(_request: web.Request) -> web.Response:
        return web.Response(text="ok")  # no token: kubelet probes it (kube components allow /healthz too)

    app.router.add_get("/metrics", metrics)
    app.router.add_get("/healthz", healthz)
    return app


def server_context(cert_file: str, key_file: str) -> ssl.SSLContext:
    # No client certificates are asked for (clients send bearer tokens), so no CA store is loaded.
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(cert_file, key_file)
    return context
