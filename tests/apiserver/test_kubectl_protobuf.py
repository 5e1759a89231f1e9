"""The real kubectl's imperative `create` sub-commands, which send protobuf, against `caldera serve`."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from policies.kinds import by_resource
from tests.apiserver.serve_process import ServeProcess
from tests.apiserver.test_kubectl import kubectl

pytestmark = pytest.mark.slow
CASES: list[dict[str, Any]] = yaml.safe_load(
    (Path(__file__).parent / "data" / "protobuf" / "kubectl_create.yaml").read_text())


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    proc = ServeProcess(tmp_path_factory.mktemp("serve")).start()
    proc.home = tmp_path_factory.mktemp("home")
    yield proc
    assert proc.stop() == 0


def _field(obj: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        obj = obj[int(part)] if isinstance(obj, list) else obj[part]
    return obj


@pytest.mark.parametrize("case", CASES, ids=[" ".join(c["args"][:2]) for c in CASES])
def test_kubectl_create_subcommand(served: ServeProcess, tmp_path: Path, case: dict[str, Any]) -> None:
    ref = case["object"]
    if by_resource(ref["group"], ref["version"], ref["plural"]) is None:
        pytest.skip(f"{ref['plural']}.{ref['group'] or 'core'} is not served")
    if ref.get("namespace") and ref["namespace"] != "default":
        kubectl(served, tmp_path, "create", "namespace", ref["namespace"])  # may exist already
    made = kubectl(served, tmp_path, *case["args"])
    assert made.returncode == 0, made.stderr
    where = ["-n", ref["namespace"]] if ref.get("namespace") else []
    resource = ref["plural"] + (f".{ref['group']}" if ref["group"] else "")
    got = kubectl(served, tmp_path, "get", resource, ref["name"], *where, "-o", "json")
    assert got.returncode == 0, got.stderr
    stored = json.loads(got.stdout)
    for dotted, value in case["expect"].items():
        assert _field(stored, dotted) == value, dotted


def test_kubectl_sends_protobuf_and_reads_protobuf(served: ServeProcess, tmp_path: Path) -> None:
    out = kubectl(served, tmp_path, "create", "configmap", "wire-check", "--from-literal=x=1", "-o", "yaml", "-v=8")
    assert out.returncode == 0, out.stderr
    assert "Content-Type: application/vnd.kubernetes.protobuf" in out.stderr  # the request
    assert yaml.safe_load(out.stdout)["data"] == {"x": "1"}  # the protobuf answer, decoded by kubectl
