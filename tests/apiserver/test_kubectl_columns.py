"""kubectl's view of Karmada objects: `get pp -o wide`, `get rb` with FULLYAPPLIED from the Works."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.apiserver.serve_process import ServeProcess
from tests.apiserver.test_kubectl import SEED, kubectl

pytestmark = pytest.mark.slow

BINDING = """apiVersion: work.karmada.io/v1alpha2
kind: ResourceBinding
metadata:
  name: cols-job
  namespace: default
  annotations: {caldera.io/placement-generation: "1"}
spec:
  resource: {apiVersion: batch.volcano.sh/v1alpha1, kind: Job, namespace: default, name: cols}
  clusters:
  - {name: cluster-a, replicas: 2}
  - {name: cluster-b, replicas: 4}
"""


def work(cluster: str) -> str:
    share = yaml.safe_load((SEED / "job-gpu-training.yaml").read_text())
    return json.dumps({"apiVersion": "work.karmada.io/v1alpha1", "kind": "Work",
                       "metadata": {"name": "default.cols", "namespace": f"karmada-es-{cluster}"},
                       "spec": {"workload": {"manifests": [share]}, "placement": {"generation": 1}}})


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    proc = ServeProcess(tmp_path_factory.mktemp("serve")).start()
    proc.home = tmp_path_factory.mktemp("home")
    yield proc
    assert proc.stop() == 0


def _rows(out: str) -> list[list[str]]:
    return [line.split() for line in out.splitlines()]


def _applied(served: ServeProcess, tmp: Path, cluster: str, status: str) -> None:
    cond = {"type": "Applied", "status": status, "reason": "AppliedSuccessful" if status == "True" else "AppliedFailed",
            "message": "m", "lastTransitionTime": "2026-01-01T00:00:00Z"}
    out = kubectl(served, tmp, "patch", "work", "default.cols", "-n", f"karmada-es-{cluster}", "--subresource=status",
                  "--type=merge", "-p", json.dumps({"status": {"conditions": [cond]}}))
    assert out.returncode == 0, out.stderr


def test_get_pp_shows_upstream_and_wide_columns(served: ServeProcess, tmp_path: Path) -> None:
    applied = kubectl(served, tmp_path, "apply", "-f", str(SEED / "propagationpolicy-volcano-job-policy.yaml"))
    assert applied.returncode == 0, applied.stderr
    narrow = _rows(kubectl(served, tmp_path, "get", "pp").stdout)
    assert narrow[0] == ["NAME", "CONFLICT-RESOLUTION", "PRIORITY", "AGE"]
    assert narrow[1][:3] == ["volcano-job-policy", "Abort", "0"]
    wide = kubectl(served, tmp_path, "get", "pp", "-o", "wide").stdout.splitlines()
    assert wide[0].split() == ["NAME", "CONFLICT-RESOLUTION", "PRIORITY", "PLACEMENT", "CLUSTERS", "WEIGHTS", "AGE"]
    assert wide[1].split()[3:6] == ["Divided/Weighted", "cluster-a,cluster-b", "cluster-a=1,cluster-b=2"]


def test_get_rb_fully_applied_follows_the_works(served: ServeProcess, tmp_path: Path) -> None:
    for cluster in ("cluster-a", "cluster-b"):
        made = kubectl(served, tmp_path, "create", "namespace", f"karmada-es-{cluster}")
        assert made.returncode == 0, made.stderr
    assert kubectl(served, tmp_path, "apply", "-f", "-", stdin=BINDING).returncode == 0

    def fully_applied() -> str:
        out = _rows(kubectl(served, tmp_path, "get", "rb", "cols-job").stdout)
        assert out[0] == ["NAME", "SCHEDULED", "FULLYAPPLIED", "AGE"]
        return out[1][2]

    assert fully_applied() == "False"  # no Work yet
    for cluster in ("cluster-a", "cluster-b"):
        out = kubectl(served, tmp_path, "apply", "-f", "-", stdin=work(cluster))
        assert out.returncode == 0, out.stderr
    _applied(served, tmp_path, "cluster-a", "True")
    assert fully_applied() == "False"  # cluster-b has not applied its share
    _applied(served, tmp_path, "cluster-b", "True")
    assert fully_applied() == "True"
    wide = _rows(kubectl(served, tmp_path, "get", "rb", "cols-job", "-o", "wide").stdout)
    assert wide[0][-2:] == ["CLUSTERS", "AGE"] and wide[1][-2] == "cluster-a:2,cluster-b:4"
    _applied(served, tmp_path, "cluster-b", "False")
    assert fully_applied() == "False"


def test_get_karmada_io_lists_the_karmada_category(served: ServeProcess, tmp_path: Path) -> None:
    """Karmada's CRDs put their kinds in the ``karmada-io`` category; ``kubectl get karmada-io`` lists them."""
    applied = kubectl(served, tmp_path, "apply", "-f", str(SEED / "propagationpolicy-volcano-job-policy.yaml"))
    assert applied.returncode == 0, applied.stderr
    out = kubectl(served, tmp_path, "get", "karmada-io", "-A", "-o", "name")
    assert out.returncode == 0, out.stderr
    assert "propagationpolicy.policy.karmada.io/volcano-job-policy" in out.stdout.splitlines()
    assert not [line for line in out.stdout.splitlines() if "volcano.sh" in line]  # Volcano kinds are not in it
