"""``caldera demo --keep`` as a user runs it (one demo for the module, started once for CI's sake):

* the demo passes, prints where every job ran, serves ``caldera get`` through the kubeconfig it
  prints, and on Ctrl-C exits 0 leaving no process (checked when the module's demo stops);

Issue 36's "Done when", on the same demo:

* ``kubectl get pods -A -o wide`` shows every rank of gpu-dist-training with its node and cluster;
* ``kubectl logs`` shows a rank's log (start, rank, env, exit), fetched from its member cluster;
* ``caldera logs gpu-dist-training --task worker --index 3`` prints the same log;
* the dashboard's job page lists the pods (node, rank, phase) and shows a log, in headless Chromium.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from e2e.observability import CHROMIUM, launch_chromium
from e2e.test_demo import JOBS, caldera_processes_under, demo, read_until

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(300)]
JOB = "gpu-dist-training"
WORKERS = 8  # the seed's gpu-dist-training: 8 workers, divided over both clusters
KUBECTL = shutil.which("kubectl")
BROWSER_WAIT_MS = 90_000


@dataclass
class KeptDemo:
    kubeconfig: str
    data_dir: Path
    url: str
    output: str  # what the demo printed up to "press Ctrl-C"

    def env(self) -> dict[str, str]:
        return {**os.environ, "KUBECONFIG": self.kubeconfig}


@pytest.fixture(scope="module")
def kept(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KeptDemo]:
    tmp_path = tmp_path_factory.mktemp("member-pods")
    proc = demo(tmp_path, "--timeout", "150", "--keep")
    try:
        out = read_until(proc, "press Ctrl-C", 240)
        assert "OK: every job reached its final phase" in out, out
        kubeconfig = next(line.split("=", 1)[1].strip() for line in out.splitlines() if "export KUBECONFIG=" in line)
        url = yaml.safe_load(Path(kubeconfig).read_text())["clusters"][0]["cluster"]["server"]
        yield KeptDemo(kubeconfig, tmp_path / "demo", url, out)
        proc.send_signal(signal.SIGINT)  # Ctrl-C ends --keep: the run's own exit code
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 0
    assert not caldera_processes_under(tmp_path / "demo")
    assert (tmp_path / "demo" / "demo-manifests.yaml").exists()


def run(args: list[str], kept: KeptDemo) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, timeout=90, env=kept.env())


def check_rank_log(text: str, index: int) -> None:
    lines = text.splitlines()
    assert any("start: container" in line and f"{JOB}-worker-{index} on node cluster-" in line for line in lines), text
    assert any(f"rank {index} (task worker, index {index})" in line for line in lines), text
    assert any(f"env VC_TASK_INDEX={index}" in line for line in lines), text
    assert lines[-1].endswith("exit: code 0 (Completed)"), text


def test_demo_passes_reports_every_job_and_keeps_running(kept: KeptDemo) -> None:
    summary = kept.output[kept.output.index("Summary"):]
    for job in JOBS:
        assert job in summary, f"{job} missing from the summary"
    assert "cluster-a: 3 (min 3) · cluster-b: 5 (min 5)" in summary, "gpu-dist-training divided 1:2"
    got = run([sys.executable, "-m", "federation", "get", "vcjob"], kept)
    rows = {line.split()[0]: line.split()[1] for line in got.stdout.splitlines()[1:]}
    assert rows.get(JOB) == "Completed", got.stdout + got.stderr


@pytest.mark.skipif(KUBECTL is None, reason="kubectl not installed")
def test_kubectl_get_pods_wide_shows_every_rank_with_node_and_cluster(kept: KeptDemo) -> None:
    got = run([str(KUBECTL), "get", "pods", "-A", "-o", "wide"], kept)
    assert got.returncode == 0, got.stderr
    header, *rows = got.stdout.splitlines()
    columns = header.split()
    assert columns[:2] == ["NAMESPACE", "NAME"] and "NODE" in columns and "CLUSTER" in columns, header
    node_at, cluster_at = columns.index("NODE"), columns.index("CLUSTER")
    ranks = {}
    for row in rows:
        cells = row.split()
        if cells[1].startswith(f"{JOB}-worker-"):
            ranks[cells[1]] = (cells[node_at], cells[cluster_at])
    assert sorted(ranks) == sorted(f"{JOB}-worker-{i}" for i in range(WORKERS)), got.stdout
    for name, (node, cluster) in ranks.items():
        assert cluster in ("cluster-a", "cluster-b"), (name, cluster)
        assert node.startswith(f"{cluster}-"), (name, node, cluster)  # the sim names nodes after their cluster
    assert {cluster for _, cluster in ranks.values()} == {"cluster-a", "cluster-b"}  # divided 3:5


@pytest.mark.skipif(KUBECTL is None, reason="kubectl not installed")
def test_kubectl_logs_shows_a_ranks_log(kept: KeptDemo) -> None:
    got = run([str(KUBECTL), "logs", f"{JOB}-worker-5"], kept)
    assert got.returncode == 0, got.stderr
    check_rank_log(got.stdout, 5)
    missing = run([str(KUBECTL), "logs", "no-such-pod"], kept)
    assert missing.returncode != 0 and "NotFound" in missing.stderr, missing.stderr


def test_caldera_logs_of_a_task_index(kept: KeptDemo) -> None:
    got = run([sys.executable, "-m", "federation", "logs", JOB, "--task", "worker", "--index", "3"], kept)
    assert got.returncode == 0, got.stderr
    check_rank_log(got.stdout, 3)
    bad = run([sys.executable, "-m", "federation", "logs", JOB, "--index", "3"], kept)
    assert bad.returncode == 2 and "--index needs --task" in bad.stderr
    if KUBECTL is None:
        return
    # -C: one member's copy, through Karmada's cluster proxy path
    where = run([str(KUBECTL), "get", "pod", f"{JOB}-worker-3", "-o",
                 "jsonpath={.metadata.annotations.resource\\.karmada\\.io/cached-from-cluster}"], kept).stdout
    other = {"cluster-a": "cluster-b", "cluster-b": "cluster-a"}[where.strip()]
    got = run([sys.executable, "-m", "federation", "logs", JOB, "--task", "worker", "--index", "3", "-C", where], kept)
    assert got.returncode == 0, got.stderr
    check_rank_log(got.stdout, 3)
    none = run([sys.executable, "-m", "federation", "logs", JOB, "--task", "worker", "--index", "3", "-C", other], kept)
    assert none.returncode == 1 and "no pods of job" in none.stderr, none.stderr


FOLLOWED = """
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: follow-me, namespace: default}
spec:
  resourceSelectors: [{apiVersion: batch.volcano.sh/v1alpha1, kind: Job, name: follow-me}]
  placement: {clusterAffinity: {clusterNames: [cluster-a]}}
---
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: follow-me, namespace: default}
spec:
  schedulerName: volcano
  minAvailable: 1
  tasks:
  - name: worker
    replicas: 1
    template:
      metadata: {annotations: {caldera.io/sim-duration: 60s}}   # 6 s at the demo's speed 10
      spec: {containers: [{name: worker, image: pytorch/pytorch:2.0.0, resources: {limits: {nvidia.com/gpu: 1}}}]}
"""


@pytest.mark.skipif(KUBECTL is None, reason="kubectl not installed")
def test_caldera_logs_follows_a_running_rank_until_it_exits(kept: KeptDemo) -> None:
    applied = subprocess.run([sys.executable, "-m", "federation", "apply", "-f", "-"], input=FOLLOWED,
                             capture_output=True, text=True, timeout=90, env=kept.env())
    assert applied.returncode == 0, applied.stderr
    deadline = time.monotonic() + 60
    phase = ""
    while time.monotonic() < deadline and phase != "Running":  # poll for exactly what the follow needs
        got = run([str(KUBECTL), "get", "pod", "follow-me-worker-0", "-o", "jsonpath={.status.phase}"], kept)
        phase = got.stdout.strip()
    assert phase == "Running", f"follow-me-worker-0 never ran: {phase!r}"
    followed = run([sys.executable, "-m", "federation", "logs", "follow-me", "-f"], kept)
    assert followed.returncode == 0, followed.stderr
    lines = followed.stdout.splitlines()
    assert "start: container worker of pod default/follow-me-worker-0 on node cluster-a-" in lines[0], lines
    assert lines[-1].endswith("exit: code 0 (Completed)"), lines  # written after the follow began


@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (Debian package 'chromium')")
def test_dashboard_job_page_lists_pods_and_shows_a_log_in_chromium(kept: KeptDemo, tmp_path: Path) -> None:
    playwright_api = pytest.importorskip("playwright.sync_api", reason="playwright (test extra) not installed")
    token = (kept.data_dir / "viewer.token").read_text().strip()
    with playwright_api.sync_playwright() as pw:
        browser = launch_chromium(pw)
        try:
            page = browser.new_context(ignore_https_errors=True, viewport={"width": 1400, "height": 1000}).new_page()
            page.set_default_timeout(BROWSER_WAIT_MS)
            page.set_default_navigation_timeout(BROWSER_WAIT_MS)
            try:
                browse_job(page, kept, token, tmp_path)
            except Exception as exc:  # say what the page showed; keep its picture for the CI log
                page.screenshot(path=str(tmp_path / "failed.png"), full_page=True)
                raise AssertionError(f"{exc}\npage {page.url} showed:\n{page.inner_text('body')[:3000]}") from exc
        finally:
            browser.close()


def browse_job(page: Any, kept: KeptDemo, token: str, tmp_path: Path) -> None:
    page.goto(f"{kept.url}/ui/jobs/default/{JOB}")
    page.wait_for_selector("#login:not([hidden])")
    page.fill("#token", token)
    page.click("#login-form button[type=submit]")
    page.wait_for_selector("#job:not([hidden])")
    for index in range(WORKERS):
        page.wait_for_selector(f'#job-ranks tr[data-pod="{JOB}-worker-{index}"]')
    row = page.locator(f'#job-ranks tr[data-pod="{JOB}-worker-3"]')
    cells = [c.strip() for c in row.locator("td").all_inner_texts()]
    assert cells[:4] == [f"{JOB}-worker-3", "worker", "3", "3"], cells  # pod, task, index, rank
    cluster, node, phase = cells[4], cells[5], cells[6]
    assert cluster in ("cluster-a", "cluster-b") and node.startswith(f"{cluster}-") and phase == "Succeeded", cells
    page.click(f'#job-ranks tr[data-pod="{JOB}-worker-3"] a.log-link')
    page.wait_for_selector('#job-log[data-pod="gpu-dist-training-worker-3"]')
    check_rank_log(page.inner_text("#job-log"), 3)
    assert token not in page.content()
    page.screenshot(path=str(tmp_path / "job-pods.png"), full_page=True)
    if os.environ.get("CALDERA_UPDATE_SCREENSHOT"):
        page.screenshot(path=str(Path(__file__).resolve().parents[1] / "docs" / "dashboard-job.png"), full_page=True)
