"""The agent's secure metrics listener (member_agent/metrics_server.py): a scrape's bearer token is
reviewed by a real in-process federation (SelfSubjectAccessReview with that token): a viewer
token reads /metrics, none or a made-up one is 401, a user RBAC does not let ``get /metrics`` is
403, an unreachable federation 503; answers are cached per token for the TTL only."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp.test_utils import TestClient, TestServer

from federation.apiserver.server import ApiServer, ServerConfig
from member_agent.metrics_server import ScrapeAuth, build_metrics_app, federation_review

EXPOSITION = b"# HELP up_test a test gauge\n# TYPE up_test gauge\nup_test 1\n"


@pytest.fixture
async def federation(tmp_path: Path) -> AsyncIterator[ApiServer]:
    server = await ApiServer(ServerConfig(data_dir=tmp_path / "data")).start()
    yield server
    await server.stop()


async def _client(auth: ScrapeAuth) -> TestClient:  # type: ignore[type-arg]
    client = TestClient(TestServer(build_metrics_app(lambda: EXPOSITION, auth)))
    await client.start_server()
    return client


@pytest.mark.parametrize(("who", "code"), [("viewer", 200), ("nobody", 403), ("made-up", 401), ("no token", 401)])
async def test_scrape_is_decided_by_the_federation(federation: ApiServer, who: str, code: int) -> None:
    tokens = {"viewer": federation.mint_token("viewer"),
              "nobody": federation.state.auth.mint_for("nobody", []),  # authenticated, no role
              "made-up": "not-a-token"}
    auth = ScrapeAuth(federation_review([(federation.url, False)]), lambda: 0.0)
    client = await _client(auth)
    try:
        headers = {"Authorization": f"Bearer {tokens[who]}"} if who in tokens else {}
        resp = await client.get("/metrics", headers=headers)
        body = await resp.read()
    finally:
        await client.close()
    assert resp.status == code, body
    if code == 200:
        assert body == EXPOSITION and resp.headers["Content-Type"].startswith("text/plain")
    else:
        assert b"up_test" not in body
    if code == 401:
        assert "Bearer" in resp.headers["WWW-Authenticate"] and b"viewer token" in body


async def test_answers_are_cached_per_token_for_the_ttl_only() -> None:
    asked: list[str] = []
    now = [0.0]

    async def review(token: str) -> int:
        asked.append(token)
        return 200

    auth = ScrapeAuth(review, lambda: now[0], ttl=10.0)
    for _ in range(3):
        assert await auth.status("Bearer t1") == 200
    assert asked == ["t1"]
    assert await auth.status("Bearer t2") == 200 and asked == ["t1", "t2"]
    now[0] = 10.5
    assert await auth.status("Bearer t1") == 200 and asked == ["t1", "t2", "t1"]
    assert "t1" not in repr(auth.cache)  # only digests are kept
    assert await auth.status("Basic dXNlcjpwdw==") == 401 and await auth.status(None) == 401
    assert len(asked) == 3  # a missing or non-bearer credential never reaches the federation


async def test_unreachable_federation_is_503_not_a_stack_trace() -> None:
    auth = ScrapeAuth(federation_review([("http://127.0.0.1:9", False)]), lambda: 0.0)
    client = await _client(auth)
    try:
        resp = await client.get("/metrics", headers={"Authorization": "Bearer t"})
        body = await resp.text()
    finally:
        await client.close()
    assert resp.status == 503 and "federation is unreachable" in body


@pytest.mark.parametrize(("flags", "says"), [
    (["--metrics-bind-address", "127.0.0.1:0"], "give --tls-cert-file and --tls-private-key-file"),
    (["--metrics-bind-address", "nonsense", "--tls-cert-file", "c", "--tls-private-key-file", "k"],
     "--metrics-bind-address must be HOST:PORT"),
    (["--tls-cert-file", "c", "--tls-private-key-file", "k"], "serve --metrics-bind-address; give it too"),
])
def test_bad_metrics_flags_are_refused_naming_the_flag(flags: list[str], says: str) -> None:
    from member_agent.agent_cmd import _check_metrics_flags
    from member_agent.cli import build_parser
    from policies.errors import CalderaError

    args = build_parser().parse_args(["agent", "--cluster", "a", "--kubeconfig", "k", "--sim", "s", *flags])
    with pytest.raises(CalderaError, match=says.replace("-", r"\-")):
        _check_metrics_flags(args)


async def test_healthz_on_the_secure_listener_needs_no_token_and_asks_nobody() -> None:
    """kubelet probes the HTTPS listener (the plain one is loopback-only in deploy/): /healthz is open,
    as kube components leave /healthz open on their secure port; /metrics still needs a token."""
    asked: list[str] = []

    async def review(token: str) -> int:
        asked.append(token)
        return 200

    client = await _client(ScrapeAuth(review, lambda: 0.0))
    try:
        health = await client.get("/healthz")
        metrics = await client.get("/metrics")
        assert (health.status, await health.text()) == (200, "ok")
        assert metrics.status == 401 and asked == []
    finally:
        await client.close()
