"""The member agent: Works in, pods and status out, one scheduling session per period.

Loops (all on the injected clock, all cancelled together):

* the cluster cache (list + watch of nodes and pods through the gateway);
* the job controller pass: for every Work, :func:`member_agent.job_driver.plan` says which pods
  to create/delete; pods are found again after a restart by their Work-uid label and
  deterministic names, so nothing is created twice;
* the scheduling pass every ``schedule_period``: snapshot → ``run_cycle`` in a worker thread →
  bindings and evictions through the gateway. Pods of a *held* share are not bound: their
  bindings become the share's reservation (:mod:`member_agent.gang`) and appear as bound in
  every later snapshot and capacity report, so the resources stay held;
* the federation sync (:mod:`member_agent.sync`): Cluster, Lease, Works, statuses.

The agent keeps the local Job and PodGroup in memory (docs/agent.md); a restart rebuilds
them from the Works (whose status seeds the Job status) and the pods.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from dataclasses import dataclass, field
from typing import Any, Optional

from member_agent import job_driver, scheduling
from member_agent.capacity import NodeState, cluster_status, pod_request
from member_agent.cluster.cache import ClusterCache
from member_agent.cluster.clock import Clock, rfc3339
from member_agent.cluster.gateway import ClusterGateway, GatewayError, Obj, key_of, pod_node, pod_terminating
from member_agent.gang import GangTracker
from member_agent.metrics import AgentMetrics
from member_agent.works import (
    GENERATION_LABEL,
    WORK_UID_LABEL,
    WorkRecord,
    comparable,
    parse_work,
    work_status,
)
from policies.errors import InvalidConfiguration
from policies.scheduler_conf import DEFAULT_CONF, SchedulerConf, parse_scheduler_conf

log = logging.getLogger("caldera.agent")
EVICT_GRACE = 30


@dataclass
class AgentOptions:
    cluster: str
    schedule_period: float = 1.0
    controller_period: float = 0.5
    scheduler_conf_path: Optional[str] = None
    use_real_scheduler: bool = True
    cluster_spec: dict[str, Any] = field(default_factory=dict)
    kubernetes_version: str = "v1.30.0"


@dataclass
class WorkState:
    record: WorkRecord
    gang: GangTracker
    job_status: Obj = field(default_factory=dict)
    podgroup: Optional[Obj] = None
    written: Optional[Obj] = None  # last status written to the federation
    deleted: bool = False
    first_seen: float = 0.0
    scheduled_reported: bool = False
    pending_status: Optional[Obj] = None  # computed, not yet written
    spec_text: str = ""


class Agent:
    def __init__(self, options: AgentOptions, gateway: ClusterGateway, clock: Clock) -> None:
        self.options = options
        self.gateway = gateway
        self.clock = clock
        self.cache = ClusterCache(gateway, clock)
        self.metrics = AgentMetrics()
        self.works: dict[str, WorkState] = {}
        self.generations: dict[str, int] = {}  # Work uid -> highest placement generation seen
        self.assumed: dict[str, str] = {}  # pod key -> node, binds in flight
        self.creating: set[str] = set()
        self.queues: list[Obj] = []
        self.priority_classes: list[Obj] = []
        self.conf: SchedulerConf = DEFAULT_CONF
        self._conf_mtime: Optional[float] = None
        self.last_cycle: Optional[float] = None
        self.work_changed = asyncio.Event()
        self.status_changed = asyncio.Event()
        self.load_conf()

    # ------------------------------------------------------------------ scheduler conf
    def load_conf(self) -> None:
        path = self.options.scheduler_conf_path
        if not path:
            return
        try:
            mtime = os.stat(path).st_mtime
        except OSError as exc:
            log.warning("scheduler conf %s: %s; keeping the current configuration", path, exc.strerror)
            return
        if mtime == self._conf_mtime:
            return
        self._conf_mtime = mtime
        try:
            with open(path, encoding="utf-8") as handle:
                self.conf = parse_scheduler_conf(handle.read())
            log.info("Successfully loaded Scheduler conf from %s: actions %s", path, ", ".join(self.conf.actions))
        except (OSError, InvalidConfiguration) as exc:
            log.error("scheduler conf %s is not usable, keeping the previous one: %s", path, exc)

    # ------------------------------------------------------------------ Works (called by sync)
    def apply_work(self, work: Obj) -> None:
        md = work.get("metadata") or {}
        known = self.works.get(f"{md.get('namespace')}/{md.get('name')}")
        spec_text = json.dumps(work.get("spec") or {}, sort_keys=True)
        if known is not None and known.record.uid == md.get("uid") and known.spec_text == spec_text:
            return  # a status write echoed back: nothing new to apply
        record = parse_work(work)
        seen = self.generations.get(record.uid)
        if seen is not None and record.placement.generation < seen:
            log.info("Work %s: ignoring stale placement generation %d (seen %d)", record.key,
                     record.placement.generation, seen)
            return
        self.generations[record.uid] = record.placement.generation
        state = self.works.get(record.key)
        if state is None or state.record.uid != record.uid:
            state = WorkState(record, GangTracker(record.placement.generation), first_seen=self.clock.now())
            self._seed_from_status(state, record.previous_status)
            self.works[record.key] = state
        elif record.placement.generation > state.record.placement.generation:
            log.info("Work %s: placement generation %d replaces %d", record.key, record.placement.generation,
                     state.record.placement.generation)
            state.gang.drop("new placement generation")
            state.gang = GangTracker(record.placement.generation)
        state.record = record
        state.spec_text = spec_text
        if record.error:
            log.warning("Work %s is invalid: %s", record.key, record.error)
        self.work_changed.set()

    def _seed_from_status(self, state: WorkState, status: Obj) -> None:
        """After a restart: the Job's counters and phase as last reported, the gang phase if past release."""
        manifests = status.get("manifestStatuses") or []
        if manifests and isinstance(manifests[0].get("status"), dict):
            state.job_status = dict(manifests[0]["status"])
        gang = status.get("gang") or {}
        if gang.get("generation") == state.record.placement.generation and gang.get("phase") in ("Released", "Running"):
            state.gang.phase = gang["phase"]
            state.gang.released = True
        for cond in status.get("conditions") or []:
            if cond.get("type") == "PodGroup" and cond.get("reason"):
                state.podgroup = {"status": {"phase": cond["reason"]}}

    def forget_work(self, key: str) -> None:
        state = self.works.get(key)
        if state is not None:
            state.deleted = True
            self.work_changed.set()

    def prune_works(self, live_keys: set[str]) -> None:
        for key in list(self.works):
            if key not in live_keys:
                self.forget_work(key)

    def set_scheduling_inputs(self, queues: list[Obj], priority_classes: list[Obj]) -> None:
        self.queues, self.priority_classes = queues, priority_classes

    # ------------------------------------------------------------------ views
    def pods_of(self, record: WorkRecord) -> list[Obj]:
        return [p for p in self.cache.pods.values()
                if ((p.get("metadata") or {}).get("labels") or {}).get(WORK_UID_LABEL) == record.uid]

    def _state_of_pod(self, pod: Obj) -> Optional[WorkState]:
        uid = ((pod.get("metadata") or {}).get("labels") or {}).get(WORK_UID_LABEL)
        for state in self.works.values():
            if state.record.uid == uid and not state.deleted:
                return state
        return None

    def overlay_pods(self) -> list[Obj]:
        """Cluster pods, with reserved and in-flight bindings shown as bound."""
        placed = dict(self.assumed)
        for state in self.works.values():
            placed.update(state.gang.reservations)
        out = []
        for key, pod in self.cache.pods.items():
            node = placed.get(key)
            if node and not pod_node(pod):
                pod = dict(pod, spec=dict(pod.get("spec") or {}, nodeName=node))
            out.append(pod)
        return out

    def snapshot_objects(self) -> list[Obj]:
        groups = [s.podgroup for s in self.works.values()
                  if s.podgroup and s.podgroup.get("kind") == "PodGroup" and not s.deleted
                  and not s.record.placement.cancelled and not s.record.error and s.gang.schedulable]
        return [*self.cache.nodes.values(), *self.overlay_pods(), *groups, *self.queues, *self.priority_classes]

    def cluster_status(self) -> Obj:
        pods = self.overlay_pods()
        requests = {(p.get("metadata") or {}).get("uid", ""): self.cache.request_of(p, pod_request) for p in pods}
        state = NodeState(self.cache.nodes.values(), pods, requests)
        queue_of_pod = {}
        for pod in pods:
            labels = (pod.get("metadata") or {}).get("labels") or {}
            if "volcano.sh/queue-name" in labels:
                queue_of_pod[(pod.get("metadata") or {}).get("uid", "")] = labels["volcano.sh/queue-name"]
        status = cluster_status(state, pods, queue_of_pod, self.queues, requests)
        self.metrics.set_queues(status["queues"])
        status["kubernetesVersion"] = self.options.kubernetes_version
        return status

    # ------------------------------------------------------------------ job controller pass
    async def controller_pass(self) -> None:
        now = self.clock.now()
        for pod_key in [k for k, node in self.assumed.items()
                        if k not in self.cache.pods or pod_node(self.cache.pods[k])]:
            self.assumed.pop(pod_key, None)
        for key, state in list(self.works.items()):
            record = state.record
            pods = self.pods_of(record)
            if state.deleted:
                await self._delete_pods(pods, "Work deleted")
                if not [p for p in self.pods_of(record) if not pod_terminating(p)]:
                    del self.works[key]
                continue
            if record.error:
                self._update_status(state, now)
                continue
            if record.placement.cancelled:
                state.gang.evaluate(record, 0, job_driver.job_phase(state.job_status), "", now)
                await self._delete_pods([p for p in pods if not pod_node(p)], "placement cancelled")
                self._update_status(state, now)
                continue
            stale = [p for p in pods if not pod_node(p) and _generation(p) < record.placement.generation]
            await self._delete_pods(stale, "older placement generation")
            plan = job_driver.plan(record, state.podgroup, [p for p in pods if p not in stale], now, state.job_status)
            if plan.podgroup is not None:
                plan.podgroup["metadata"]["creationTimestamp"] = plan.podgroup["metadata"].get(
                    "creationTimestamp") or _stamp(state.first_seen)
                state.podgroup = plan.podgroup
            state.job_status = plan.job_status
            for pod in plan.pods_to_create:
                await self._create_pod(pod)
            ns = (record.job or {}).get("metadata", {}).get("namespace", "default")
            for name in plan.pods_to_delete:
                await self._delete(ns, name)
            for event_type, reason, message in plan.events:
                await self.gateway.record_event(record.job or {}, event_type, reason, message)
            self._evaluate_gang(state, "", now)
            self._update_status(state, now)

    def _evaluate_gang(self, state: WorkState, reason: str, now: float) -> None:
        min_member = int(((state.podgroup or {}).get("spec") or {}).get("minMember", 0) or 0)
        to_bind = state.gang.evaluate(state.record, min_member, job_driver.job_phase(state.job_status),
                                      reason or state.gang.reason, now)
        for pod_key, node in to_bind.items():
            self._bind(pod_key, node)

    def _update_status(self, state: WorkState, now: float) -> None:
        pg_phase = ((state.podgroup or {}).get("status") or {}).get("phase")
        with_gang = state.record.placement.declared
        status = work_status(state.record, state.job_status, pg_phase, state.gang.status() if with_gang else None,
                             now, state.written)
        if state.written is None or comparable(status) != comparable(state.written):
            state.pending_status = status
            self.status_changed.set()

    def pending_statuses(self) -> list[tuple[WorkState, Obj]]:
        out = []
        for state in self.works.values():
            if state.pending_status is not None and not state.deleted:
                out.append((state, state.pending_status))
        return out

    def status_written(self, state: WorkState, status: Obj) -> None:
        state.written = status
        if state.pending_status is status:
            state.pending_status = None

    async def _create_pod(self, pod: Obj) -> None:
        key = key_of(pod)
        if key in self.creating:
            return
        self.creating.add(key)
        try:
            await self.gateway.create_pod(pod)
        except GatewayError as exc:
            log.debug("create pod %s: %s", key, exc)
        finally:
            self.creating.discard(key)

    async def _delete(self, namespace: str, name: str) -> None:
        try:
            await self.gateway.delete_pod(namespace, name, EVICT_GRACE)
        except GatewayError as exc:
            log.warning("delete pod %s/%s: %s", namespace, name, exc)

    async def _delete_pods(self, pods: list[Obj], why: str) -> None:
        for pod in pods:
            if not pod_terminating(pod):
                log.info("Deleting pod %s: %s", key_of(pod), why)
                await self._delete(pod["metadata"].get("namespace", "default"), pod["metadata"]["name"])

    # ------------------------------------------------------------------ scheduling pass
    def _bind(self, pod_key: str, node: str) -> None:
        self.assumed[pod_key] = node
        namespace, name = pod_key.split("/", 1)

        async def bind() -> None:
            try:
                await self.gateway.bind_pod(namespace, name, node)
            except GatewayError as exc:
                log.warning("Binding Task %s to node %s failed: %s", pod_key, node, exc)
                self.assumed.pop(pod_key, None)

        asyncio.ensure_future(bind())

    async def schedule_pass(self) -> Optional[scheduling.CycleResult]:
        if not self.cache.synced.is_set():
            return None
        objects = self.snapshot_objects()
        started = time.perf_counter()
        try:
            result = await asyncio.to_thread(scheduling.run_once, objects, self.conf, self.clock,
                                             self.options.use_real_scheduler)
        except Exception:  # noqa: BLE001 - one bad cycle must not stop the agent
            log.exception("scheduling cycle failed")
            self.metrics.attempts.labels("error").inc()
            return None
        self.apply_cycle(result)
        self.metrics.observe_cycle(result, (time.perf_counter() - started) * 1000.0)
        self.last_cycle = self.clock.now()
        return result

    def apply_cycle(self, result: scheduling.CycleResult) -> None:
        loud = bool(result.bindings or result.evictions)
        for line in result.logs:
            log.log(logging.INFO if loud else logging.DEBUG, "%s", line)
        now = self.clock.now()
        pg_state = {f"{(s.podgroup or {}).get('metadata', {}).get('namespace')}/"
                    f"{(s.podgroup or {}).get('metadata', {}).get('name')}": s for s in self.works.values()}
        for pod_key, node in result.bindings.items():
            pod = self.cache.pods.get(pod_key)
            if pod is None or pod_node(pod):
                continue
            state = self._state_of_pod(pod)
            if state is not None and state.record.gang_managed and state.record.placement.hold:
                state.gang.reserve(pod_key, node)
                log.info("Reserving Task %s on node %s (held share of Work %s)", pod_key, node, state.record.key)
            else:
                log.info("Binding Task %s to node %s", pod_key, node)
                self._bind(pod_key, node)
        for pod_key in result.evictions:
            namespace, name = pod_key.split("/", 1)
            log.info("Evicting Task %s", pod_key)
            asyncio.ensure_future(self._evict(namespace, name))
        for pg_key, phase in result.pod_groups.items():
            state = pg_state.get(pg_key)
            if state is None or state.podgroup is None:
                continue
            if state.record.gang_managed and state.record.placement.hold and phase in ("Running", "Completed"):
                phase = "Inqueue"  # reserved, not bound: the PodGroup is not running yet
            old = state.podgroup.setdefault("status", {}).get("phase")
            state.podgroup["status"]["phase"] = phase
            if old != phase:
                log.info("PodGroup %s is %s", pg_key, phase.lower())
            if phase == "Running" and not state.scheduled_reported and state.record.job:
                state.scheduled_reported = True
                md = state.record.job.get("metadata") or {}
                self.metrics.observe_job_scheduled(md.get("name", ""), md.get("namespace", ""),
                                                   state.podgroup.get("spec", {}).get("queue", "default"),
                                                   max(0.0, now - state.first_seen))
            report = result.jobs.get(pg_key)
            self._evaluate_gang(state, report.reason if report else "", now)
            self._update_status(state, now)
        self._pod_group_metrics()

    async def _evict(self, namespace: str, name: str) -> None:
        try:
            await self.gateway.evict_pod(namespace, name, "preempt", EVICT_GRACE)
        except GatewayError as exc:
            log.warning("evict %s/%s: %s", namespace, name, exc)

    def _pod_group_metrics(self) -> None:
        counts: dict[str, dict[str, int]] = {}
        for state in self.works.values():
            pg = state.podgroup or {}
            queue = (pg.get("spec") or {}).get("queue") or "default"
            phase = (pg.get("status") or {}).get("phase") or "Pending"
            bucket = counts.setdefault(queue, {})
            bucket[phase] = bucket.get(phase, 0) + 1
        self.metrics.set_pod_groups(counts)

    # ------------------------------------------------------------------ loops
    async def controller_loop(self) -> None:
        await self.cache.synced.wait()
        while True:
            self.work_changed.clear()
            self.cache.changed.clear()
            try:
                await self.controller_pass()
            except Exception:  # noqa: BLE001
                log.exception("job controller pass failed")
            await _first(self.clock.sleep(self.options.controller_period * 4), self.work_changed.wait(),
                         self.cache.changed.wait())
            await self.clock.sleep(self.options.controller_period / 5)

    async def schedule_loop(self) -> None:
        await self.cache.synced.wait()
        while True:
            self.load_conf()
            await self.schedule_pass()
            await self.clock.sleep(self.options.schedule_period)


def _generation(pod: Obj) -> int:
    try:
        return int(((pod.get("metadata") or {}).get("labels") or {}).get(GENERATION_LABEL, 0))
    except ValueError:
        return 0


def _stamp(epoch: float) -> str:
    return rfc3339(epoch)


async def _first(*awaitables: Any) -> None:
    tasks = [asyncio.ensure_future(a) for a in awaitables]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
