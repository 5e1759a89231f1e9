"""Builders for placement tests: clusters and jobs in a line each, plus the shared data files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from federation.placement.adapters import cluster_state, job_demand, placement_spec, timestamp
from federation.placement.request import (
    ClusterState,
    JobDemand,
    NodeShape,
    PlacementRequest,
    PlacementSpec,
    TaskDemand,
    labels,
    resources,
)
from policies.codec import admit_all, decode_paths

DATA = Path(__file__).resolve().parents[1] / "data"
PLACEMENT = DATA / "placement"
SEED = DATA / "seed"
EVEN_UID = "4858ca61-3ff8-4095-8267-f3d059d8074c"
ODD_UID = "d43fdeeb-d750-4e2b-bee3-64eb94534f4c"
GPU = "nvidia.com/gpu"


#: The seed clusters' readiness is judged a day after their last transition.
NOW = timestamp("2026-12-02T00:00:00Z") or 0.0


def load(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def admitted(path: Path) -> list[Any]:
    """The objects of a manifest file after decoding and admission, as ``caldera place`` sees them."""
    result = admit_all(decode_paths([path]))
    assert result.ok, [e.describe() for e in result.errors]
    return [item.obj for item in result.objects]


def gpu_nodes(count: int, gpus: int, cpu: int = 128, product: str = "", pods: int = 110) -> NodeShape:
    free = {"cpu": cpu * 1000.0, "memory": float(1 << 40), GPU: gpus * 1000.0, "pods": float(pods)}
    return NodeShape(count, resources(free), labels({"nvidia.com/gpu.product": product} if product else None))


def cluster(name: str, *shapes: NodeShape, **fields: Any) -> ClusterState:
    return ClusterState(name=name, node_shapes=tuple(shapes), **fields)


def task(name: str, replicas: int, gpus: int = 0, min_available: int | None = None, cpu: int = 0,
         selector: dict[str, str] | None = None) -> TaskDemand:
    req = {"pods": 1.0}
    if gpus:
        req[GPU] = gpus * 1000.0
    if cpu:
        req["cpu"] = cpu * 1000.0
    return TaskDemand(name, replicas, replicas if min_available is None else min_available, resources(req),
                      labels(selector))


def job(*tasks: TaskDemand, min_available: int | None = None, uid: str = EVEN_UID, name: str = "job") -> JobDemand:
    total = sum(t.min_available for t in tasks)
    return JobDemand("default", name, uid, tuple(tasks), total if min_available is None else min_available)


def seed_policy() -> PlacementSpec:
    return placement_spec(admitted(SEED / "propagationpolicy-volcano-job-policy.yaml")[0])


def seed_job(name: str, uid: str = EVEN_UID) -> JobDemand:
    obj = admitted(SEED / f"job-{name}.yaml")[0]
    obj.metadata.uid = uid
    return job_demand(obj)


def clusters_file(name: str) -> tuple[ClusterState, ...]:
    return tuple(cluster_state(obj) for obj in admitted(PLACEMENT / name))


def request(job_: JobDemand, spec: PlacementSpec, clusters: tuple[ClusterState, ...], **kw: Any) -> PlacementRequest:
    kw.setdefault("now", NOW)
    return PlacementRequest(job=job_, spec=spec, clusters=clusters, **kw)
