"""Node topology and per-pod extras read into the snapshot (docs/topology.md).

A node's NUMA / GPU / NVLink layout comes from its ``caldera.io/topology`` annotation (the
simulator writes it; on a real cluster an operator does). GPU Feature Discovery labels
(``nvidia.com/gpu.product``, ``nvidia.com/gpu.count``, ``nvidia.com/gpu.memory`` in MiB)
describe the GPUs of a node without that annotation, so device sharing still works there
(GPUs without NUMA locality). A node with neither has no known topology.

A pod's extras are what the topology plugins need beyond its request: its annotations,
whether its QoS class is Guaranteed (the kubelet pins CPUs only for those), and its
``preemptionPolicy``. :func:`shape_extra` is the part that changes predicate results,
so pods differing there never share a predicate cache entry.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from policies.k8s import label_selector
from policies.k8s.label_selector import LabelSelector
from policies.resources import to_internal

TOPOLOGY_ANNOTATION = "caldera.io/topology"
NUMA_POLICY_ANNOTATION = "volcano.sh/numa-topology-policy"
GPU_INDEX_ANNOTATION = "volcano.sh/gpu-index"
TOPOLOGY_DECISION_ANNOTATION = "volcano.sh/topology-decision"
#: Pod annotation and node label naming a revocable zone (the tdm plugin).
REVOCABLE_ZONE_ANNOTATION = "volcano.sh/revocable-zone"
GFD_PRODUCT = "nvidia.com/gpu.product"
GFD_COUNT = "nvidia.com/gpu.count"
GFD_MEMORY = "nvidia.com/gpu.memory"
TOPOLOGY_POLICIES = ("none", "best-effort", "restricted", "single-numa-node")


@dataclass(frozen=True)
class NumaNode:
    id: int
    cpu_count: int  # logical CPUs
    memory: float  # bytes
    gpus: tuple[int, ...]


@dataclass(frozen=True)
class Gpu:
    id: int
    product: str
    memory_gib: float
    numa: int | None


@dataclass(frozen=True)
class NodeTopology:
    cpu_manager_policy: str = "none"
    topology_manager_policy: str = "none"
    numa: tuple[NumaNode, ...] = ()
    gpus: tuple[Gpu, ...] = ()
    nvlink: tuple[tuple[int, ...], ...] = ()
    from_annotation: bool = False

    @property
    def has_numa(self) -> bool:
        return bool(self.numa)

    def nvlink_domain(self, gpu: int) -> int:
        """Index of the NVLink domain of ``gpu`` (-1: no NVLink peer)."""
        for i, group in enumerate(self.nvlink):
            if gpu in group:
                return i
        return -1


@dataclass(frozen=True)
class SpreadConstraint:
    """One ``spec.topologySpreadConstraints`` entry (the nodeorder PodTopologySpread score reads
    the ``ScheduleAnyway`` ones; ``selector`` None selects no pod)."""

    max_skew: int
    topology_key: str
    when_unsatisfiable: str
    selector: LabelSelector | None


@dataclass(frozen=True)
class PodExtras:
    annotations: Mapping[str, str] = field(default_factory=dict)
    guaranteed: bool = False
    preemption_policy: str = ""
    spread: tuple[SpreadConstraint, ...] = ()
    images: tuple[str, ...] = ()  # init containers' then containers' images (ImageLocality)

    @property
    def numa_policy(self) -> str:
        return self.annotations.get(NUMA_POLICY_ANNOTATION, "") or ""


NO_EXTRAS = PodExtras()


class TopologyError(ValueError):
    pass


def _int(value: Any, path: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TopologyError(f"{path}: must be an integer, got {value!r}")
    return value


def parse_topology(text: str) -> NodeTopology:
    """The ``caldera.io/topology`` document; unknown keys are ignored (format version 1)."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TopologyError(f"not valid JSON: {exc.msg} at offset {exc.pos}") from None
    if not isinstance(doc, dict):
        raise TopologyError("must be a JSON object")
    if doc.get("version", 1) != 1:
        raise TopologyError(f"version: only 1 is understood, got {doc.get('version')!r}")
    cpu_policy = str(doc.get("cpuManagerPolicy") or "none")
    topo_policy = str(doc.get("topologyManagerPolicy") or "none")
    if topo_policy not in TOPOLOGY_POLICIES:
        raise TopologyError(f"topologyManagerPolicy: must be one of {', '.join(TOPOLOGY_POLICIES)}, got {topo_policy!r}")
    numa = []
    for i, raw in enumerate(doc.get("numa") or ()):
        where = f"numa[{i}]"
        if not isinstance(raw, dict):
            raise TopologyError(f"{where}: must be an object")
        memory = raw.get("memory") or 0
        try:
            mem = to_internal("memory", memory if isinstance(memory, (int, float)) else str(memory))
        except Exception:  # noqa: BLE001 - any quantity parse failure is the same user error
            raise TopologyError(f"{where}.memory: not a quantity: {memory!r}") from None
        numa.append(NumaNode(
            id=_int(raw.get("id", i), f"{where}.id"), cpu_count=_int(raw.get("cpuCount", 0), f"{where}.cpuCount"),
            memory=mem, gpus=tuple(_int(g, f"{where}.gpus") for g in raw.get("gpus") or ()),
        ))
    if [n.id for n in numa] != list(range(len(numa))):
        raise TopologyError("numa[].id: must be 0..n-1 in order")
    gpus = []
    for i, raw in enumerate(doc.get("gpus") or ()):
        where = f"gpus[{i}]"
        if not isinstance(raw, dict):
            raise TopologyError(f"{where}: must be an object")
        node = raw.get("numa")
        gpus.append(Gpu(
            id=_int(raw.get("id", i), f"{where}.id"), product=str(raw.get("product") or ""),
            memory_gib=float(raw.get("memoryGiB") or 0), numa=None if node is None else _int(node, f"{where}.numa"),
        ))
    if [g.id for g in gpus] != list(range(len(gpus))):
        raise TopologyError("gpus[].id: must be 0..n-1 in order")
    nvlink = tuple(tuple(_int(g, "nvlink") for g in group) for group in doc.get("nvlink") or ())
    return NodeTopology(cpu_policy, topo_policy, tuple(numa), tuple(gpus), nvlink, True)


@lru_cache(maxsize=256)
def _parse_shared(text: str) -> NodeTopology:
    """Nodes of one pool carry the same text: one parsed object serves them all (and lets the
    device plugins memoise per layout)."""
    return parse_topology(text)


def _gfd_topology(labels: Mapping[str, str], allocatable: Mapping[str, Any]) -> NodeTopology | None:
    """GPUs from GPU Feature Discovery labels (or the allocatable count) without NUMA locality."""
    count_text = labels.get(GFD_COUNT) or allocatable.get("nvidia.com/gpu")
    try:
        count = int(str(count_text)) if count_text is not None else 0
    except ValueError:
        return None
    if count <= 0:
        return None
    memory_gib = 0.0
    if labels.get(GFD_MEMORY, "").isdigit():
        memory_gib = int(labels[GFD_MEMORY]) / 1024
    elif allocatable.get("nvidia.com/gpumem") is not None:
        try:
            memory_gib = float(str(allocatable["nvidia.com/gpumem"])) / count
        except ValueError:
            memory_gib = 0.0
    product = labels.get(GFD_PRODUCT, "")
    return NodeTopology(gpus=tuple(Gpu(i, product, memory_gib, None) for i in range(count)))


def node_topology(node: Mapping[str, Any]) -> tuple[NodeTopology | None, str]:
    """A node's topology and, when its annotation is unusable, a problem line (then GFD only)."""
    meta = node.get("metadata") or {}
    name = meta.get("name", "?")
    labels = {str(k): str(v) for k, v in (meta.get("labels") or {}).items()}
    status = node.get("status") or {}
    allocatable = status.get("allocatable") or status.get("capacity") or {}
    text = (meta.get("annotations") or {}).get(TOPOLOGY_ANNOTATION)
    if text:
        try:
            return _parse_shared(str(text)), ""
        except TopologyError as exc:
            problem = f"Node {name}: annotation {TOPOLOGY_ANNOTATION}: {exc}; NUMA topology ignored"
            return _gfd_topology(labels, allocatable), problem
    return _gfd_topology(labels, allocatable), ""


def _whole(values: Mapping[str, Any], name: str) -> str:
    return str(values.get(name)) if values.get(name) is not None else ""


def pod_extras(pod: Mapping[str, Any]) -> PodExtras:
    """Annotations, Guaranteed QoS (every container's cpu and memory limits equal their
    requests, both set) and preemptionPolicy of one pod."""
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    annotations = extras_annotations(meta)
    containers = list(spec.get("containers") or ())
    guaranteed = bool(containers)
    for container in containers + list(spec.get("initContainers") or ()):
        resources = container.get("resources") or {}
        limits = resources.get("limits") or {}
        requests = {**limits, **(resources.get("requests") or {})}
        for name in ("cpu", "memory"):
            if not _whole(limits, name) or _whole(limits, name) != _whole(requests, name):
                guaranteed = False
    spread = tuple(
        SpreadConstraint(int(c.get("maxSkew") or 1), str(c["topologyKey"]), str(c.get("whenUnsatisfiable") or ""),
                         label_selector.parse_or_nothing(c.get("labelSelector")) if c.get("labelSelector") else None)
        for c in spec.get("topologySpreadConstraints") or () if isinstance(c, Mapping) and c.get("topologyKey"))
    images = tuple(str(c["image"]) for c in list(spec.get("initContainers") or ()) + containers
                   if (type(c) is dict or isinstance(c, Mapping)) and c.get("image"))  # dict: the common case, cheaper
    return PodExtras(annotations, guaranteed, str(spec.get("preemptionPolicy") or ""), spread, images)


def extras_annotations(meta: Mapping[str, Any]) -> dict[str, str]:
    """:attr:`PodExtras.annotations` of a pod with metadata ``meta``: the only part of the extras
    that does not read the pod's spec (``pod_versions.task_again`` reads it again alone)."""
    return {str(k): str(v) for k, v in (meta.get("annotations") or {}).items()}


def shape_extra(extras: PodExtras) -> tuple[Any, ...]:
    """The part of the extras that changes predicate results (joins the shape key)."""
    return (extras.numa_policy, extras.guaranteed, extras.annotations.get(REVOCABLE_ZONE_ANNOTATION, ""))
