"""Simulated cluster files: Node manifests, or the compact pool form, into ``v1 Node`` dicts.

A cluster file is YAML in one of two forms (they may be mixed in one file):

* plain ``v1 Node`` manifests (multi-document, or a ``v1 List``), kept as written;
* one document with ``pools:`` (and optionally ``name``, ``provider``, ``region``, ``zone``,
  ``labels`` for the Cluster object, and ``nodes:`` holding more Node manifests)::

    name: cluster-a
    pools:
    - name: a100
      count: 8
      cpu: 64
      memory: 512Gi
      gpus: {product: NVIDIA-A100-SXM4-80GB, count: 8, memoryGiB: 80}
      numaNodes: 2

Each pool node gets GPU Feature Discovery labels (``nvidia.com/gpu.product``, ``.count``,
``.memory`` in MiB, ``.family``, ``.present``), allocatable ``nvidia.com/gpu`` (and, with
``gpus.sharing: hami``, ``nvidia.com/gpumem`` in GB of the whole node and ``nvidia.com/gpucores``
at 100 per GPU), and the ``caldera.io/topology`` annotation of docs/topology.md.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Optional

import yaml

from policies.errors import InvalidConfiguration, InvalidQuantity
from policies.quantity import from_fraction, parse_quantity
from policies.wire_objects import TOPOLOGY_ANNOTATION, Obj

POOL_FIELDS = {
    "name", "count", "cpu", "memory", "pods", "ephemeralStorage", "gpus", "numaNodes", "labels",
    "taints", "annotations", "zone", "cpuManagerPolicy", "topologyManagerPolicy", "nodeNamePrefix",
}
GPU_FIELDS = {"product", "count", "memoryGiB", "sharing", "nvlink"}
FILE_FIELDS = {"apiVersion", "kind", "name", "provider", "region", "zone", "labels", "pools", "nodes", "hyperNodes"}
TOPOLOGY_POLICIES = ("none", "best-effort", "restricted", "single-numa-node")
CPU_MANAGER_POLICIES = ("none", "static")
NVLINK_MODES = ("all", "pairs", "none")
GPU_FAMILIES = (("A100", "ampere"), ("A10", "ampere"), ("A30", "ampere"), ("H100", "hopper"),
                ("H200", "hopper"), ("H800", "hopper"), ("B200", "blackwell"), ("L40", "ada-lovelace"),
                ("L4", "ada-lovelace"), ("V100", "volta"), ("T4", "turing"))


@dataclass
class ClusterFile:
    """What a cluster file describes: the nodes, and what the Cluster object should say."""

    nodes: list[Obj]
    name: Optional[str] = None
    provider: Optional[str] = None
    region: Optional[str] = None
    zone: Optional[str] = None
    labels: dict[str, str] = field(default_factory=dict)
    #: ``topology.volcano.sh/v1alpha1`` HyperNode manifests (``hyperNodes:``), each admitted.
    hyper_nodes: list[Obj] = field(default_factory=list)


def load_cluster_file(path: str, cluster_name: Optional[str] = None) -> ClusterFile:
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except OSError as exc:
        raise InvalidConfiguration(f"cluster file {path}: {exc.strerror}") from exc
    return parse_cluster_text(text, source=path, cluster_name=cluster_name)


def parse_cluster_text(text: str, source: str = "<cluster file>", cluster_name: Optional[str] = None) -> ClusterFile:
    try:
        documents = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as exc:
        raise InvalidConfiguration(f"{source}: not YAML: {exc}") from exc
    result = ClusterFile(nodes=[], name=cluster_name)
    for index, doc in enumerate(documents):
        where = f"{source}[{index}]"
        if not isinstance(doc, dict):
            raise InvalidConfiguration(f"{where}: a cluster file document must be a mapping")
        if doc.get("kind") == "Node":
            result.nodes.append(_checked_node(doc, where))
        elif doc.get("kind") == "List" and doc.get("apiVersion") == "v1":
            for j, item in enumerate(doc.get("items") or []):
                result.nodes.append(_checked_node(item, f"{where}.items[{j}]"))
        elif doc.get("kind") == "HyperNode":
            result.hyper_nodes.append(checked_hypernode(doc, where))
        elif "pools" in doc or "nodes" in doc or "hyperNodes" in doc:
            _read_pool_document(doc, where, result)
        else:
            raise InvalidConfiguration(f"{where}: expected a v1 Node, a v1 List of Nodes, or a document with 'pools'")
    names = [n["metadata"]["name"] for n in result.nodes]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise InvalidConfiguration(f"{source}: node names must be unique, repeated: {', '.join(duplicates)}")
    if not result.nodes:
        raise InvalidConfiguration(f"{source}: the cluster has no nodes")
    hn_names = [h["metadata"]["name"] for h in result.hyper_nodes]
    repeated = sorted({n for n in hn_names if hn_names.count(n) > 1})
    if repeated:
        raise InvalidConfiguration(f"{source}: HyperNode names must be unique, repeated: {', '.join(repeated)}")
    return result


def checked_hypernode(doc: Any, where: str) -> Obj:
    """A HyperNode manifest as written (``metadata.name`` plus ``spec``), admitted by Volcano's
    webhook rules; a broken one is an error naming the document, the field path and the rule."""
    from policies.admission import admit
    from policies.codec import decode_object
    from policies.errors import CalderaError

    if not isinstance(doc, dict):
        raise InvalidConfiguration(f"{where}: a HyperNode must be a mapping")
    obj: Obj = json.loads(json.dumps(doc))
    obj.setdefault("apiVersion", "topology.volcano.sh/v1alpha1")
    obj.setdefault("kind", "HyperNode")
    if not (obj.get("metadata") or {}).get("name"):
        raise InvalidConfiguration(f"{where}.metadata.name: required")
    try:
        admit(decode_object(obj, where))
    except CalderaError as exc:
        raise InvalidConfiguration(f"{where}: {exc}") from None
    return obj


def _read_pool_document(doc: dict[str, Any], where: str, result: ClusterFile) -> None:
    _known_fields(doc, FILE_FIELDS, where)
    result.name = result.name or doc.get("name")
    result.provider = doc.get("provider", result.provider)
    result.region = doc.get("region", result.region)
    result.zone = doc.get("zone", result.zone)
    result.labels.update({str(k): str(v) for k, v in (doc.get("labels") or {}).items()})
    prefix = f"{result.name}-" if result.name else ""
    pools = doc.get("pools") or []
    if not isinstance(pools, list):
        raise InvalidConfiguration(f"{where}.pools: must be a list of pools")
    for i, pool in enumerate(pools):
        result.nodes.extend(pool_nodes(pool, f"{where}.pools[{i}]", prefix, default_zone=result.zone))
    for j, node in enumerate(doc.get("nodes") or []):
        result.nodes.append(_checked_node(node, f"{where}.nodes[{j}]"))
    hyper_nodes = doc.get("hyperNodes") or []
    if not isinstance(hyper_nodes, list):
        raise InvalidConfiguration(f"{where}.hyperNodes: must be a list of HyperNode manifests")
    for j, hyper_node in enumerate(hyper_nodes):
        result.hyper_nodes.append(checked_hypernode(hyper_node, f"{where}.hyperNodes[{j}]"))


def _checked_node(doc: Any, where: str) -> Obj:
    if not isinstance(doc, dict) or doc.get("kind") != "Node":
        raise InvalidConfiguration(f"{where}: expected kind Node")
    name = (doc.get("metadata") or {}).get("name")
    if not name:
        raise InvalidConfiguration(f"{where}.metadata.name: required")
    allocatable = (doc.get("status") or {}).get("allocatable") or (doc.get("status") or {}).get("capacity")
    if not allocatable:
        raise InvalidConfiguration(f"{where}.status.allocatable: required (node {name})")
    for resource, quantity in allocatable.items():
        _quantity(quantity, f"{where}.status.allocatable.{resource}")
    node: Obj = json.loads(json.dumps(doc))
    node.setdefault("apiVersion", "v1")
    status = node.setdefault("status", {})
    status.setdefault("allocatable", dict(allocatable))
    status.setdefault("capacity", dict(status["allocatable"]))
    status.setdefault("conditions", [{"type": "Ready", "status": "True", "reason": "KubeletReady"}])
    node["metadata"].setdefault("labels", {}).setdefault("kubernetes.io/hostname", name)
    return node


def _quantity(value: Any, where: str) -> Any:
    try:
        parse_quantity(value)
    except InvalidQuantity as exc:
        raise InvalidConfiguration(f"{where}: {exc}") from exc
    return value


def _known_fields(obj: dict[str, Any], allowed: set[str], where: str) -> None:
    """Refuse a field the layout does not define, naming it and what is allowed."""
    unknown = sorted(set(obj) - allowed)
    if unknown:
        raise InvalidConfiguration(f"{where}: unknown field(s) {', '.join(unknown)}; allowed: {', '.join(sorted(allowed))}")


def _int(value: Any, where: str, minimum: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise InvalidConfiguration(f"{where}: must be an integer >= {minimum}, got {value!r}")
    return value


def _choice(value: Any, allowed: tuple[str, ...], where: str) -> str:
    if value not in allowed:
        raise InvalidConfiguration(f"{where}: must be one of {', '.join(allowed)}, got {value!r}")
    return str(value)


def gpu_family(product: str) -> Optional[str]:
    upper = product.upper()
    for marker, family in GPU_FAMILIES:
        if marker in upper:
            return family
    return None


def pool_nodes(pool: Any, where: str, name_prefix: str = "", default_zone: Optional[str] = None) -> list[Obj]:
    """The ``count`` identical Node dicts a pool describes."""
    if not isinstance(pool, dict):
        raise InvalidConfiguration(f"{where}: a pool must be a mapping")
    _known_fields(pool, POOL_FIELDS, where)
    name = pool.get("name")
    if not isinstance(name, str) or not name:
        raise InvalidConfiguration(f"{where}.name: required")
    count = _int(pool.get("count", 1), f"{where}.count")
    for required in ("cpu", "memory"):
        if required not in pool:
            raise InvalidConfiguration(f"{where}.{required}: required")
    cpu = parse_quantity(_quantity(pool["cpu"], f"{where}.cpu"))
    memory = parse_quantity(_quantity(pool["memory"], f"{where}.memory"))
    allocatable: dict[str, str] = {
        "cpu": str(pool["cpu"]), "memory": str(pool["memory"]), "pods": str(_int(pool.get("pods", 110), f"{where}.pods", 1)),
    }
    if "ephemeralStorage" in pool:
        allocatable["ephemeral-storage"] = str(_quantity(pool["ephemeralStorage"], f"{where}.ephemeralStorage"))
    numa_count = _int(pool.get("numaNodes", 1), f"{where}.numaNodes", 1)
    labels: dict[str, str] = {"caldera.io/pool": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64"}
    zone = pool.get("zone", default_zone)
    if zone:
        labels["topology.kubernetes.io/zone"] = str(zone)
    gpus = pool.get("gpus")
    gpu_info: Optional[dict[str, Any]] = None
    if gpus is not None:
        gpu_info = _gpu_block(gpus, f"{where}.gpus")
        allocatable["nvidia.com/gpu"] = str(gpu_info["count"])
        labels.update({
            "nvidia.com/gpu.present": "true",
            "nvidia.com/gpu.product": gpu_info["product"],
            "nvidia.com/gpu.count": str(gpu_info["count"]),
            "nvidia.com/gpu.memory": str(gpu_info["memoryGiB"] * 1024),
        })
        family = gpu_family(gpu_info["product"])
        if family:
            labels["nvidia.com/gpu.family"] = family
        if gpu_info["sharing"] == "hami":
            allocatable["nvidia.com/gpumem"] = str(gpu_info["count"] * gpu_info["memoryGiB"])
            allocatable["nvidia.com/gpucores"] = str(gpu_info["count"] * 100)
    labels.update({str(k): str(v) for k, v in (pool.get("labels") or {}).items()})
    taints = pool.get("taints") or []
    if not isinstance(taints, list) or any(not isinstance(t, dict) or "key" not in t or "effect" not in t for t in taints):
        raise InvalidConfiguration(f"{where}.taints: each taint needs key and effect")
    policies = {
        "cpuManagerPolicy": _choice(pool.get("cpuManagerPolicy", "none"), CPU_MANAGER_POLICIES, f"{where}.cpuManagerPolicy"),
        "topologyManagerPolicy": _choice(pool.get("topologyManagerPolicy", "none"), TOPOLOGY_POLICIES,
                                         f"{where}.topologyManagerPolicy"),
    }
    topology = build_topology(int(cpu.value), int(memory.value), numa_count, gpu_info, policies)
    prefix = pool.get("nodeNamePrefix", f"{name_prefix}{name}-")
    nodes = []
    for i in range(count):
        node_name = f"{prefix}{i}"
        node_labels = dict(labels, **{"kubernetes.io/hostname": node_name})
        annotations = {str(k): str(v) for k, v in (pool.get("annotations") or {}).items()}
        annotations[TOPOLOGY_ANNOTATION] = json.dumps(topology, separators=(",", ":"))
        nodes.append({
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": node_name, "labels": node_labels, "annotations": annotations},
            "spec": {"taints": [dict(t) for t in taints]} if taints else {},
            "status": {
                "allocatable": dict(allocatable),
                "capacity": dict(allocatable),
                "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
            },
        })
    return nodes


def _gpu_block(gpus: Any, where: str) -> dict[str, Any]:
    if not isinstance(gpus, dict):
        raise InvalidConfiguration(f"{where}: must be a mapping with product, count, memoryGiB")
    _known_fields(gpus, GPU_FIELDS, where)
    product = gpus.get("product")
    if not isinstance(product, str) or not product:
        raise InvalidConfiguration(f"{where}.product: required (e.g. NVIDIA-A100-SXM4-80GB)")
    return {
        "product": product,
        "count": _int(gpus.get("count"), f"{where}.count", 1),
        "memoryGiB": _int(gpus.get("memoryGiB"), f"{where}.memoryGiB", 1),
        "sharing": _choice(gpus.get("sharing", "none"), ("none", "hami"), f"{where}.sharing"),
        "nvlink": _choice(gpus.get("nvlink", "all"), NVLINK_MODES, f"{where}.nvlink"),
    }


def _cpu_range(start: int, count: int) -> str:
    return f"{start}-{start + count - 1}" if count > 1 else str(start)


def build_topology(cpu_cores: int, memory_bytes: int, numa_count: int, gpu_info: Optional[dict[str, Any]],
                   policies: dict[str, str]) -> dict[str, Any]:
    """The ``caldera.io/topology`` document (docs/topology.md): CPUs, memory and GPUs split evenly
    over NUMA nodes, the remainder going to the lowest ids; NVLink groups from ``gpus.nvlink``."""
    gpu_count = gpu_info["count"] if gpu_info else 0
    numa: list[dict[str, Any]] = []
    cpu_start = 0
    gpu_start = 0
    for nid in range(numa_count):
        cpus = cpu_cores // numa_count + (1 if nid < cpu_cores % numa_count else 0)
        gpus_here = gpu_count // numa_count + (1 if nid < gpu_count % numa_count else 0)
        numa.append({
            "id": nid,
            "cpus": _cpu_range(cpu_start, cpus) if cpus else "",
            "cpuCount": cpus,
            "memory": from_fraction(Fraction(memory_bytes // numa_count), "BinarySI").canonical(),
            "gpus": list(range(gpu_start, gpu_start + gpus_here)),
        })
        cpu_start += cpus
        gpu_start += gpus_here
    gpus = []
    nvlink: list[list[int]] = []
    if gpu_info:
        for nid, node in enumerate(numa):
            for gid in node["gpus"]:
                gpus.append({"id": gid, "product": gpu_info["product"], "memoryGiB": gpu_info["memoryGiB"], "numa": nid})
        ids = list(range(gpu_count))
        if gpu_info["nvlink"] == "all" and gpu_count > 1:
            nvlink = [ids]
        elif gpu_info["nvlink"] == "pairs":
            nvlink = [ids[i:i + 2] for i in range(0, gpu_count - 1, 2)]
    return {"version": 1, **policies, "numa": numa, "gpus": gpus, "nvlink": nvlink}
