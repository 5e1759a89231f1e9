"""Wire-object builders for the status and health tests (Job, ResourceBinding, Work, Cluster, Lease)."""

from __future__ import annotations

import json
from typing import Any

Obj = dict[str, Any]


def job(name: str = "train", namespace: str = "default", min_available: int | None = 9,
        created: str = "2026-12-02T10:00:00Z", tasks: dict[str, int] | None = None) -> Obj:
    tasks = tasks or {"master": 1, "worker": 8}
    spec: Obj = {"schedulerName": "volcano", "queue": "default",
                 "tasks": [{"name": t, "replicas": n, "template": {"spec": {"containers": [
                     {"name": t, "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}}}
                     for t, n in tasks.items()]}
    if min_available is not None:
        spec["minAvailable"] = min_available
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
            "metadata": {"name": name, "namespace": namespace, "uid": "uid-1", "creationTimestamp": created},
            "spec": spec}


def binding(job_name: str, generation: int, placement: dict[str, dict[str, list[int]]],
            scheduled: Obj | None = None, namespace: str = "default") -> Obj:
    """``placement``: cluster -> {task: [replicas, minAvailable]}."""
    clusters = {c: {"replicas": sum(r for r, _m in tasks.values()),
                    "tasks": {t: {"replicas": r, "minAvailable": m} for t, (r, m) in tasks.items()}}
                for c, tasks in placement.items()}
    if scheduled is None:
        scheduled = {"status": "True", "reason": "Success", "message": "placed"} if placement else \
            {"status": "False", "reason": "Unschedulable", "message": "no cluster fits"}
    return {"apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
            "metadata": {"name": f"{job_name}-job", "namespace": namespace, "annotations": {
                "caldera.io/placement-generation": str(generation),
                "caldera.io/placement": json.dumps({"clusters": clusters, "strategy": "Divided", "reason": ""})}},
            "spec": {"resource": {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": job_name,
                                  "namespace": namespace},
                     "clusters": [{"name": c, "replicas": v["replicas"]} for c, v in clusters.items()]},
            "status": {"conditions": [dict(scheduled, type="Scheduled",
                                           lastTransitionTime="2026-12-02T10:00:01Z")]}}


def work(job_name: str, cluster: str, generation: int, phase: str | None = None, *, namespace: str = "default",
         hold: int | None = None, gang: Obj | None = None, message: str | None = None,
         cancelled: bool = False, applied: str | None = None, applied_message: str = "",
         observed: int | None = None, **counts: int) -> Obj:
    manifest = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
                "metadata": {"name": job_name, "namespace": namespace,
                             "annotations": {"caldera.io/placement-generation": str(generation)}},
                "spec": {"tasks": []}}
    spec: Obj = {"workload": {"manifests": [manifest]}}
    if hold is not None:
        spec["placement"] = {"generation": generation, "hold": False, "clusters": hold, "cancelled": cancelled}
    status: Obj = {}
    if applied is not None:
        status["conditions"] = [{"type": "Applied", "status": applied, "reason": "AppliedFailed",
                                 "message": applied_message}]
    if phase is not None:
        share: Obj = {"state": {"phase": phase}, **counts}
        if message:
            share["state"]["message"] = message
        status["manifestStatuses"] = [{"identifier": {"group": "batch.volcano.sh", "version": "v1alpha1",
                                                      "kind": "Job", "namespace": namespace, "name": job_name,
                                                      "ordinal": 0},
                                       "status": share, "health": "Healthy"}]
    if gang is not None:
        status["gang"] = dict(gang, generation=generation)
    if observed is not None:  # the placement generation the agent's status describes
        status["observedPlacementGeneration"] = observed
    obj: Obj = {"apiVersion": "work.karmada.io/v1alpha1", "kind": "Work",
                "metadata": {"name": f"{namespace}.{job_name}", "namespace": f"karmada-es-{cluster}",
                             "labels": {"caldera.io/job": f"{namespace}.{job_name}"}},
                "spec": spec}
    if status:
        obj["status"] = status
    return obj


def cluster(name: str, created: str = "2026-12-02T10:00:00Z", ready: str | None = "True",
            taints: list[Obj] | None = None, gpus: list[Obj] | None = None) -> Obj:
    status: Obj = {}
    if ready is not None:
        status["conditions"] = [{"type": "Ready", "status": ready, "reason": "ClusterReady",
                                 "lastTransitionTime": created}]
    if gpus is not None:
        status["gpus"] = gpus
    obj: Obj = {"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
                "metadata": {"name": name, "creationTimestamp": created},
                "spec": {"syncMode": "Pull", **({"taints": taints} if taints else {})}}
    if status:
        obj["status"] = status
    return obj


def lease(name: str, renewed: str, duration: int = 40) -> Obj:
    return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": name, "namespace": "karmada-cluster"},
            "spec": {"holderIdentity": name, "leaseDurationSeconds": duration, "renewTime": renewed}}
