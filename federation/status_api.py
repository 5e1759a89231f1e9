"""``GET /status``: one JSON document for dashboards and ``caldera demo`` (shape: docs/status.md).

The handler runs inside the API server and reads the store directly (no HTTP round trips):
clusters (readiness, lease age, taints, GPUs free/total by model, queues), federated jobs
(phase, per-cluster shares, why pending) and placement latency percentiles. Any valid token
(viewer, agent or admin) may read it; the auth middleware rejects requests without one.
:func:`status_document` is pure so tests can call it on plain objects.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any

import orjson
from aiohttp import web
from prometheus_client import CollectorRegistry

from federation import metrics
from federation.fleet_metrics import FleetCollector
from policies.k8s.timestamps import instant
from policies.kinds import KindInfo, lookup

Obj = dict[str, Any]
#: ``list_objects(kind, namespace or None)``: every stored object of a kind (the API server's registry)
ListObjects = Callable[[KindInfo, str | None], list[Obj]]
CLUSTERS = lookup("cluster.karmada.io/v1alpha1", "Cluster")
LEASES = lookup("coordination.k8s.io/v1", "Lease")
JOBS = lookup("batch.volcano.sh/v1alpha1", "Job")
BINDINGS = lookup("work.karmada.io/v1alpha2", "ResourceBinding")
LEASE_NAMESPACE = "karmada-cluster"
STATUS_VERSION = "caldera.io/status/v1"


def _condition(obj: Obj | None, type_: str) -> Obj:
    for cond in ((obj or {}).get("status") or {}).get("conditions") or []:
        if isinstance(cond, dict) and cond.get("type") == type_:
            return cond
    return {}


def _int(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def cluster_entry(cluster: Obj, lease: Obj | None, now: datetime) -> Obj:
    meta, spec, status = cluster.get("metadata") or {}, cluster.get("spec") or {}, cluster.get("status") or {}
    ready = _condition(cluster, "Ready")
    renewed = instant(((lease or {}).get("spec") or {}).get("renewTime"))
    taints = [{"key": t.get("key"), "effect": t.get("effect")} for t in spec.get("taints") or []
              if isinstance(t, dict)]
    gpus = [g for g in status.get("gpus") or [] if isinstance(g, dict)]
    by_model: dict[str, Obj] = {}
    for gpu in gpus:
        model = by_model.setdefault(str(gpu.get("product") or "unknown"), {"free": 0, "total": 0})
        model["free"] += _int(gpu.get("free"))
        model["total"] += _int(gpu.get("total"))
    nodes = status.get("nodeSummary") or {}
    return {
        "name": meta.get("name"),
        "ready": ready.get("status") or "Unknown",
        "readyReason": ready.get("reason") or "",
        "readyMessage": ready.get("message") or "",
        "leaseAgeSeconds": round((now - renewed).total_seconds(), 3) if renewed else None,
        "leaseDurationSeconds": ((lease or {}).get("spec") or {}).get("leaseDurationSeconds"),
        "schedulable": not any(t["effect"] in ("NoSchedule", "NoExecute") for t in taints),
        "taints": taints,
        "region": spec.get("region"), "zones": spec.get("zones") or ([spec["zone"]] if spec.get("zone") else []),
        "nodes": {"ready": _int(nodes.get("readyNum")), "total": _int(nodes.get("totalNum"))},
        "gpus": {"free": sum(m["free"] for m in by_model.values()),
                 "total": sum(m["total"] for m in by_model.values()), "byModel": by_model},
        "queues": status.get("queues") or [],
    }


def job_entry(job: Obj, binding: Obj | None) -> Obj:
    meta, spec, status = job.get("metadata") or {}, job.get("spec") or {}, job.get("status") or {}
    state = status.get("state") or {}
    phase = state.get("phase") or "Pending"
    created = instant(meta.get("creationTimestamp"))
    scheduled = _condition(binding, "Scheduled")
    scheduled_at = instant(scheduled.get("lastTransitionTime")) if scheduled.get("status") == "True" else None
    latency = (scheduled_at - created).total_seconds() if created and scheduled_at else None
    waiting = None
    if phase in ("Pending", "Restarting"):
        waiting = state.get("message") or scheduled.get("message") or "waiting for placement"
    return {
        "namespace": meta.get("namespace"), "name": meta.get("name"), "queue": spec.get("queue") or "default",
        "phase": phase, "reason": state.get("reason") or "", "message": state.get("message") or "",
        "waitingReason": waiting,
        "minAvailable": status.get("minAvailable", spec.get("minAvailable")),
        **{k: _int(status.get(k)) for k in ("pending", "running", "succeeded", "failed")},
        "clusters": status.get("clusters") or [],
        "createdAt": meta.get("creationTimestamp"),
        "scheduledAt": scheduled.get("lastTransitionTime") if scheduled_at else None,
        "placementLatencySeconds": max(0.0, latency) if latency is not None else None,
    }


def status_document(clusters: Iterable[Obj], leases: Iterable[Obj], jobs: Iterable[Obj],
                    bindings: Iterable[Obj], now: datetime, observed: Obj | None = None) -> Obj:
    """The ``GET /status`` document (docs/status.md). ``observed``: in-process latency summary."""
    lease_by_name = {(lz.get("metadata") or {}).get("name"): lz for lz in leases
                     if (lz.get("metadata") or {}).get("namespace") == LEASE_NAMESPACE}
    binding_by_key = {((b.get("metadata") or {}).get("namespace"), (b.get("metadata") or {}).get("name")): b
                      for b in bindings}
    cluster_rows = [cluster_entry(c, lease_by_name.get((c.get("metadata") or {}).get("name")), now)
                    for c in clusters]
    job_rows = []
    for job in jobs:
        meta = job.get("metadata") or {}
        rb = binding_by_key.get((meta.get("namespace"), f"{meta.get('name')}-job"))
        job_rows.append(job_entry(job, rb))
    latencies = [j["placementLatencySeconds"] for j in job_rows if j["placementLatencySeconds"] is not None]
    return {
        "apiVersion": STATUS_VERSION,
        "generatedAt": now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        "summary": {
            "clusters": len(cluster_rows),
            "readyClusters": sum(1 for c in cluster_rows if c["ready"] == "True"),
            "gpus": {"free": sum(c["gpus"]["free"] for c in cluster_rows),
                     "total": sum(c["gpus"]["total"] for c in cluster_rows)},
            "jobs": len(job_rows),
            "jobsByPhase": dict(sorted(Counter(j["phase"] for j in job_rows).items())),
        },
        "clusters": cluster_rows,
        "jobs": job_rows,
        "placementLatency": {
            "observed": observed if observed is not None else {"count": 0},
            "fromTimestamps": metrics.latency_summary(latencies),
        },
    }


def controller_leader(leases: list[dict[str, Any]], now: datetime,
                      here: dict[str, bool] | None = None) -> dict[str, Any]:
    """Who runs the controllers: the holder of Lease caldera-system/caldera-controllers, if still fresh.

    ``here``: this process's candidates (identity -> leading now). A holder that is one of them but
    no longer leads (it missed its renew deadline: paused, starved) is not reported as the leader."""
    lease = next((obj for obj in leases if obj["metadata"]["name"] == "caldera-controllers"), None)
    candidates = {"candidates": dict(here)} if here else {}
    if lease is None:
        return {"leaderElection": bool(here), "leader": None, **candidates}
    spec = lease.get("spec") or {}
    renewed = spec.get("renewTime")
    moment = instant(renewed)
    age = (now - moment).total_seconds() if moment is not None else None
    duration = float(spec.get("leaseDurationSeconds") or 0)
    holder = spec.get("holderIdentity") or None
    fresh = holder and age is not None and age <= duration and (here or {}).get(holder, True)
    return {"leaderElection": True, "leader": holder if fresh else None,
            "holderIdentity": holder, "renewTime": renewed, "leaseDurationSeconds": duration,
            "leaseTransitions": spec.get("leaseTransitions") or 0, **candidates}


def add_routes(app: web.Application, list_objects: ListObjects, metrics_registry: CollectorRegistry,
               clock: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
    """Mount ``GET /status`` and serve the federation metrics on the server's ``/metrics``.

    The API server passes its registry's lister and its metrics registry (federation/apiserver/
    app.py), so this module needs no import of the API server.
    """
    metrics.expose_in(metrics_registry)
    metrics_registry.register(FleetCollector(lambda info: list_objects(info, None), lambda: clock().timestamp()))

    async def status(_request: web.Request) -> web.Response:
        doc = status_document(list_objects(CLUSTERS, None), list_objects(LEASES, LEASE_NAMESPACE),
                              list_objects(JOBS, None), list_objects(BINDINGS, None), clock(),
                              metrics.placement_latency_summary())
        doc["controllers"] = controller_leader(list_objects(LEASES, "caldera-system"), clock(),
                                               metrics.leader_states("caldera-controllers"))
        return web.Response(body=orjson.dumps(doc), content_type="application/json")

    app.router.add_get("/status", status)
