"""The dashboard's own JavaScript in headless Chromium, against documents built by ``federation.ui.data``.

The browser's requests are answered by Playwright routes (the shell, app.js, app.css and the two
documents), so this checks the front end alone: events collapse per object and open on a click,
the GPU chart draws the server's samples, the jobs filter by namespace, queue and phase, and a completed share's GANG cell says Completed. The full-system check is the e2e dashboard test.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from federation.ui import data
from tests.ui.test_dashboard_groups import ev

STATIC = Path(__file__).resolve().parents[2] / "federation" / "ui" / "static"
DOCS = Path(__file__).resolve().parents[2] / "docs"
CHROMIUM = shutil.which("chromium") or ("/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None)
BASE = "http://caldera.test"
EVENTS = [ev("Job", "train", "Scheduled", "2026-12-03T07:00:00Z"), ev("Job", "train", "Released", "2026-12-03T07:00:04Z"),
          ev("Job", "train", "AllSharesRunning", "2026-12-03T07:00:06Z"),
          ev("Cluster", "cluster-b", "NotReady", "2026-12-03T07:00:08Z", "Warning")]

JOBS = [("default", "train", "ai-training", "Completed"), ("default", "eval", "default", "Running"),
        ("team-b", "sweep", "ai-training", "Running"), ("team-b", "tune", "ai-training", "Pending")]

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (Debian package 'chromium')")]


def overview_doc() -> dict[str, Any]:
    status = {"summary": {"readyClusters": 1, "clusters": 1, "gpus": {"total": 8, "free": 2}, "jobs": len(JOBS),
                          "jobsByPhase": {"Completed": 1, "Pending": 1, "Running": 2}},
              "placementLatency": {"observed": None}, "clusters": [],
              "jobs": [{"namespace": ns, "name": name, "queue": queue, "phase": phase, "clusters": []}
                       for ns, name, queue, phase in JOBS]}
    history = [{"time": f"2026-12-03T07:{m:02d}:00Z", "used": used, "total": 8}
               for m, used in enumerate([0, 2, 6, 8, 5, 6])]
    return {**data.overview(status, [], [], EVENTS), "gpuHistory": history}


def job_doc() -> dict[str, Any]:
    entry = {"name": "train", "namespace": "default", "phase": "Completed", "reason": "AllSharesCompleted",
             "queue": "default", "minAvailable": 4, "running": 0, "pending": 0, "succeeded": 4, "failed": 0,
             "clusters": [{"name": "cluster-a", "replicas": 2, "minAvailable": 2, "phase": "Completed",
                           "gangPhase": "Running", "succeeded": 2},
                          {"name": "cluster-b", "replicas": 2, "minAvailable": 2, "phase": "Running",
                           "gangPhase": "Running", "running": 2}]}
    return data.job_page(entry, [], EVENTS[:3])


def _serve(page: Any) -> None:
    files = {"/ui/static/app.js": ("application/javascript", (STATIC / "app.js").read_text()),
             "/ui/static/app.css": ("text/css", (STATIC / "app.css").read_text()),
             "/ui/api/overview": ("application/json", json.dumps(overview_doc())),
             "/ui/api/jobs/default/train": ("application/json", json.dumps(job_doc()))}

    def handle(route: Any) -> None:
        path = route.request.url.removeprefix(BASE)
        kind, body = files.get(path, ("text/html", (STATIC / "index.html").read_text()))
        route.fulfill(status=200, content_type=kind, body=body)

    page.route(f"{BASE}/**", handle)
    page.add_init_script("sessionStorage.setItem('caldera.token', 'test-token')")


def test_events_collapse_filters_narrow_and_the_gang_cell_is_truthful(tmp_path: Path) -> None:
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright (test extra) not installed")
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, timeout=60_000,
                                     args=["--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page(viewport={"width": 1200, "height": 700})
            _serve(page)
            page.goto(f"{BASE}/ui")
            page.wait_for_selector("#events tr.group", timeout=60_000)
            groups = page.locator("#events tr.group")
            assert groups.count() == 2
            used = page.locator("#gpu-chart polyline.used").get_attribute("points") or ""
            assert len(used.split()) == 6  # one vertex per sample
            assert "now 6 of 8 GPUs used" in page.inner_text("#gpu-chart")
            assert sorted(o.inner_text() for o in page.locator("#filter-namespace option").all()) == [
                "all", "default", "team-b"]
            assert page.locator("#events tr.group-child:visible").count() == 0
            train = page.locator('#events tr.group[data-group="default/Job/train"]')
            assert "3 events" in train.inner_text() and "AllSharesRunning" in train.inner_text()
            train.locator("button").click()
            assert page.locator('#events tr[data-group-child="default/Job/train"]:visible').count() == 3
            page.screenshot(path=str(tmp_path / "events.png"), full_page=True)
            if os.environ.get("CALDERA_UPDATE_SCREENSHOT") == "1":
                shutil.copyfile(tmp_path / "events.png", DOCS / "dashboard-events.png")

            assert page.locator("#jobs tbody tr").count() == 4
            page.select_option("#filter-queue", "ai-training")
            page.select_option("#filter-phase", "Running")
            assert [r.get_attribute("data-job") for r in page.locator("#jobs tbody tr").all()] == ["team-b/sweep"]
            assert page.inner_text("#filter-count") == "1 of 4 jobs"
            page.select_option("#filter-phase", "")
            page.select_option("#filter-namespace", "team-b")
            assert page.locator("#jobs tbody tr").count() == 2
            assert page.locator("#events tr.group").count() == 0  # the demo's events are all in default
            page.select_option("#filter-namespace", "default")
            assert page.locator("#events tr.group").count() == 2

            page.goto(f"{BASE}/ui/jobs/default/train")
            page.wait_for_selector('#job-shares tr[data-cluster="cluster-a"]', timeout=60_000)
            gang = page.locator('#job-shares tr[data-cluster="cluster-a"] td').nth(7).inner_text()
            running = page.locator('#job-shares tr[data-cluster="cluster-b"] td').nth(7).inner_text()
            assert (gang, running) == ("Completed", "Running")
        finally:
            browser.close()
