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


@pytest.fixture(scope="module")
def member_served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    """A member-cluster stand-in: pods are read-only at a federation (docs/protocol.md "Member pods")."""
    proc = ServeProcess(tmp_path_factory.mktemp("member"), "--member-mode").start()
    proc.home = tmp_path_factory.mktemp("member-home")
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


WORKLOADS: list[dict[str, Any]] = yaml.safe_load(
    (Path(__file__).parent / "data" / "protobuf" / "workloads.yaml").read_text())


def _answered_in_protobuf(stderr: str) -> bool:
    # -v=8 prints each response's headers; a typed client's GET must come back as protobuf
    return "Content-Type: application/vnd.kubernetes.protobuf" in stderr


def test_kubectl_describe_and_cordon_read_pods_and_nodes_in_protobuf(member_served: ServeProcess,
                                                                     tmp_path: Path) -> None:
    served = member_served
    pod, node = (yaml.safe_load(yaml.safe_dump(o)) for o in WORKLOADS)
    for obj in (pod, node):
        obj["metadata"] = {k: v for k, v in obj["metadata"].items() if k in ("name", "namespace", "labels")}
        obj.pop("status")
    pod["metadata"]["namespace"] = "default"
    for obj in (node, pod):
        made = kubectl(served, tmp_path, "create", "-f", "-", stdin=json.dumps(obj))
        assert made.returncode == 0, made.stderr
    described = kubectl(served, tmp_path, "describe", "pod", "train-worker-1", "-v=8")
    assert described.returncode == 0, described.stderr
    assert _answered_in_protobuf(described.stderr)
    for shown in ("nvidia.com/gpu:     4", "node.kubernetes.io/not-ready:NoExecute op=Exists for 300s",
                  "ghcr.io/example/trainer:2.3", "imagenet", "http-get http://:metrics/healthz"):
        assert shown in described.stdout, shown
    node_view = kubectl(served, tmp_path, "describe", "node", "gpu-node-3", "-v=8")
    assert node_view.returncode == 0 and _answered_in_protobuf(node_view.stderr), node_view.stderr
    assert "nvidia.com/gpu=present:NoSchedule" in node_view.stdout
    cordoned = kubectl(served, tmp_path, "cordon", "gpu-node-3")  # a typed GET, then a patch
    assert cordoned.returncode == 0, cordoned.stderr
    got = json.loads(kubectl(served, tmp_path, "get", "node", "gpu-node-3", "-o", "json").stdout)
    assert got["spec"]["unschedulable"] is True and got["spec"]["taints"][0]["key"] == "nvidia.com/gpu"
