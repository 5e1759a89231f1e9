"""The Alibaba openb trace (``cluster-trace-gpu-v2023``): pod list and node list CSVs.

Pods: ``name,cpu_milli,memory_mib,num_gpu,gpu_milli[,gpu_spec,qos,...]`` — ``gpu_milli`` is
the share of one GPU when ``num_gpu`` is 1 (below 1000: a GPU-sharing pod). Nodes:
``sn,cpu_milli,memory_mib,gpu,model``. They become Kubernetes objects the way a cluster would
carry them: a shared pod asks ``nvidia.com/gpucores`` (percent of one GPU, HAMi's resource),
a whole-GPU pod ``nvidia.com/gpu``; a node offers both, and names its GPU model with the GPU
Feature Discovery label, so the scheduler sees each physical GPU (framework/topology.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator

from simulator.csv_rows import csv_records
from simulator.errors import TraceError

POD_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli")
NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu")
MAX_PODS_PER_NODE = 110


@dataclass(frozen=True)
class PodRow:
    name: str
    cpu_milli: int
    memory_mib: int
    num_gpu: int
    gpu_milli: int
    gpu_spec: str = ""

    @property
    def gpus(self) -> float:
        """GPUs requested, a fraction for a sharing pod."""
        if self.num_gpu == 1 and self.gpu_milli < 1000:
            return self.gpu_milli / 1000
        return float(self.num_gpu)

    @property
    def shared(self) -> bool:
        return self.num_gpu == 1 and 0 < self.gpu_milli < 1000


@dataclass(frozen=True)
class NodeRow:
    name: str
    cpu_milli: int
    memory_mib: int
    gpus: int
    model: str


def _rows(path: str, required: tuple[str, ...]) -> Iterator[tuple[int, dict[str, str]]]:
    with open(path, encoding="utf-8", newline="") as handle:
        yield from csv_records(handle, path, required)


def _int(path: str, line: int, record: dict[str, str], column: str, low: int, high: int | None = None) -> int:
    text = (record.get(column) or "").strip()
    try:
        value = int(float(text)) if text else -1
    except ValueError:
        raise TraceError(path, line, column, f"{text!r} is not a number") from None
    if value < low or (high is not None and value > high):
        bound = f"{low}..{high}" if high is not None else f">= {low}"
        raise TraceError(path, line, column, f"{text!r} must be {bound}")
    return value


def read_pods(path: str, skip_bad: bool = False) -> tuple[list[PodRow], list[TraceError]]:
    pods: list[PodRow] = []
    bad: list[TraceError] = []
    for line, record in _rows(path, POD_COLUMNS):
        try:
            num_gpu = _int(path, line, record, "num_gpu", 0)
            gpu_milli = _int(path, line, record, "gpu_milli", 0, 1000)
            if num_gpu == 1 and gpu_milli == 0:
                raise TraceError(path, line, "gpu_milli", "a pod with num_gpu 1 needs gpu_milli 1..1000")
            pods.append(PodRow(str(record["name"]), _int(path, line, record, "cpu_milli", 0),
                               _int(path, line, record, "memory_mib", 0), num_gpu, gpu_milli,
                               (record.get("gpu_spec") or "").strip()))
        except TraceError as exc:
            if not skip_bad:
                raise
            bad.append(exc)
    return pods, bad


def read_nodes(path: str) -> list[NodeRow]:
    nodes = []
    for line, record in _rows(path, NODE_COLUMNS):
        nodes.append(NodeRow(str(record["sn"]), _int(path, line, record, "cpu_milli", 1),
                             _int(path, line, record, "memory_mib", 1), _int(path, line, record, "gpu", 0),
                             (record.get("model") or "").strip()))
    return nodes


def node_object(node: NodeRow) -> dict[str, Any]:
    allocatable = {"cpu": f"{node.cpu_milli}m", "memory": f"{node.memory_mib}Mi", "pods": str(MAX_PODS_PER_NODE),
                   "nvidia.com/gpu": str(node.gpus), "nvidia.com/gpucores": str(100 * node.gpus)}
    labels = {"kubernetes.io/hostname": node.name}
    if node.model:
        labels["nvidia.com/gpu.product"] = node.model
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": node.name, "labels": labels},
            "status": {"allocatable": allocatable, "capacity": dict(allocatable)}}


def pod_requests(pod: PodRow) -> dict[str, str]:
    requests = {"cpu": f"{pod.cpu_milli}m", "memory": f"{pod.memory_mib}Mi"}
    if pod.shared:
        requests["nvidia.com/gpucores"] = f"{pod.gpu_milli / 10:g}"
    elif pod.num_gpu:
        requests["nvidia.com/gpu"] = str(pod.num_gpu)
    return requests


def pod_object(pod: PodRow, name: str, created: str) -> dict[str, Any]:
    """A pending, group-less pod of the default scheduler name (Volcano's)."""
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "openb", "uid": name, "creationTimestamp": created,
                         "annotations": {}},
            "spec": {"schedulerName": "volcano",
                     "containers": [{"name": "main", "resources": {"requests": pod_requests(pod)}}]},
            "status": {"phase": "Pending"}}
