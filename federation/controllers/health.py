"""Cluster health controller: Leases in ``karmada-cluster`` -> Cluster ``Ready`` and taints.

Every ``monitor_period`` (and whenever a Lease or Cluster changes) it runs the pure state
machine :func:`federation.controllers.health_state.assess` for each Cluster and writes only
what differs: the ``Ready`` condition through the status subresource, and the managed
``cluster.karmada.io/unreachable`` / ``not-ready`` taints in ``spec.taints`` (admins' taints
are kept). Both writes carry the resourceVersion they were computed from, so a concurrent
edit makes the write fail with 409 and the next round recomputes. Thresholds come from
``caldera serve`` flags through ``ControllerContext.extra`` (see :func:`config_from`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from kubernetes_asyncio.client.exceptions import ApiException

from federation import metrics
from federation.client import ResourceClient, api_client_from_dict
from federation.controllers import fence_check
from federation.controllers.health_state import (
    MANAGED_KEYS,
    HealthConfig,
    Observation,
    Verdict,
    assess,
    merged_taints,
)
from federation.controllers.runner import Informer
from federation.controllers.status_aggregate import parse_stamp, stamp
from federation.events import record_event
from policies.kinds import lookup

Obj = dict[str, Any]
log = logging.getLogger("caldera.controllers.health")

CLUSTERS = lookup("cluster.karmada.io/v1alpha1", "Cluster")
LEASES = lookup("coordination.k8s.io/v1", "Lease")
LEASE_NAMESPACE = "karmada-cluster"
#: Cluster status field the federation owns: the graces it fails over with (docs/protocol.md, Fencing)
TIMING_FIELD = "failoverTiming"

#: ControllerContext.extra keys (set by ``caldera serve`` flags) -> HealthConfig fields
OPTION_KEYS = {"cluster_lease_grace": "lease_grace", "cluster_failover_grace": "failover_grace",
               "cluster_success_threshold": "success_threshold", "cluster_startup_grace": "startup_grace",
               "cluster_monitor_period": "monitor_period", "pod_termination_grace": "pod_termination_grace"}


def config_from(options: Mapping[str, Any]) -> HealthConfig:
    values = {field: float(options[key]) for key, field in OPTION_KEYS.items() if options.get(key) is not None}
    return HealthConfig(**values)


def observe(cluster: Obj, lease: Obj | None) -> Observation:
    meta = cluster.get("metadata") or {}
    ready = next((c for c in (cluster.get("status") or {}).get("conditions") or []
                  if isinstance(c, dict) and c.get("type") == "Ready"), {})
    spec = (lease or {}).get("spec") or {}
    renewed = parse_stamp(spec.get("renewTime") or spec.get("acquireTime"))
    duration = spec.get("leaseDurationSeconds")
    taints = tuple((str(t.get("key")), str(t.get("effect")), t.get("timeAdded"))
                   for t in (cluster.get("spec") or {}).get("taints") or [] if isinstance(t, dict))
    return Observation(str(meta.get("name")), parse_stamp(meta.get("creationTimestamp")), renewed,
                       float(duration) if duration else None, ready.get("status"), ready.get("reason"), taints)


def ready_condition(cluster: Obj) -> Obj:
    return next((c for c in (cluster.get("status") or {}).get("conditions") or []
                 if isinstance(c, dict) and c.get("type") == "Ready"), {})


class HealthController:
    def __init__(self, rc: ResourceClient, api: Any, config: HealthConfig,
                 clock: Callable[[], datetime] | None = None, monotonic: Callable[[], float] | None = None) -> None:
        self.rc = rc
        self.api = api
        self.config = config
        self.clock = clock or (lambda: datetime.now(UTC))
        #: lease ages are measured on this (fencing: a wall-clock step never ages a lease)
        self.monotonic = monotonic or (time.monotonic if clock is None else (lambda: self.clock().timestamp()))
        self.wake = asyncio.Event()
        self.clusters = Informer(rc, CLUSTERS, lambda _t, _o, _old: self.wake.set())
        self.leases = Informer(rc, LEASES, lambda _t, _o, _old: self.wake.set(), namespace=LEASE_NAMESPACE)
        self.recovering: dict[str, datetime | None] = {}
        #: cluster -> (renewTime, our monotonic reading when we first saw it): leases age on our clock
        self.seen: dict[str, tuple[object, float]] = {}
        self.writes = 0

    async def evaluate(self, name: str) -> Verdict | None:
        cluster = self.clusters.store.get(("", name))
        if cluster is None or (cluster.get("metadata") or {}).get("deletionTimestamp"):
            self.recovering.pop(name, None)
            return None
        now = self.clock()
        obs = self._seen_renewal(observe(cluster, self.leases.store.get((LEASE_NAMESPACE, name))), now)
        verdict = assess(obs, self.recovering.get(name), now, self.config)
        self.recovering[name] = verdict.recovering_since
        metrics.CLUSTER_READY.labels(cluster=name).set(1 if verdict.healthy else 0)
        if verdict.lease_age is not None:
            metrics.CLUSTER_LEASE_AGE.labels(cluster=name).set(verdict.lease_age)
        if verdict.undecided:
            return verdict
        was_tainted = obs.is_tainted()
        had_no_execute = any(k in MANAGED_KEYS and e == "NoExecute" for k, e, _a in obs.taints)
        if verdict.healthy:  # clear taints first, then say Ready
            cluster = await self._write_taints(cluster, verdict)
            cluster = await self._write_ready(cluster, verdict, now)
        else:  # say NotReady first, then taint
            cluster = await self._write_ready(cluster, verdict, now)
            cluster = await self._write_taints(cluster, verdict)
        if verdict.healthy and was_tainted:
            await self._event(cluster, "ClusterReady", verdict.message, "Normal")
        elif not verdict.healthy and not was_tainted:
            await self._event(cluster, "ClusterNotReady", verdict.message, "Warning")
        await self._write_timing(cluster, obs)
        if any(e == "NoExecute" for _k, e, _a in verdict.taints) and not had_no_execute:
            await self._event(cluster, "ClusterFailover", f"unhealthy for {self.config.failover_grace:.0f}s: "
                              f"NoExecute taint added, jobs here are re-placed", "Warning")
        return verdict

    def _seen_renewal(self, obs: Observation, now: datetime) -> Observation:
        """``obs`` with the lease renewed when *this controller* first saw its renewTime (fencing:
        the federation measures on its own clock from the last renewal it saw, so a skewed agent
        clock cannot make it fail over early; after a controller start a lease counts as seen
        then, which only delays a failover)."""
        if obs.lease_renewed is None:
            return obs
        known = self.seen.get(obs.name)
        reading = self.monotonic()
        if known is None or known[0] != obs.lease_renewed:
            known = (obs.lease_renewed, reading)
            self.seen[obs.name] = known
        return replace(obs, lease_renewed=now - timedelta(seconds=max(0.0, reading - known[1])))

    async def _write_timing(self, cluster: Obj, obs: Observation) -> None:
        """Publish the graces on the Cluster (``status.failoverTiming``) with the check of the agent's fence."""
        lease = self.config.lease_grace if self.config.lease_grace is not None else (obs.lease_duration or 40.0)
        grace = fence_check.published_termination_grace(lease, self.config.failover_grace,
                                                        self.config.pod_termination_grace)
        wanted: dict[str, Any] = fence_check.timing(lease, self.config.failover_grace, grace)
        status = cluster.get("status") or {}
        result, message = fence_check.check(status.get("fence"), wanted)
        wanted["fenceCheck"] = {"result": result, "message": message}
        current = status.get(TIMING_FIELD)
        if current == wanted:
            return
        patch = {"metadata": {"resourceVersion": cluster["metadata"]["resourceVersion"]},
                 "status": {TIMING_FIELD: wanted}}
        written = await self.rc.patch(CLUSTERS, cluster["metadata"]["name"], patch, subresource="status")
        self._written(written, "ClusterStatus")
        was = ((current or {}).get("fenceCheck") or {}).get("result") if isinstance(current, dict) else None
        if result == "Unsafe" and was != "Unsafe":
            await self._event(dict(written), "UnsafeFence", message, "Warning")

    async def _write_ready(self, cluster: Obj, verdict: Verdict, now: datetime) -> Obj:
        current = ready_condition(cluster)
        if current.get("status") == verdict.ready and (current.get("reason") == verdict.reason or verdict.healthy):
            return cluster
        conditions = [c for c in (cluster.get("status") or {}).get("conditions") or []
                      if isinstance(c, dict) and c.get("type") != "Ready"]
        when = current.get("lastTransitionTime") if current.get("status") == verdict.ready else stamp(now)
        conditions.append({"type": "Ready", "status": verdict.ready, "reason": verdict.reason,
                           "message": verdict.message, "lastTransitionTime": when or stamp(now)})
        patch = {"metadata": {"resourceVersion": cluster["metadata"]["resourceVersion"]},
                 "status": {"conditions": conditions}}
        written = await self.rc.patch(CLUSTERS, cluster["metadata"]["name"], patch, subresource="status")
        self._written(written, "ClusterStatus")
        return dict(written)

    async def _write_taints(self, cluster: Obj, verdict: Verdict) -> Obj:
        current = list((cluster.get("spec") or {}).get("taints") or [])
        wanted = merged_taints(current, verdict)
        if wanted == current:
            return cluster
        patch = {"metadata": {"resourceVersion": cluster["metadata"]["resourceVersion"]},
                 "spec": {"taints": wanted or None}}
        written = await self.rc.patch(CLUSTERS, cluster["metadata"]["name"], patch)
        self._written(written, "ClusterTaints")
        return dict(written)

    def _written(self, obj: Obj, kind: str) -> None:
        self.clusters.remember(obj)
        self.writes += 1
        metrics.STATUS_WRITES.labels(kind=kind).inc()

    async def _event(self, cluster: Obj, reason: str, message: str, type_: str) -> None:
        try:
            await record_event(self.api, cluster, reason, message, type_, component="caldera-cluster-health")
        except (ApiException, OSError) as exc:
            log.warning("recording event %s for Cluster %s failed: %s", reason, cluster["metadata"]["name"], exc)

    async def round(self) -> None:
        for _ns, name in sorted(self.clusters.store):
            try:
                await self.evaluate(name)
            except ApiException as exc:
                if exc.status not in (404, 409):
                    log.warning("updating health of Cluster %s failed: %s", name, exc.reason)
            except Exception:  # noqa: BLE001 - one cluster must not stop the others
                log.exception("assessing health of Cluster %s failed", name)

    async def work_loop(self, stop: asyncio.Event) -> None:
        await asyncio.gather(self.clusters.synced.wait(), self.leases.synced.wait())
        while not stop.is_set():
            self.wake.clear()
            await self.round()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.wake.wait(), self.config.monitor_period)

    async def run(self, stop: asyncio.Event) -> None:
        await asyncio.gather(self.clusters.run(stop), self.leases.run(stop), self.work_loop(stop))


async def health_controller(context: Any) -> None:
    """Entry point for ``federation.controllers.CONTROLLERS``."""
    config = config_from(getattr(context, "extra", {}) or {})
    async with api_client_from_dict(context.kubeconfig) as api:
        await HealthController(ResourceClient(api), api, config).run(context.stop)
