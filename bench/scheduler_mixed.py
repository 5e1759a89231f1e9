"""Issue 41's session workloads (``python bench/scheduler.py --mixed``).

The cluster: 45 % 8×H100 nodes with 128 cpu, 45 % 8×A100 nodes with 64 cpu, 10 % CPU-only nodes
with 96 cpu, labelled with the GPU product. Three queues weighted 3/1/2. Pending gang jobs of
1–32 pods, each pod asking 0–8 GPUs, 2 pods per node by default:

* ``templates``: pod requests from a few shapes (seven: ``MIXED_TEMPLATES``);
* ``per-job``: every job its own cpu request (one shape per job); sized so every pod can bind
  (the issue's 20k nodes / 40k pods case, "all bound").

The conf is the seed's default plus binpack (``scheduler.CONF_TEXT``). ``--write-state FILE``
writes the same objects as a multi-document YAML for ``caldera schedule -f FILE -o json``.
"""

from __future__ import annotations

import random
from typing import Any

#: (fraction, product or None, cpu, memory, gpus)
MIXED_POOLS = ((0.45, "H100", 128, "2000Gi", 8), (0.45, "A100", 64, "1000Gi", 8), (0.10, None, 96, "768Gi", 0))
MIXED_QUEUES = (("research", 3), ("training", 1), ("inference", 2))
QUEUE_OF_JOB = tuple(name for name, weight in MIXED_QUEUES for _ in range(weight))
#: Pod templates: (cpu, memory, gpus, product, "cpu" or None). An A100 node holds 8 GPUs and 64 cpu, so
#: a GPU template asks at most 8 cpu per GPU, and CPU-only pods go to the CPU pool (a CPU-only pod on a
#: GPU node would strand its GPUs); 2.4 GPUs per pod on average, so at 2 pods per node every pod binds.
MIXED_TEMPLATES = (("8", "64Gi", 1, None), ("16", "128Gi", 2, "A100"), ("32", "256Gi", 4, "H100"),
                   ("64", "512Gi", 8, "H100"), ("16", "128Gi", 2, None), ("16", "32Gi", 0, "cpu"),
                   ("4", "16Gi", 0, "cpu"))


def mixed_cluster(nodes: int) -> list[dict[str, Any]]:
    """Nodes in the issue's proportions (interleaved, so any prefix has the same mix), and the queues."""
    objs: list[dict[str, Any]] = []
    for i in range(nodes):
        slot = i % 20  # 9 H100, 9 A100, 2 CPU-only in every 20 nodes
        pool = MIXED_POOLS[0] if slot < 9 else MIXED_POOLS[1] if slot < 18 else MIXED_POOLS[2]
        _fraction, product, cpu, memory, gpus = pool
        alloc = {"cpu": str(cpu), "memory": memory, "pods": "110"}
        if product:
            alloc["nvidia.com/gpu"] = str(gpus)
            labels = {"pool": "gpu", "nvidia.com/gpu.product": f"NVIDIA-{product}"}
        else:
            labels = {"pool": "cpu"}
        objs.append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"node-{i:05d}", "labels": labels},
                     "status": {"allocatable": alloc}})
    for name, weight in MIXED_QUEUES:
        objs.append({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": name},
                     "spec": {"weight": weight}})
    return objs


def worker_pods(name: str, size: int, requests: dict[str, Any],
                node_selector: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """The ``size`` Pending worker pods of PodGroup ``name`` in namespace bench, sharing one spec (every
    scheduler bench builds its gangs with it)."""
    spec: dict[str, Any] = {"schedulerName": "volcano",
                            "containers": [{"name": "main", "resources": {"requests": requests,
                                                                          "limits": dict(requests)}}]}
    if node_selector:
        spec["nodeSelector"] = node_selector
    return [{"apiVersion": "v1", "kind": "Pod",
             "metadata": {"name": f"{name}-worker-{k}", "namespace": "bench",
                          "annotations": {"scheduling.k8s.io/group-name": name, "volcano.sh/task-spec": "worker"}},
             "spec": spec, "status": {"phase": "Pending"}} for k in range(size)]


def mixed_jobs(pods: int, rng: random.Random, per_job_shapes: bool = False) -> list[dict[str, Any]]:
    """Pending gangs of 1–32 pods in the issue's queues; ``per_job_shapes``: a distinct cpu request per job."""
    objs: list[dict[str, Any]] = []
    made = j = 0
    while made < pods:
        size = min(rng.randint(1, 32), pods - made)
        cpu, memory, gpus, product = MIXED_TEMPLATES[rng.randrange(len(MIXED_TEMPLATES))]
        if per_job_shapes:  # a distinct request per job: slightly less cpu than the template
            cpu = f"{int(cpu) * 1000 - (j % 997) - 1}m"
        name = f"job-{j:05d}"
        queue = QUEUE_OF_JOB[j % len(QUEUE_OF_JOB)]  # jobs in proportion to the queues' weights
        objs.append({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                     "metadata": {"name": name, "namespace": "bench"},
                     "spec": {"minMember": size, "queue": queue}, "status": {"phase": "Inqueue"}})
        requests: dict[str, Any] = {"cpu": cpu, "memory": memory}
        if gpus:
            requests["nvidia.com/gpu"] = str(gpus)
        selector = {"pool": "cpu"} if product == "cpu" else \
            {"nvidia.com/gpu.product": f"NVIDIA-{product}"} if product else None
        objs.extend(worker_pods(name, size, requests, selector))
        made += size
        j += 1
    return objs


def write_state(path: str, objects: list[dict[str, Any]], conf_text: str) -> None:
    """The objects and the conf (as Volcano's ConfigMap) for ``caldera schedule -f PATH -o json``."""
    import yaml

    config_map = {"apiVersion": "v1", "kind": "ConfigMap",
                  "metadata": {"name": "volcano-scheduler-configmap", "namespace": "volcano-system"},
                  "data": {"volcano-scheduler.conf": conf_text}}
    with open(path, "w") as out:
        yaml.safe_dump_all([config_map, *objects], out, sort_keys=False)
