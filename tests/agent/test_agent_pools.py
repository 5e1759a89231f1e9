"""Cluster files: the compact pool form, Node manifests, and what bad files say."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from policies.cluster_layout import load_cluster_file, parse_cluster_text
from policies.errors import InvalidConfiguration
from policies.quantity import parse_quantity

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "clusters"


@pytest.mark.parametrize(("file", "nodes", "gpus", "product"), [
    ("cluster-a.yaml", 8, 8, "NVIDIA-A100-SXM4-80GB"),
    ("cluster-b.yaml", 16, 8, "NVIDIA-H100-80GB-HBM3"),
])
def test_seed_clusters(file: str, nodes: int, gpus: int, product: str) -> None:
    cluster = load_cluster_file(str(EXAMPLES / file))
    assert len(cluster.nodes) == nodes
    for node in cluster.nodes:
        labels = node["metadata"]["labels"]
        assert labels["nvidia.com/gpu.product"] == product
        assert labels["nvidia.com/gpu.count"] == str(gpus)
        assert labels["nvidia.com/gpu.memory"] == str(80 * 1024)  # MiB, as GFD reports it
        assert labels["kubernetes.io/hostname"] == node["metadata"]["name"]
        assert node["status"]["allocatable"]["nvidia.com/gpu"] == str(gpus)
        topo = json.loads(node["metadata"]["annotations"]["caldera.io/topology"])
        assert [len(n["gpus"]) for n in topo["numa"]] == [gpus // 2, gpus // 2]
        assert sorted(g["id"] for g in topo["gpus"]) == list(range(gpus))
        assert topo["topologyManagerPolicy"] == "restricted"


def test_pool_topology_split_and_sharing() -> None:
    cluster = parse_cluster_text("""
pools:
- name: g
  count: 2
  cpu: 30
  memory: 96Gi
  numaNodes: 4
  labels: {team: ml}
  taints: [{key: gpu, value: "yes", effect: NoSchedule}]
  gpus: {product: NVIDIA-A10, count: 6, memoryGiB: 24, sharing: hami, nvlink: pairs}
""")
    node = cluster.nodes[0]
    assert node["metadata"]["name"] == "g-0"
    assert node["metadata"]["labels"]["team"] == "ml"
    assert node["spec"]["taints"] == [{"key": "gpu", "value": "yes", "effect": "NoSchedule"}]
    alloc = node["status"]["allocatable"]
    assert alloc["nvidia.com/gpumem"] == str(6 * 24)
    assert alloc["nvidia.com/gpucores"] == "600"
    topo = json.loads(node["metadata"]["annotations"]["caldera.io/topology"])
    assert [n["cpuCount"] for n in topo["numa"]] == [8, 8, 7, 7]
    assert [n["cpus"] for n in topo["numa"]] == ["0-7", "8-15", "16-22", "23-29"]
    assert [n["gpus"] for n in topo["numa"]] == [[0, 1], [2, 3], [4], [5]]
    assert sum(parse_quantity(n["memory"]).value for n in topo["numa"]) == parse_quantity("96Gi").value
    assert topo["nvlink"] == [[0, 1], [2, 3], [4, 5]]
    assert all(topo["gpus"][g]["numa"] == n["id"] for n in topo["numa"] for g in n["gpus"])


def test_node_manifests_kept() -> None:
    cluster = parse_cluster_text("""
apiVersion: v1
kind: Node
metadata: {name: n1, labels: {x: y}}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "10"}}
---
apiVersion: v1
kind: List
items:
- {kind: Node, metadata: {name: n2}, status: {allocatable: {cpu: "2", memory: 4Gi}}}
""")
    assert [n["metadata"]["name"] for n in cluster.nodes] == ["n1", "n2"]
    assert cluster.nodes[0]["metadata"]["labels"] == {"x": "y", "kubernetes.io/hostname": "n1"}
    assert cluster.nodes[1]["status"]["conditions"][0]["status"] == "True"


BAD = [
    ("pools: [{name: a, count: 1, cpu: 4}]", "pools[0].memory: required"),
    ("pools: [{name: a, cpu: four, memory: 1Gi}]", "pools[0].cpu"),
    ("pools: [{name: a, cpu: 4, memory: 1Gi, count: -1}]", "pools[0].count: must be an integer >= 0"),
    ("pools: [{name: a, cpu: 4, memory: 1Gi, gpu: {}}]", "unknown field(s) gpu"),
    ("pools: [{name: a, cpu: 4, memory: 1Gi, gpus: {count: 8, memoryGiB: 80}}]", "gpus.product: required"),
    ("pools: [{name: a, cpu: 4, memory: 1Gi, topologyManagerPolicy: strict}]", "topologyManagerPolicy: must be one of"),
    ("pools: [{name: a, cpu: 4, memory: 1Gi}, {name: a, cpu: 4, memory: 1Gi}]", "node names must be unique"),
    ("kind: Node\nmetadata: {name: n}\n", "status.allocatable: required"),
    ("pools: []", "the cluster has no nodes"),
    ("just: text", "expected a v1 Node"),
]


@pytest.mark.parametrize(("text", "message"), BAD)
def test_bad_cluster_files(text: str, message: str) -> None:
    with pytest.raises(InvalidConfiguration) as info:
        parse_cluster_text(text, source="bad.yaml")
    assert message in str(info.value)
    assert "bad.yaml" in str(info.value)
