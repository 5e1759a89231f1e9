"""Placement controller: Job + governing policy + Clusters (+ previous binding) -> ResourceBinding.

Keyed by Job. A job is (re)placed when:

* it has no division yet;
* its spec changed (``metadata.generation`` != ``status.schedulerObservedGeneration``);
* its policy changed (another policy now governs it, or the placement changed);
* a cluster it is on became unusable (deleted, being deleted, or an untolerated NoExecute
  taint): its shares count as evicted pods and the Job's ``PodEvicted`` policy decides
  (:mod:`federation.controllers.failover`). ``RestartJob`` (the default): the *whole* job gets a
  new generation (the gang restarts as a unit), the surviving clusters' previous shares count as
  the steady layout. ``AbortJob``/``TerminateJob``/``CompleteJob``: every share is withdrawn and
  the binding says how the job ended (``caldera.io/ended``); it is never placed again;
* its two-phase start was cancelled (``caldera.io/cancelled-generation`` == generation):
  Fresh division, after the backoff in ``caldera.io/retry-after``, with the failed clusters'
  estimates lowered by ``caldera.io/reserve-caps``; a cluster that failed to reserve too often in a
  row is left out of this job's placements until its cap expires;
* it is unschedulable and an event that could make it fit moved it back to the scheduling
  queue's activeQ (:mod:`federation.controllers.sched_queue`).

Placements go through the scheduling queue: highest binding priority first (the policy's
``schedulePriority``, :mod:`federation.controllers.binding_priority`), then the oldest job. A job
that fits nowhere waits in the queue's unschedulable set until a cluster reports more free
capacity, joins, becomes Ready or loses a taint, a job finishes or is deleted, or a policy changes
(:mod:`federation.controllers.requeue_events`); only transient errors back off.

A change of capacity alone never moves a placed job. Shares dispatched but not yet running
are deducted from later placements (``AssumedWorkload``), so a burst cannot overcommit a
cluster. Placements run one at a time in a worker thread (the core is CPU-bound).
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from kubernetes_asyncio import client as k8s

from federation import metrics
from federation.controllers import app_failover, binding_priority, failover, preempting, requeue_events
from federation.controllers import binding as b
from federation.controllers import common as c
from federation.controllers.assumed import AssumedShares, excluded_clusters, reserve_caps
from federation.controllers.fleet_admission import FleetAdmission
from federation.controllers.fleet_reclaim import FleetReclaim
from federation.controllers.matching import Match, match_policy
from federation.controllers.placement_outcomes import PlacementOutcomes
from federation.controllers.placement_queue import QueuedPlacement, with_priority
from federation.controllers.placement_view import ClusterView
from federation.controllers.placement_writes import _ns_name
from federation.controllers.poison import PoisonGuard, Reported, describe
from federation.controllers.runner import QueueController, cancel_all, run_controller
from federation.controllers.sched_queue import (
    Outcome,
)
from federation.controllers.triggers import APPLICATION_FAILURE, SHARE_FENCED, Attempt, placement_trigger
from federation.controllers.two_phase import exclusion_note
from federation.placement.adapters import build_request
from federation.placement.decision import PlacementDecision
from federation.placement.place import Placer, place
from federation.placement.request import ClusterState
from policies.errors import CalderaError
from policies.kinds import lookup

#: the Job's PriorityClass decides whether placement may count on preemption
PRIORITY_CLASSES = lookup("scheduling.k8s.io/v1", "PriorityClass")

log = logging.getLogger("caldera.controllers.placement")
Obj = dict[str, Any]
Key = tuple[str, str]


class PlacementController(FleetAdmission, FleetReclaim, PlacementOutcomes, ClusterView, QueuedPlacement, QueueController):
    def __init__(self, api: k8s.ApiClient, options: c.ControllerOptions | None = None) -> None:
        super().__init__(api, options)
        self.jobs = self.informer(c.JOBS, self._on_job)
        self.pps = self.informer(c.PROPAGATION_POLICIES, self._on_policy)
        self.cpps = self.informer(c.CLUSTER_PROPAGATION_POLICIES, self._on_policy)
        self.clusters = self.informer(c.CLUSTERS, self._on_cluster)
        self.bindings = self.informer(c.BINDINGS, self._on_binding)
        self.works = self.informer(c.WORKS)
        self.priority_classes = self.informer(PRIORITY_CLASSES)
        self._init_fleet()  # fleet queues: admission before placement (fleet_admission.py)
        self.informers = [self.jobs, self.pps, self.cpps, self.clusters, self.bindings, self.works,
                          self.priority_classes, self.fleet_queues]
        self.placer = Placer()
        self.lock = asyncio.Lock()
        self.cluster_version = 0
        self._snapshot: tuple[int, tuple[ClusterState, ...]] | None = None
        self.attempts: dict[Key, Attempt] = {}
        self.assumed = AssumedShares(self.works.get, lambda name: self.clusters.get("", name))
        self.works.handlers.append(self.assumed.on_work_event)
        self.works.handlers.append(self._on_work)
        self._init_queue(self.options)
        #: when each job last preempted (it waits for its victims' clusters to report before again)
        self.preempted_at: dict[Key, float] = {}

    # ------------------------------------------------------------------ events

    def _on_job(self, kind: str, obj: Obj, old: Obj | None) -> None:
        self.queue.add(c.job_key(*_ns_name(obj)))
        self._fleet_on_job(kind, obj)
        self._move(requeue_events.job_event(kind, obj, old))

    def _on_policy(self, kind: str, obj: Obj, old: Obj | None) -> None:
        namespace = (obj.get("metadata") or {}).get("namespace")
        for job in self.jobs.items():
            ns, name = _ns_name(job)
            if obj.get("kind") != "PropagationPolicy" or ns == namespace:
                self.queue.add((ns, name))
        self._move(requeue_events.policy_event(kind, obj, old))

    def _on_cluster(self, kind: str, obj: Obj, old: Obj | None) -> None:
        self.cluster_version += 1
        name = (obj.get("metadata") or {}).get("name")
        for rb in self.bindings.items():  # jobs on it: the cluster may be lost
            if any(t.get("name") == name for t in (rb.get("spec") or {}).get("clusters") or []):
                ns, job = (rb.get("metadata") or {}).get("namespace", ""), \
                    ((rb.get("spec") or {}).get("resource") or {}).get("name", "")
                self.queue.add((ns, job))
        self._fleet_on_cluster()
        released = self.assumed.on_cluster_event(kind, obj, old)  # shares this report now shows
        self._move(requeue_events.cluster_event(kind, obj, old) or requeue_events.assumed_released(obj, old, released))

    def _on_work(self, _type: str, obj: Obj, old: Obj | None) -> None:
        # a share turning unhealthy (or healthy again) starts or stops application failover's clock
        if app_failover.unhealthy(obj) == app_failover.unhealthy(old) and \
                app_failover.share_state(obj) == app_failover.share_state(old):
            return
        ns, _, name = ((obj.get("metadata") or {}).get("labels") or {}).get(c.JOB_LABEL, "").partition(".")
        if ns and name:
            self.queue.add((ns, name))

    def _on_binding(self, _type: str, obj: Obj, _old: Obj | None) -> None:
        resource = (obj.get("spec") or {}).get("resource") or {}
        if resource.get("kind") == "Job" and resource.get("name"):
            self.queue.add(((obj.get("metadata") or {}).get("namespace", ""), resource["name"]))

    # ------------------------------------------------------------------ run

    async def run(self, stop: asyncio.Event) -> None:
        self._wake = asyncio.Event()
        self._guard = PoisonGuard(self._job_version, self._poisoned, self._release)
        loop = asyncio.create_task(self._schedule_loop(stop))
        try:
            await run_controller(self.informers, self.queue, self.reconcile, stop, self.options.workers, "placement",
                                 self._guard)
        finally:
            await cancel_all([loop])

    def _job_version(self, key: Key) -> Any:
        """What a poisoned Job must change to be placed again: its uid or spec (generation)."""
        job = self.jobs.get(*key)
        meta = (job or {}).get("metadata") or {}
        return (meta.get("uid"), meta.get("generation"))

    async def _poisoned(self, key: Key, err: BaseException) -> None:
        """Say why a Job cannot be placed: Scheduled=False/SchedulerError on its binding, and an Event."""
        job = self.jobs.get(*key)
        if job is None:
            return
        message = f"{describe(err)}; placement is retried when the Job changes"
        now = self.clock()
        try:
            rb = self.bindings.get(key[0], c.rb_name(key[1]))
            match = match_policy(job, self.policies_for(key[0]))
            rb = await self._write_binding(rb, b.binding_body(job, match.policy, rb, None, b.generation_of(rb), None,
                                                              now, placed=False))
            conditions = c.set_condition(((rb or {}).get("status") or {}).get("conditions"), "Scheduled", "False",
                                         "SchedulerError", message, now)
            await self._write_status(rb, {"conditions": conditions})
        finally:
            await self._event(job, "FailedScheduling", f"SchedulerError: {message}", "Warning")

    def _release(self, key: Key) -> None:
        """A parked (poisoned) job leaves the scheduling queue; the scheduling loop goes on."""
        if self.schedq.where(key) == "inflight":
            self.schedq.done(key, "dropped")
        permit = self._permits.pop(key, None)
        if permit is not None:
            permit.set()

    async def _reconcile(self, key: Key, permitted: bool) -> None:
        namespace, name = key
        job = self.jobs.get(namespace, name)
        rb = self.bindings.get(namespace, c.rb_name(name))
        if job is None or job["metadata"].get("deletionTimestamp"):
            self.schedq.forget(key)
            await self._forget(key, job, rb)
            return
        uid = job["metadata"].get("uid", "")
        if rb is not None and ((rb.get("spec") or {}).get("resource") or {}).get("uid") not in (uid, None):
            await self._delete_binding(namespace, c.rb_name(name))  # left over from a job of the same name
            rb = None
        now = self.clock()
        match = match_policy(job, self.policies_for(namespace))
        await self._mark_claim(job, match.policy)
        if match.policy is None:
            await self._no_policy(job, rb, now)
            return
        clusters = {o["metadata"]["name"]: o for o in self.clusters.items()}
        trigger, previous, delay, wake = placement_trigger(
            job, rb, match.policy, clusters, self.attempts.get(key), self.cluster_version, now, queued=permitted,
            works=app_failover.works_of(rb, key, uid, self.works.get))
        if wake is not None:  # a tolerationSeconds runs out later: look again then
            self.queue.add(key, max(0.05, wake - now))
        if trigger is None:
            self.assumed.remember(job, b.generation_of(rb), b.placement_of(rb))
            await self._note_conflict(job, rb, match, now)
            return
        if delay > 0:
            self.queue.add(key, delay)
            return
        if isinstance(trigger, failover.Failover):
            await self._end(job, rb, match, trigger, now)
            return
        if not await self._fleet_gate(job, rb, now):  # its queue has not admitted it fleet-wide yet
            return
        priority = self._priority(match.policy, job)
        if not permitted:
            self._enqueue(job, priority.priority)
            return
        metrics.INCOMING_BINDINGS.labels(event=metrics.trigger_event(trigger)).inc()
        outcome = await self._place(job, rb, match, trigger, previous, now, priority)
        self._fleet_placed(key, outcome == "scheduled" or bool(((self.bindings.get(namespace, c.rb_name(name)) or {})
                                                                .get("spec") or {}).get("clusters")))
        self.schedq.done(key, outcome)
        if outcome == "unschedulable":
            metrics.QUEUE_UNSCHEDULABLE.inc()

    async def _place(self, job: Obj, rb: Obj | None, match: Match, trigger: str, previous: Obj | None,
                     now: float, priority: binding_priority.ResolvedPriority) -> Outcome:
        assert match.policy is not None
        key = _ns_name(job)
        uid = job["metadata"].get("uid", "")
        generation = b.generation_of(rb) if rb is not None else self._dispatched_generation(job)
        old_clusters = ((rb or {}).get("spec") or {}).get("clusters") or []
        replace = trigger.startswith(("cluster lost", APPLICATION_FAILURE, SHARE_FENCED)) or trigger == "reservation cancelled"
        evicted = app_failover.evicted_clusters(previous)  # Karmada's scheduler skips a task's fromCluster
        excluded = excluded_clusters(rb, now)
        notes = "; ".join(exclusion_note(name, cap, now) for name, cap in excluded.items())
        async with self.lock:
            version = self.cluster_version
            try:
                assumed = self.assumed.others(uid) + reserve_caps(job, rb, now)
                states = self._usable(match.policy, now)
                if excluded or evicted:  # failed to reserve too often in a row, or evicted: left out
                    states = tuple(s for s in states if s.name not in excluded and s.name not in evicted)
                request = build_request(job, match.policy, states, previous, now=now,
                                        assumed=assumed, options=self.options.placement,
                                        priority_classes={pc["metadata"]["name"]: pc
                                                          for pc in self.priority_classes.items()})
            except (CalderaError, ValueError, KeyError, TypeError, ArithmeticError) as err:
                metrics.PLACEMENTS.labels(result="error").inc()
                await self._failed(job, rb, match, "SchedulerError", f"invalid input: {err}; placement is retried "
                                   f"when the Job changes", version, now, clear=replace, priority=priority)
                raise Reported(err) from err  # parked until the Job changes (federation.controllers.poison)
            began = time.perf_counter()
            decision = await asyncio.to_thread(place, request, self.placer)
            _count(decision, metrics.schedule_type(generation, trigger), time.perf_counter() - began)
            if decision.ok:  # count the new shares before the next placement runs, not after the writes
                clusters = b.target_clusters(decision)
                changed = replace or generation == 0 or not b.same_layout(old_clusters, clusters)
                new_gen = generation + 1 if changed else generation
                placement = b.placement_json(decision, job, new_gen)
                placement["keepsFrom"] = b.keeps_from(rb, new_gen, restart=replace or generation == 0)
                self.assumed.forget(uid)
                self.assumed.remember(job, new_gen, placement)
                self._next_may_start(key)
        if not decision.ok:
            assert decision.failure is not None
            message = b.diagnosis_message(decision) + (f" [{notes}]" if notes else "")
            preemption, reclaimed = None, None
            if decision.failure.condition != "SchedulerError":
                reclaimed = await self._fleet_reclaim(job, match.policy, now)  # a starved queue first
                if reclaimed is not None:
                    message += f" [reclaiming {', '.join('/'.join(v) for v in reclaimed.victims)}]"
                else:
                    preemption = await preempting.preempt_for(self, job, match.policy, priority, now,
                                                              self._queue_respecting(job))
                if preemption is not None:
                    victims = ", ".join(f"{ns}/{n}" for ns, n in preemption.victims)  # type: ignore[misc]
                    message += f" [preempting {victims} on {preemption.cluster}]"
                    await self._event(job, "Preempting", f"preempting {victims} on cluster {preemption.cluster}")
            wake = min(float(cap.get("until") or 0) for cap in excluded.values()) if excluded else None
            await self._failed(job, rb, match, decision.failure.condition, message, version,
                               now, clear=replace or not old_clusters, wake=wake, priority=priority,
                               tasks=app_failover.tasks_of(previous))
            if preemption is not None or reclaimed is not None:
                return "preempted"
            return "error" if decision.failure.condition == "SchedulerError" else "unschedulable"
        body = b.binding_body(job, match.policy, rb, clusters, new_gen, placement, now, placed=changed)
        if tasks := app_failover.tasks_of(previous):
            body["spec"]["gracefulEvictionTasks"] = tasks
        rb = await self._write_binding(rb, with_priority(body, priority))
        conditions = c.set_condition(((rb or {}).get("status") or {}).get("conditions"), "Scheduled", "True",
                                     "Success", f"{trigger}: {decision.reason}" + (f" [{notes}]" if notes else ""),
                                     now)
        conditions = self._conflict_conditions(conditions, match, now)
        await self._write_status(rb, {
            "conditions": conditions,
            "schedulerObservedGeneration": int(job["metadata"].get("generation") or 1),
            "schedulerObservingAffinityName": decision.affinity_name or None,
            "lastScheduledTime": c.rfc3339(now),
        })
        self.attempts.pop(key, None)
        if changed:
            split = ", ".join(f"{t['name']}: {t['replicas']}" for t in clusters)
            await self._event(job, "Scheduled", f"generation {new_gen} ({trigger}): {split}; {decision.reason}")
        await self._priority_event(rb, priority)
        return "scheduled"

def _count(decision: PlacementDecision, schedule_type: str, seconds: float) -> None:
    """Placements by result, Karmada's scheduler metrics and optimizer runs by outcome (federation.metrics)."""
    failure = decision.failure
    result = "scheduled" if failure is None else "error" if failure.condition == "SchedulerError" else "unschedulable"
    metrics.PLACEMENTS.labels(result=result).inc()
    metrics.observe_schedule("success" if result == "scheduled" else result, schedule_type, seconds)
    if decision.optimizer:
        solved = decision.path == "optimizer" and failure is None
        optimal = decision.optimizer.get("status") == 0
        metrics.OPTIMIZER_CALLS.labels(outcome="infeasible" if not solved else "solved" if optimal
                                       else "fallback").inc()



async def placement_controller(ctx: Any, options: c.ControllerOptions | None = None) -> None:
    """``Controller`` entry point: run until the server stops."""
    from federation.client import api_client_from_dict

    async with api_client_from_dict(ctx.kubeconfig) as api:
        await PlacementController(api, options or ctx.extra.get("controller_options")).run(ctx.stop)
