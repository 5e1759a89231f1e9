"""The GPU chart from Prometheus: ``query_range`` answers to points, the fallback to the server's own
samples (and why) when Prometheus is down, errs or has no samples, and the overview saying which."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from federation.apiserver.server import ApiServer, ServerConfig
from federation.demo.processes import free_port
from federation.ui.prometheus import FREE, TOTAL, PrometheusError, PrometheusGpuSource, points_from

NOW = datetime(2026, 12, 5, 22, 0, 0, tzinfo=UTC)
T = NOW.timestamp()


def matrix(values: list[tuple[float, str]]) -> dict[str, Any]:
    return {"status": "success", "data": {"resultType": "matrix", "result": [{"metric": {}, "values": values}]}}


EMPTY = {"status": "success", "data": {"resultType": "matrix", "result": []}}
BAD = {"status": "error", "errorType": "bad_data", "error": "parse error at char 4"}

#: (total answer, free answer, expected points as (seconds before NOW, used, total))
CASES = [
    (matrix([(T - 30, "16"), (T - 15, "16"), (T, "24")]), matrix([(T - 30, "16"), (T - 15, "4"), (T, "8")]),
     [(30, 0, 16), (15, 12, 16), (0, 16, 24)]),
    # a timestamp only one series has is left out (a scrape that missed one of the two)
    (matrix([(T - 15, "8"), (T, "8")]), matrix([(T, "2")]), [(0, 6, 8)]),
    (EMPTY, EMPTY, []),
]


@pytest.mark.parametrize(("total", "free", "want"), CASES)
def test_points_join_the_two_series_on_their_timestamps(total: dict[str, Any], free: dict[str, Any],
                                                        want: list[tuple[int, int, int]]) -> None:
    stamp = [(NOW - timedelta(seconds=s)).strftime("%Y-%m-%dT%H:%M:%SZ") for s, _, _ in want]
    assert points_from(total, free) == [{"time": t, "used": u, "total": n} for t, (_, u, n) in zip(stamp, want, strict=True)]


def test_an_error_answer_names_the_query_and_prometheus_error() -> None:
    with pytest.raises(PrometheusError, match=r"caldera_cluster_gpus_free.*bad_data: parse error"):
        points_from(matrix([(T, "1")]), BAD)


class FakePrometheus:
    """A loopback HTTP server answering ``/api/v1/query_range`` with canned documents, counting calls."""

    def __init__(self, answers: dict[str, dict[str, Any]]) -> None:
        self.answers = answers
        self.seen: list[dict[str, str]] = []

    async def handle(self, request: web.Request) -> web.Response:
        self.seen.append(dict(request.query))
        return web.json_response(self.answers[request.query["query"]])


@pytest.fixture
async def fake() -> AsyncIterator[tuple[FakePrometheus, str]]:
    prom = FakePrometheus({TOTAL: matrix([(T - 15, "16"), (T, "16")]), FREE: matrix([(T - 15, "10"), (T, "4")])})
    app = web.Application()
    app.router.add_get("/api/v1/query_range", prom.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    yield prom, f"http://127.0.0.1:{port}"
    await runner.cleanup()


async def test_points_come_from_query_range_and_are_kept_for_one_step(fake: tuple[FakePrometheus, str]) -> None:
    prom, url = fake
    source = PrometheusGpuSource(url, step_seconds=15)
    points = await source.points(NOW)
    assert points is not None and [(p["used"], p["total"]) for p in points] == [(6, 16), (12, 16)]
    assert source.problem is None
    assert {q["query"] for q in prom.seen} == {TOTAL, FREE}
    assert all(q["step"] == "15s" and float(q["end"]) - float(q["start"]) == 3600 for q in prom.seen)
    await source.points(NOW + timedelta(seconds=5))  # within the step: the kept answer
    assert len(prom.seen) == 2
    await source.points(NOW + timedelta(seconds=20))
    assert len(prom.seen) == 4


async def test_no_samples_yet_falls_back_and_says_so(fake: tuple[FakePrometheus, str]) -> None:
    prom, url = fake
    prom.answers = {TOTAL: EMPTY, FREE: EMPTY}
    source = PrometheusGpuSource(url)
    assert await source.points(NOW) is None
    assert source.problem == f"Prometheus at {url} has no caldera_cluster_gpus samples yet"


async def test_a_prometheus_that_is_down_is_not_asked_again_until_retry_after() -> None:
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    source = PrometheusGpuSource(url, retry_after=30)
    assert await source.points(NOW) is None
    assert source.problem is not None and source.problem.startswith(f"Prometheus at {url} did not answer")
    asked: list[datetime] = []

    async def counting(now: datetime) -> list[dict[str, Any]]:
        asked.append(now)
        return []

    source._fetch = counting  # type: ignore[method-assign]
    assert await source.points(NOW + timedelta(seconds=10)) is None and asked == []
    await source.points(NOW + timedelta(seconds=31))
    assert asked == [NOW + timedelta(seconds=31)]


async def test_the_overview_falls_back_to_the_servers_samples_and_says_why(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    async with ApiServer(ServerConfig(data_dir=tmp_path / "data", prometheus_url=url)) as srv:
        headers = {"Authorization": f"Bearer {srv.mint_token('viewer')}"}
        async with aiohttp.ClientSession() as session, \
                session.get(srv.url + "/ui/api/overview", headers=headers) as response:
            doc = await response.json()
    assert doc["gpuHistorySource"]["source"] == "server"
    assert doc["gpuHistorySource"]["problem"].startswith(f"Prometheus at {url} did not answer")
    assert len(doc["gpuHistory"]) >= 1  # the server's own sample of this read


async def test_the_overview_reads_prometheus_when_it_answers(tmp_path: Path, fake: tuple[FakePrometheus, str]) -> None:
    _, url = fake
    async with ApiServer(ServerConfig(data_dir=tmp_path / "data", prometheus_url=url)) as srv:
        headers = {"Authorization": f"Bearer {srv.mint_token('viewer')}"}
        async with aiohttp.ClientSession() as session, \
                session.get(srv.url + "/ui/api/overview", headers=headers) as response:
            doc = await response.json()
    assert doc["gpuHistorySource"] == {"source": "prometheus", "url": url}
    assert [(p["used"], p["total"]) for p in doc["gpuHistory"]] == [(6, 16), (12, 16)]


@pytest.mark.parametrize("bad", ["127.0.0.1:9090", "ftp://prom:9090", "http://", "prometheus"])
def test_serve_refuses_a_prometheus_url_that_is_not_http(bad: str, capsys: pytest.CaptureFixture[str]) -> None:
    import argparse

    from federation.cli.serve import register

    parser = argparse.ArgumentParser(prog="caldera serve")
    register(parser)
    with pytest.raises(SystemExit) as exited:
        parser.parse_args(["--prometheus-url", bad])
    assert exited.value.code == 2
    assert f"argument --prometheus-url: {bad!r} is not an http:// or https:// URL" in capsys.readouterr().err
    assert parser.parse_args(["--prometheus-url", "http://127.0.0.1:9090"]).prometheus_url == "http://127.0.0.1:9090"


def test_the_url_shown_to_viewers_carries_no_credentials() -> None:
    source = PrometheusGpuSource("https://reader:s3cret@prometheus.example:9090/prom")
    assert source.shown_url == "https://prometheus.example:9090/prom"
    assert PrometheusGpuSource("http://127.0.0.1:9090").shown_url == "http://127.0.0.1:9090"
