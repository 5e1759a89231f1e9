"""Operating the demo as Volcano/Karmada users do: a real Prometheus scrapes the federation (TLS,
viewer token) and both agents with Caldera's rule files; the dashboard at ``/ui`` in headless
Chromium shows both clusters and every demo job; the cluster alert fires when an agent dies and
resolves when it returns. One demo system for the module; the alert test runs last."""

from __future__ import annotations

import json
import os
import shutil
import ssl
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from e2e.harness import Miss
from e2e.observability import (
    CHROMIUM,
    alerts,
    apply_demo,
    launch_chromium,
    poll,
    prom_get,
    query,
    start_system,
)
from federation.demo.processes import System, free_port, leftover_processes
from federation.demo.prometheus import PrometheusProcess, agent_metrics_urls, agent_urls, mint_viewer_token
from tests.monitoring.test_metrics_exposition import lint_findings
from tests.monitoring.tools import GRAFANA_DIR, PROMTOOL, dashboard_queries

pytestmark = [pytest.mark.e2e, pytest.mark.slow,
              pytest.mark.skipif(shutil.which("prometheus") is None,
                                 reason="prometheus not installed (Debian package 'prometheus'; .ci/run installs it)")]
REPO = Path(__file__).resolve().parents[1]
SCREENSHOT = REPO / "docs" / "dashboard.png"
CLUSTERS = {"cluster-a", "cluster-b"}
#: queues with a GPU capability in the seed (queue-ai-training.yaml, queue-inference.yaml)
GPU_QUEUES = {"ai-training", "inference"}
#: Every wait in the browser: generous, for a loaded 2-core CI machine (Chromium's first paint alone
#: can take tens of seconds there); each wait ends as soon as what it waits for is on the page.
BROWSER_WAIT_MS = 90_000


@dataclass
class Demo:
    system: System
    prometheus: PrometheusProcess
    jobs: list[str]
    viewer: str


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Demo]:
    port = free_port()  # known before the federation starts: its dashboard's GPU chart reads this Prometheus
    system = start_system(tmp_path_factory.mktemp("observability"), ("--prometheus-url", f"http://127.0.0.1:{port}"))
    prometheus = PrometheusProcess(system, interval="1s", for_override="2s", port=port)
    try:
        prometheus.start()  # before the jobs: their placements land in scraped rates
        # and one scrape of the federation before them too: its counters start at zero, but a series
        # first scraped after the demo's gangs were released (placement is event-driven, ~1 s) shows no
        # increase, so rate() and the gang-wait panel built on it would stay empty
        poll(lambda: query(prometheus.url, 'up{job="caldera-federation"} == 1'), 60,
             "Prometheus's first scrape of the federation", system)
        yield Demo(system, prometheus, apply_demo(system), mint_viewer_token(system))
    finally:
        prometheus.stop()
        system.stop()
        groups = system.groups() | (prometheus.process.groups if prometheus.process else set())
        assert not leftover_processes(groups), "processes survived the module"


def test_prometheus_sees_every_target_cluster_and_queue(demo: Demo) -> None:
    base = demo.prometheus.url
    up = poll(lambda: (r := query(base, "up == 1")) and len(r) == 3 and r, 45, "3 targets up", demo.system)
    assert {s["metric"]["job"] for s in up} == {"caldera-federation", "caldera-agents"}
    # every target scraped over TLS with the viewer token (the agents' --metrics-bind-address)
    targets = prom_get(base, "/api/v1/targets", state="active")["activeTargets"]
    agents = {t["labels"]["cluster"]: t for t in targets if t["labels"]["job"] == "caldera-agents"}
    assert set(agents) == CLUSTERS, targets
    assert all(t["scrapeUrl"].startswith("https://") and t["health"] == "up" for t in targets), targets
    ready = poll(lambda: (r := query(base, "cluster_ready_state == 1")) and len(r) == 2 and r, 30,
                 "both clusters Ready in cluster_ready_state", demo.system)
    assert {s["metric"]["cluster_name"] for s in ready} == CLUSTERS
    # the seed's saturation alert's selector, unchanged: one series per (cluster, GPU queue) from the agents
    # (scope="cluster"); the federation's scope="fleet" series of the same names carry no cluster label
    wanted = {(c, q) for c in CLUSTERS for q in GPU_QUEUES}

    def gpu_ratio() -> bool | Miss:
        got = {(r["metric"]["cluster"], r["metric"]["queue_name"]) for r in query(
            base, 'volcano_queue_allocated{nvidia_com_gpu != ""} / volcano_queue_capability{nvidia_com_gpu != ""}')
            if r["metric"].get("scope") == "cluster"}
        return True if got >= wanted else Miss(sorted(got))

    poll(gpu_ratio, 45, "the seed's GPU saturation ratio for every (cluster, GPU queue)", demo.system)
    shares = poll(lambda: query(base, "sum by (cluster) (caldera_cluster_shares) > 0"), 45, "shares placed")
    assert {s["metric"]["cluster"] for s in shares} <= CLUSTERS
    for expr in ("karmada_scheduler_schedule_attempts_total", "volcano_e2e_scheduling_latency_milliseconds_count",
                 "caldera_cluster_gpus", "volcano_job_pending_duration_seconds or caldera_jobs"):
        assert query(base, expr), f"no series for {expr}"


@pytest.mark.skipif(PROMTOOL is None, reason="promtool not installed (Debian package 'prometheus')")
def test_live_expositions_pass_promtool_check_metrics(demo: Demo) -> None:
    tls = demo.system.data_dir
    urls = {"federation": demo.system.url, **agent_metrics_urls(demo.system)}
    assert all(url.startswith("https://") for url in urls.values()), urls
    for name, url in sorted(urls.items()):
        ca = tls / ("tls" if name == "federation" else "tls-agents") / "apiserver.crt"
        context = ssl.create_default_context(cafile=str(ca))
        request = urllib.request.Request(url + "/metrics", headers={"Authorization": f"Bearer {demo.viewer}"})
        with urllib.request.urlopen(request, timeout=10, context=context) as response:  # noqa: S310 - loopback
            text = response.read().decode()
        unexpected = lint_findings(text)
        assert not unexpected, f"{name}: " + "\n".join(unexpected)


def overview(demo: Demo) -> dict[str, Any]:
    """The dashboard's overview document, read with the viewer token over the federation's TLS."""
    context = ssl.create_default_context(cafile=str(demo.system.data_dir / "tls" / "apiserver.crt"))
    request = urllib.request.Request(demo.system.url + "/ui/api/overview",
                                     headers={"Authorization": f"Bearer {demo.viewer}"})
    with urllib.request.urlopen(request, timeout=10, context=context) as response:  # noqa: S310 - loopback
        doc: dict[str, Any] = json.load(response)
    return doc


def test_dashboard_gpu_chart_reads_prometheus(demo: Demo) -> None:
    """``--prometheus-url``: the chart's series is Prometheus's caldera_cluster_gpus, whose last total is
    the GPUs the clusters report (the demo's totals do not change)."""
    def from_prometheus() -> dict[str, Any] | Miss:
        doc = overview(demo)
        source = doc["gpuHistorySource"]
        return doc if source["source"] == "prometheus" else Miss(source)

    doc = poll(from_prometheus, 60, "the dashboard's GPU chart to read Prometheus", demo.system)
    assert doc["gpuHistorySource"]["url"] == demo.prometheus.url
    points = doc["gpuHistory"]
    assert len(points) >= 2 and points[-1]["total"] == sum(c["gpus"]["total"] for c in doc["clusters"]) > 0
    assert all(0 <= p["used"] <= p["total"] for p in points)


def test_agent_metrics_need_a_token_over_tls(demo: Demo) -> None:
    """Without a token 401, with a made-up one 401 (the federation reviews it), plain /metrics gone."""
    context = ssl.create_default_context(cafile=str(demo.system.data_dir / "tls-agents" / "apiserver.crt"))
    secure, plain = agent_metrics_urls(demo.system)["cluster-a"], agent_urls(demo.system)["cluster-a"]
    for headers in ({}, {"Authorization": "Bearer not-a-token"}):
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(urllib.request.Request(secure + "/metrics", headers=headers),  # noqa: S310
                                   timeout=10, context=context)
        with refused.value:  # an HTTPError holds its connection open until closed
            assert refused.value.code == 401, headers
    with pytest.raises(urllib.error.HTTPError) as gone:
        urllib.request.urlopen(plain + "/metrics", timeout=10)  # noqa: S310 - loopback
    with gone.value:
        assert gone.value.code == 404 and b"--metrics-bind-address" in gone.value.read()


@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (Debian package 'chromium')")
@pytest.mark.timeout(240)  # room for one more browser wait when CALDERA_UPDATE_SCREENSHOT waits for GPUs in use
def test_dashboard_shows_clusters_and_jobs_in_chromium(demo: Demo, tmp_path: Path) -> None:
    playwright_api = pytest.importorskip("playwright.sync_api", reason="playwright (test extra) not installed")
    with playwright_api.sync_playwright() as pw:
        browser = launch_chromium(pw)
        try:
            page = browser.new_context(ignore_https_errors=True, viewport={"width": 1400, "height": 1000}).new_page()
            page.set_default_timeout(BROWSER_WAIT_MS)
            page.set_default_navigation_timeout(BROWSER_WAIT_MS)
            try:
                browse(page, demo, tmp_path)
            except Exception as exc:  # say what the page showed; keep its picture for the CI log
                page.screenshot(path=str(tmp_path / "failed.png"), full_page=True)
                raise AssertionError(f"{exc}\npage {page.url} showed:\n{page.inner_text('body')[:3000]}") from exc
        finally:
            browser.close()
    assert (tmp_path / "dashboard.png").stat().st_size > 10_000


# pytest-timeout's 120 s default would end the test before its own 150 s poll could name the empty panels
@pytest.mark.timeout(240)
def test_every_grafana_panel_returns_data(demo: Demo) -> None:
    base = demo.prometheus.url
    board = GRAFANA_DIR / "caldera-fleet.json"
    queries = dashboard_queries(board)
    assert len(queries) >= 15

    def complete() -> bool | Miss:
        gaps = [f"{board}:{line}: panel {title!r}: {expr} returns no data" for title, expr, line in queries
                if not [r for r in query(base, expr) if r["value"][1] not in ("NaN", "+Inf", "-Inf")]]
        return Miss("\n".join(gaps)) if gaps else True

    # rules run every second here; the jobs' placements and releases must have reached the rates
    # the gang-wait and two-phase panels need a cross-cluster gang placed and two rule evaluations after
    # it; a loaded machine can take minutes to get the demo there, so wait long (ends when all have data)
    poll(complete, 150, "every panel's query to return data", demo.system)


def browse(page: Any, demo: Demo, tmp_path: Path) -> None:
    """Sign in (a wrong token first), find every cluster and demo Job, open a job's page."""
    response = page.goto(demo.system.url + "/ui")
    assert response is not None and response.status == 401  # no token yet: the sign-in form
    page.wait_for_selector("#login:not([hidden])")  # app.js has run and attached the form's handler
    assert "caldera token --role viewer" in page.inner_text("#login")
    page.fill("#token", "not-a-token")  # a wrong token: back to the form, saying so
    page.click("#login-form button[type=submit]")
    page.wait_for_selector("#login-error:has-text('did not accept this token')")
    page.fill("#token", demo.viewer)
    page.click("#login-form button[type=submit]")
    page.wait_for_selector("body[data-loaded=true]")
    for cluster in sorted(CLUSTERS):
        page.wait_for_selector(f'#clusters tr[data-cluster="{cluster}"]')
    for job in demo.jobs:  # every demo Job, listed as the page refreshes itself
        page.wait_for_selector(f'#jobs tr[data-job="default/{job}"]')
    assert demo.viewer not in page.content()  # the token is never written into the page
    page.wait_for_selector("#queues tr[data-queue=ai-training]")
    page.wait_for_selector("#gpu-chart[data-source=prometheus] svg")  # the chart drawn from Prometheus
    page.screenshot(path=str(tmp_path / "dashboard.png"), full_page=True)
    if os.environ.get("CALDERA_UPDATE_SCREENSHOT"):  # docs/dashboard.png: once the chart shows GPUs in use
        page.wait_for_selector('#gpu-chart[data-source=prometheus]:not([data-peak="0"])')
        page.screenshot(path=str(SCREENSHOT))
    # the overview re-renders its rows every refresh; the click re-finds the link if one is replaced
    page.click(f'#jobs tr[data-job="default/{demo.jobs[0]}"] a')
    page.wait_for_url(f"**/ui/jobs/default/{demo.jobs[0]}")
    page.wait_for_selector("#job:not([hidden])")
    assert page.inner_text("#job-title") == f"Job default/{demo.jobs[0]}"
    page.wait_for_selector("#job-shares tr[data-cluster]")
    page.screenshot(path=str(tmp_path / "job.png"), full_page=True)


def test_cluster_alert_fires_when_an_agent_dies_and_resolves_when_it_returns(demo: Demo) -> None:
    base = demo.prometheus.url
    poll(lambda: len(query(base, "cluster_ready_state == 1")) == 2, 45, "both clusters Ready", demo.system)
    assert not alerts(base, "CalderaClusterNotReady")
    demo.system.agents["cluster-b"].kill()
    firing = poll(lambda: [a for a in alerts(base, "CalderaClusterNotReady") if a["state"] == "firing"], 30,
                  "CalderaClusterNotReady firing")
    assert [a["labels"]["cluster_name"] for a in firing] == ["cluster-b"]
    demo.system.start_agent("cluster-b")
    poll(lambda: not alerts(base, "CalderaClusterNotReady"), 45, "CalderaClusterNotReady resolved")
