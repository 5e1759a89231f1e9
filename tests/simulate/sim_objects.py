"""Kubernetes objects for the issue-12 tests (GPU nodes, pods with or without a PodGroup)."""

from __future__ import annotations

from typing import Any

from policies.scheduler_conf import parse_scheduler_conf

CONF = parse_scheduler_conf("""
actions: "enqueue, allocate, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: drf}, {name: predicates}, {name: proportion}, {name: nodeorder}, {name: deviceshare}]
""")


def node(name: str, gpus: int) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
            "status": {"allocatable": {"cpu": "64", "memory": "256Gi", "pods": "110",
                                       "nvidia.com/gpu": str(gpus), "nvidia.com/gpumem": str(16 * gpus),
                                       "nvidia.com/gpucores": str(100 * gpus)}}}


def pod(name: str, requests: dict[str, str], *, group: str | None, node_name: str | None = None,
        phase: str = "Pending", gpu_index: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "w", "uid": name, "annotations": {}}
    if group:
        meta["annotations"]["scheduling.k8s.io/group-name"] = group
    if gpu_index is not None:
        meta["annotations"]["volcano.sh/gpu-index"] = gpu_index
    spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1", "memory": "1Gi", **requests}}}]}
    if node_name:
        spec["nodeName"] = node_name
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": {"phase": phase}}


def podgroup(name: str) -> dict[str, Any]:
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup", "metadata": {"name": name, "namespace": "w"},
            "spec": {"minMember": 1}, "status": {"phase": "Inqueue"}}
