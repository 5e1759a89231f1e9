"""Binding preemption in the placement controller, behind Karmada's feature gates.

``ResourceBindingPreemption`` (off by default, as in the proposal): a job whose binding's
``preemptionPolicy`` is ``PreemptLowerPriority`` and that fits nowhere may clear the placement of
lower-priority bindings in its namespace (every namespace with
``CrossNamespaceResourceBindingPreemption`` too). The victims and the cluster are chosen by the pure
:func:`federation.placement.binding_preemption.choose` from what the controller's caches show:

* a cluster's free capacity: its ``resourceSummary`` (allocatable − allocated − allocating; the node
  shapes' total when it reports none), minus the shares assumed there for other jobs;
* a running binding's usage there: its ``caldera.io/placement`` share on that cluster × its pods'
  requests; its priority: its ``spec.schedulePriority.priority`` (0 when unset).

A victim leaves **every** cluster it is on (its gang leaves as a unit): its ``spec.clusters`` is
emptied under a new generation (dispatch withdraws every Work), ``Scheduled=False`` with reason
``Preempted``, a Warning Event ``Preempted`` on its Job, and it goes back to the scheduling queue
whole. The preemptor waits in the unschedulable set until the freed cluster reports; it does not
preempt again for ``preemption_grace_seconds``.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any, Protocol

from federation.controllers import binding as b
from federation.controllers import binding_priority
from federation.controllers import common as c
from federation.controllers.assumed import AssumedShares
from federation.controllers.matching import match_policy
from federation.controllers.requeue_events import free_summary, shape_free
from federation.controllers.runner import Informer
from federation.controllers.sched_queue import SchedulingQueue
from federation.controllers.triggers import Attempt
from federation.placement.adapters import job_demand
from federation.placement.binding_preemption import ClusterRoom, Preemption, Running, choose
from federation.placement.request import ClusterState

Obj = dict[str, Any]
Key = tuple[str, str]


class PlacementController(Protocol):
    """What binding preemption reads and calls of the placement controller
    (federation/controllers/placement.py, which calls it): a protocol, so this module needs no
    import of that controller."""

    jobs: Informer
    clusters: Informer
    bindings: Informer
    assumed: AssumedShares
    attempts: dict[Key, Attempt]
    preempted_at: dict[Key, float]
    schedq: SchedulingQueue
    options: Any

    def policies_for(self, namespace: str) -> list[Obj]: ...

    def _usable(self, policy: Mapping[str, Any], now: float) -> tuple[ClusterState, ...]: ...

    def _priority(self, policy: Obj, job: Obj) -> binding_priority.ResolvedPriority: ...

    async def _write_binding(self, rb: Obj | None, body: Obj) -> Obj: ...

    async def _write_status(self, rb: Obj | None, status: dict[str, Any]) -> None: ...

    async def _event(self, job: Obj, reason: str, message: str, type_: str = "Normal") -> None: ...
GATE = "ResourceBindingPreemption"
CROSS_NAMESPACE_GATE = "CrossNamespaceResourceBindingPreemption"


def enabled(gates: Mapping[str, bool], name: str = GATE) -> bool:
    return bool(gates.get(name, False))


def demand_total(job: Obj) -> dict[str, float]:
    """The job's whole request per resource (every replica of every task)."""
    total: dict[str, float] = {}
    for task in job_demand(job).tasks:
        for resource, amount in task.request:
            total[resource] = total.get(resource, 0.0) + amount * task.replicas
    return total


def share_usage(job: Obj, rb: Obj) -> dict[str, dict[str, float]]:
    """cluster -> what the binding's current share there occupies, per resource."""
    placement = b.placement_of(rb) or {}
    requests = {t.name: t.request for t in job_demand(job).tasks}
    out: dict[str, dict[str, float]] = {}
    for cluster, entry in (placement.get("clusters") or {}).items():
        usage: dict[str, float] = {}
        for task, share in (entry.get("tasks") or {}).items():
            for resource, amount in requests.get(task, ()):
                usage[resource] = usage.get(resource, 0.0) + amount * int(share.get("replicas") or 0)
        out[cluster] = usage
    return out


def _cluster_free(cluster: Obj) -> dict[str, float]:
    if (cluster.get("status") or {}).get("resourceSummary"):
        return free_summary(cluster)
    return shape_free(cluster)


def rooms(ctrl: PlacementController, job: Obj, policy: Obj, now: float, cross_namespace: bool) -> list[ClusterRoom]:
    """Every cluster this job's policy could use, with its free capacity and the running bindings."""
    names = {s.name for s in ctrl._usable(policy, now) if s.ready == "True"}
    allowed = (((policy.get("spec") or {}).get("placement") or {}).get("clusterAffinity") or {}).get("clusterNames")
    if allowed:
        names &= set(allowed)
    uid = job["metadata"].get("uid", "")
    assumed: dict[str, dict[str, float]] = {}
    for workload in ctrl.assumed.others(uid):
        slot = assumed.setdefault(workload.cluster, {})
        for request, replicas in workload.components:
            for resource, amount in request:
                slot[resource] = slot.get(resource, 0.0) + amount * replicas
    running: dict[str, list[Running]] = {}
    namespace = job["metadata"].get("namespace", "")
    for rb in ctrl.bindings.items():
        meta = rb.get("metadata") or {}
        if not cross_namespace and meta.get("namespace") != namespace:
            continue
        victim = ctrl.jobs.get(meta.get("namespace", ""), ((rb.get("spec") or {}).get("resource") or {}).get("name", ""))
        if victim is None or victim["metadata"].get("uid") == uid or not (rb.get("spec") or {}).get("clusters"):
            continue
        prio = int((((rb.get("spec") or {}).get("schedulePriority")) or {}).get("priority") or 0)
        for cluster, usage in share_usage(victim, rb).items():
            running.setdefault(cluster, []).append(Running((meta.get("namespace", ""), victim["metadata"]["name"]),
                                                           prio, usage))
    out = []
    for name in sorted(names):
        cluster = ctrl.clusters.get("", name)
        if cluster is None:
            continue
        free = _cluster_free(cluster)
        for resource, amount in assumed.get(name, {}).items():
            free[resource] = free.get(resource, 0.0) - amount
        out.append(ClusterRoom(name, free, tuple(running.get(name, ()))))
    return out


async def preempt_for(ctrl: PlacementController, job: Obj, policy: Obj,
                      priority: binding_priority.ResolvedPriority, now: float,
                      allowed: Callable[[Sequence[Hashable]], bool] | None = None) -> Preemption | None:
    """Clear the victims that make room for ``job`` (None: preemption is off, not allowed or no help).

    ``allowed`` (fleet queues, federation/controllers/fleet_reclaim.py): whether a set of victims
    respects the queues; a candidate it refuses alone is never considered, and a choice it refuses
    as a whole is dropped."""
    gates = ctrl.options.feature_gates
    key = (job["metadata"].get("namespace", ""), job["metadata"]["name"])
    if not enabled(gates) or not priority.preempts:
        return None
    if now - ctrl.preempted_at.get(key, -1e18) < ctrl.options.preemption_grace_seconds:
        return None  # the victims of the last round are still leaving
    candidates = rooms(ctrl, job, policy, now, enabled(gates, CROSS_NAMESPACE_GATE))
    if allowed is not None:
        candidates = [ClusterRoom(r.name, r.free, tuple(v for v in r.running if allowed((v.key,))))
                      for r in candidates]
    chosen = choose(candidates, demand_total(job), priority.priority)
    if chosen is None or (allowed is not None and not allowed(chosen.victims)):
        return None
    ctrl.preempted_at[key] = now
    for victim in chosen.victims:
        await _evict(ctrl, victim, job, chosen.cluster, priority.priority, now)  # type: ignore[arg-type]
    return chosen


async def _evict(ctrl: PlacementController, key: Key, preemptor: Obj, cluster: str, priority: int,
                 now: float) -> None:
    """Withdraw the victim from every cluster under a new generation and queue it again whole."""
    namespace, name = key
    job = ctrl.jobs.get(namespace, name)
    rb = ctrl.bindings.get(namespace, c.rb_name(name))
    if job is None or rb is None:
        return
    match = match_policy(job, ctrl.policies_for(namespace))
    resolved = ctrl._priority(match.policy, job) if match.policy is not None else binding_priority.ResolvedPriority()
    by = f"{preemptor['metadata'].get('namespace', '')}/{preemptor['metadata']['name']}"
    message = f"preempted by {by} (priority {priority}) to make room on cluster {cluster}"
    body = b.binding_body(job, match.policy, rb, [], b.generation_of(rb) + 1, None, now, placed=True)
    body["spec"]["schedulePriority"] = resolved.spec()
    rb = await ctrl._write_binding(rb, body)
    conditions = c.set_condition(((rb or {}).get("status") or {}).get("conditions"), "Scheduled", "False",
                                 "Preempted", message, now)
    await ctrl._write_status(rb, {"conditions": conditions})
    ctrl.assumed.forget(job["metadata"].get("uid", ""))
    ctrl.attempts.pop(key, None)
    ctrl.schedq.push(key, resolved.priority, c.parse_time(job["metadata"].get("creationTimestamp")))
    await ctrl._event(job, "Preempted", message, "Warning")
