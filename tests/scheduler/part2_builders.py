"""Small builders of Kubernetes objects for the part-2 scheduler tests."""

from __future__ import annotations

import json
from typing import Any

from member_agent.scheduler import build_snapshot, run_cycle
from member_agent.scheduler.framework.clock import FixedClock
from member_agent.scheduler.framework.result import CycleResult
from policies.cluster_layout import build_topology
from policies.scheduler_conf import parse_scheduler_conf

GPU_MEMORY_GIB = 80


def node(name: str, gpus: int = 8, cpu: int = 64, hami: bool = False, numa: int = 1,
         policy: str = "none") -> dict[str, Any]:
    alloc = {"cpu": str(cpu), "memory": "512Gi", "pods": "110", "nvidia.com/gpu": str(gpus)}
    if hami:
        alloc["nvidia.com/gpumem"] = str(gpus * GPU_MEMORY_GIB)
        alloc["nvidia.com/gpucores"] = str(gpus * 100)
    info = {"product": "NVIDIA-A100-SXM4-80GB", "count": gpus, "memoryGiB": GPU_MEMORY_GIB,
            "sharing": "hami" if hami else "none", "nvlink": "all"}
    cpu_policy = "static" if policy != "none" else "none"
    topology = build_topology(cpu, 512 * 1024**3, numa, info, {"cpuManagerPolicy": cpu_policy, "topologyManagerPolicy": policy})
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "annotations": {"caldera.io/topology": json.dumps(topology)}},
            "status": {"allocatable": alloc}}


def queue(name: str, weight: int = 1, reclaimable: bool = True, guarantee: dict[str, str] | None = None,
          deserved: dict[str, str] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"weight": weight, "reclaimable": reclaimable}
    if guarantee:
        spec["guarantee"] = {"resource": guarantee}
    if deserved:
        spec["deserved"] = deserved
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": name}, "spec": spec}


def priority_class(name: str, value: int) -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value}


def pod_group(name: str, min_member: int, queue_name: str, phase: str, priority_class_name: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {"minMember": min_member, "queue": queue_name}
    if priority_class_name:
        spec["priorityClassName"] = priority_class_name
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "default"}, "spec": spec, "status": {"phase": phase}}


def pod(name: str, group: str, requests: dict[str, Any], node_name: str | None = None, priority: int | None = None,
        annotations: dict[str, str] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "main", "resources": {"requests": requests}}]}
    if node_name:
        spec["nodeName"] = node_name
    if priority is not None:
        spec["priority"] = priority
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default",
                         "annotations": {"scheduling.k8s.io/group-name": group, **(annotations or {})}},
            "spec": spec, "status": {"phase": "Running" if node_name else "Pending"}}


def conf(actions: str, second_tier: list[str]) -> Any:
    plugins = "\n".join(f"  - name: {p}" for p in second_tier)
    return parse_scheduler_conf(
        f'actions: "{actions}"\ntiers:\n- plugins:\n  - name: priority\n  - name: gang\n  - name: conformance\n'
        f"- plugins:\n{plugins}\n")


def cycle(objects: list[dict[str, Any]], scheduler_conf: Any) -> CycleResult:
    return run_cycle(build_snapshot(objects), scheduler_conf, FixedClock())
