"""Reclaim across clusters in the placement controller (a mixin of ``PlacementController``).

When the federation's scheduler conf names the ``reclaim`` (or ``gangreclaim``) action and a Job its
queue admitted fits on no cluster, the pure :func:`~federation.fleet_queues.reclaim.plan_reclaim`
chooses whole gangs of queues above their fleet-wide deserved share to evict, from the fewest
clusters, lowest priority first, never below a guarantee nor touching ``volcano.sh/preemptable:
"false"``. From what the controller's caches show:

* a cluster's free room: as binding preemption sees it (``resourceSummary``, less the shares
  assumed there for other jobs), on the clusters the reclaimer's policy may use;
* a placed gang: its ledger entry (queue, priority, request) and its ``caldera.io/placement``
  share on each cluster × its pods' requests.

Each victim follows its Job's ``PodEvicted`` policy, as for a lost cluster
(:mod:`federation.controllers.failover`): a restart action (or none) withdraws every share under a
new generation (``Scheduled=False``, reason ``Reclaimed``) and the Job waits as Inqueue to be
admitted and placed again, whole; ``AbortJob``/``TerminateJob``/``CompleteJob`` end it. Each
eviction is a Warning Event ``Reclaimed`` on the victim naming the reclaimer, the victim and both
queues' shares, and a Normal Event ``Reclaiming`` on the reclaimer. The reclaimer goes straight back
to the scheduling queue and does not reclaim again for ``preemption_grace_seconds``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Hashable, Sequence
from typing import Any

from federation.controllers import binding as b
from federation.controllers import common as c
from federation.controllers import failover, preempting
from federation.controllers.matching import match_policy
from federation.fleet_queues import FleetQueues
from federation.fleet_queues.reclaim import Placed, Reclaimer, ReclaimPlan, may_preempt, plan_reclaim
from federation.placement.adapters import job_demand
from policies.capacity_summary import PREEMPTABLE_KEY

log = logging.getLogger("caldera.controllers.fleet_reclaim")
Obj = dict[str, Any]
Key = tuple[str, str]


def preemptable(job: Obj) -> bool:
    """``volcano.sh/preemptable: "false"`` on the Job (annotation or label) keeps it from every eviction."""
    meta = job.get("metadata") or {}
    for where in (meta.get("annotations") or {}, meta.get("labels") or {}):
        if str(where.get(PREEMPTABLE_KEY, "")).lower() == "false":
            return False
    return True


def placed_gangs(fleet: FleetQueues, jobs: Any, bindings: Any, skip: str = "") -> list[Placed]:
    """Every placed gang the ledger knows, with what its binding's shares hold per cluster."""
    out = []
    for rb in bindings.items():
        if not (rb.get("spec") or {}).get("clusters"):
            continue
        meta = rb.get("metadata") or {}
        namespace = meta.get("namespace", "")
        job = jobs.get(namespace, ((rb.get("spec") or {}).get("resource") or {}).get("name", ""))
        if job is None or job["metadata"].get("uid") == skip:
            continue
        key = (namespace, job["metadata"]["name"])
        entry = fleet.jobs.get(key)
        if entry is None or entry.phase != "Allocated":
            continue
        usage = preempting.share_usage(job, rb)
        out.append(Placed(key, entry.queue, entry.priority, dict(entry.request), usage, preemptable(job),
                          entry.created))
    return out


def reclaimer_of(fleet: FleetQueues, job: Obj) -> Reclaimer | None:
    key = (job["metadata"].get("namespace", ""), job["metadata"]["name"])
    entry = fleet.jobs.get(key)
    if entry is None:
        return None
    pods = tuple((dict(t.request), t.replicas) for t in job_demand(job).tasks if t.replicas > 0)
    return Reclaimer(key, entry.queue, pods, entry.priority, counted=entry.phase == "Allocated")


class FleetReclaim:
    """Needs, from the controller: ``fleet``, ``jobs``, ``bindings``, ``preempted_at``, ``options``,
    ``assumed``, ``attempts``, ``queue``, ``policies_for``, ``_write_binding``, ``_write_status``,
    ``_event``, ``_end`` and ``_queue_status_soon``."""

    fleet: FleetQueues | None
    jobs: Any
    bindings: Any
    preempted_at: dict[Key, float]
    options: Any
    assumed: Any
    attempts: dict[Key, Any]
    queue: Any
    policies_for: Any
    _write_binding: Any
    _write_status: Any
    _event: Any
    _end: Any
    _queue_status_soon: Any

    async def _fleet_reclaim(self, job: Obj, policy: Obj, now: float) -> ReclaimPlan | None:
        """Evict the gangs that make room for ``job`` across clusters (None: off, too soon or no victims)."""
        fleet = self.fleet
        if fleet is None or not fleet.conf.reclaim:
            return None
        key = (job["metadata"].get("namespace", ""), job["metadata"]["name"])
        if now - self.preempted_at.get(key, -1e18) < self.options.preemption_grace_seconds:
            return None  # the victims of the last round are still leaving
        reclaimer = reclaimer_of(fleet, job)
        if reclaimer is None:
            return None
        free = {room.name: dict(room.free) for room in preempting.rooms(self, job, policy, now, True)}  # type: ignore[arg-type]
        gangs = placed_gangs(fleet, self.jobs, self.bindings, job["metadata"].get("uid", ""))
        plan = plan_reclaim(fleet.attrs(), reclaimer, gangs, free)
        if not plan.evictions:
            log.debug("no reclaim for %s/%s: %s", *key, plan.reason)
            return None
        self.preempted_at[key] = now
        for eviction in plan.evictions:
            await self._reclaim_one(eviction.victim, eviction.message, now)
        names = ", ".join("/".join(v) for v in plan.victims)
        await self._event(job, "Reclaiming", f"reclaiming {names} on {', '.join(plan.clusters)} "
                          f"for queue {reclaimer.queue}")
        self._queue_status_soon()
        return plan

    async def _reclaim_one(self, victim: Placed, message: str, now: float) -> None:
        """The victim leaves every cluster it is on; its ``PodEvicted`` policy says what follows."""
        assert self.fleet is not None
        namespace, name = victim.key
        job = self.jobs.get(namespace, name)
        rb = self.bindings.get(namespace, c.rb_name(name))
        if job is None or rb is None:
            return
        match = match_policy(job, self.policies_for(namespace))
        ending = failover.decide(job, rb, {cluster: "reclaimed" for cluster in victim.clusters})
        await self._event(job, "Reclaimed", message, "Warning")
        if ending.ends_job:
            message = f"{message}: {failover.EVENT} → {ending.action} ({ending.source})"
            await self._end(job, rb, match, failover.Failover(ending.action, ending.phase, ending.source, message), now)
            self.fleet.remove_job(victim.key)
            return
        body = b.binding_body(job, match.policy, rb, [], b.generation_of(rb) + 1, None, now, placed=True)
        body["spec"]["schedulePriority"] = (rb.get("spec") or {}).get("schedulePriority")
        rb = await self._write_binding(rb, body)
        conditions = c.set_condition(((rb or {}).get("status") or {}).get("conditions"), "Scheduled", "False",
                                     "Reclaimed", message, now)
        await self._write_status(rb, {"conditions": conditions})
        self.assumed.forget(job["metadata"].get("uid", ""))
        self.attempts.pop(victim.key, None)
        self.fleet.unplaced(victim.key)  # it waits as Inqueue, holding its minimum, to be admitted again
        self.queue.add(victim.key)  # its queue decides when it may be placed again

    def _queue_respecting(self, job: Obj) -> Callable[[Sequence[Hashable]], bool] | None:
        """For binding preemption: whether a set of victims respects the queues (None: no fleet queues)."""
        fleet = self.fleet
        key = (job["metadata"].get("namespace", ""), job["metadata"]["name"])
        if fleet is None or key not in fleet.jobs:
            return None
        attrs = fleet.attrs()
        queue = fleet.jobs[key].queue

        def allowed(victims: Sequence[Hashable]) -> bool:
            gangs = []
            for victim in victims:
                entry = fleet.jobs.get(victim)  # type: ignore[call-overload]
                obj = self.jobs.get(*victim)  # type: ignore[misc]
                if entry is None or obj is None:
                    return False
                gangs.append(Placed(entry.key, entry.queue, entry.priority, dict(entry.request), {},
                                    preemptable(obj), entry.created))
            return may_preempt(attrs, queue, gangs)

        return allowed
