"""The member agent: Works in, pods and status out, one scheduling session per period.

Loops (all on the injected clock, all cancelled together):

* the cluster cache (list + watch of nodes and pods through the gateway);
* the job controller pass: for every Work, the Volcano job controller (``member_agent/controllers``,
  driven by :mod:`member_agent.job_runner`) says which pods to create/delete and the Job status;
  pods are found again after a restart by their Work-uid label and deterministic names, so
  nothing is created twice;
* the scheduling pass every ``schedule_period``: snapshot → ``run_cycle`` in a worker thread →
  :mod:`member_agent.cycle_apply` (bindings with their pod annotations, evictions with reasons,
  nominations; writes in flight in :mod:`member_agent.pod_writes`). Pods of a *held* share are
  not bound: their bindings become the share's reservation (:mod:`member_agent.gang`) and appear
  as bound in every later snapshot and capacity report, so the resources stay held;
* the federation sync (:mod:`member_agent.sync`): Cluster, Lease, Works, statuses.

The agent keeps the local Job and PodGroup in memory (docs/agent.md); a restart rebuilds
them from the Works (whose status seeds the Job status) and the pods.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import gc
import json
import logging
import os
from dataclasses import dataclass, field
from typing import Any, Optional

from member_agent import cycle_apply
from member_agent.changes import Changes, SessionGate, first_of
from member_agent.cluster.cache import ClusterCache
from member_agent.cluster.clock import Clock, rfc3339
from member_agent.cluster.gateway import ClusterGateway, Obj, pod_node, pod_terminating
from member_agent.controllers import ControllerConfig
from member_agent.controllers.naming import pod_group_name
from member_agent.fence_store import FenceStore
from member_agent.fenced_works import fence_applies, fence_unknown_shares, stop_fenced, with_fenced_condition
from member_agent.fencing import Fence
from member_agent.gang import GangTracker
from member_agent.hypernode_book import HyperNodeBook
from member_agent.job_runner import JobRun, job_phase
from member_agent.metrics import AgentMetrics
from member_agent.plan_apply import carry_out, gateway_call
from member_agent.pod_writes import EVICT_GRACE, PodWrites
from member_agent.scheduler.framework.result import CycleResult
from member_agent.scheduler.framework.session import SessionOptions
from member_agent.scheduler.object_sync import ObjectSync
from member_agent.scheduler.scheduler_cache import SchedulerCache
from member_agent.topology_status import cluster_topology
from member_agent.work_state import WorkState
from member_agent.works import (
    WORK_UID_LABEL,
    WorkRecord,
    comparable,
    parse_work,
    pod_generation,
    work_status,
)
from policies.capacity import NodeState, pod_request
from policies.capacity_summary import cluster_status
from policies.errors import InvalidConfiguration
from policies.scheduler_conf import DEFAULT_CONF, SchedulerConf, parse_scheduler_conf

log = logging.getLogger("caldera.agent")
__all__ = ["EVICT_GRACE", "Agent", "AgentOptions"]
#: Federation events kept between two status writes; more in one burst are dropped (best effort).
MAX_QUEUED_EVENTS = 200


@dataclass
class AgentOptions:
    cluster: str
    schedule_period: float = 1.0
    controller_period: float = 0.5
    #: how long a change waits for the rest of its burst before the session it triggers
    session_settle: float = 0.05
    scheduler_conf_path: Optional[str] = None
    use_real_scheduler: bool = True
    #: Volcano's node-search flags (``--percentage-nodes-to-find`` ...), see node_search_flags.
    session_options: SessionOptions = field(default_factory=SessionOptions)
    cluster_spec: dict[str, Any] = field(default_factory=dict)
    kubernetes_version: str = "v1.30.0"


class Agent:
    def __init__(self, options: AgentOptions, gateway: ClusterGateway, clock: Clock) -> None:
        self.options = options
        self.gateway = gateway
        self.clock = clock
        self.cache = ClusterCache(gateway, clock)
        #: every change a session or the capacity report could see (sync's status loop subscribes)
        self.changes = Changes()
        self.cache.listeners.append(self.changes.bump)
        self.session_gate = SessionGate(options.schedule_period)
        #: The scheduler's incremental cache, fed what changed between passes (issue 12).
        self.snapshot_sync = ObjectSync(SchedulerCache(scheduler_names=("volcano", "caldera")))
        self.metrics = AgentMetrics()
        self.works: dict[str, WorkState] = {}
        self.generations: dict[str, int] = {}  # Work uid -> highest placement generation seen
        #: self-fencing (set by ``caldera agent``; None: never fence) and the generations it stopped
        self.fence: Optional[Fence] = None
        self.fenced: dict[str, int] = {}  # Work uid -> placement generation fenced
        #: where the fence's record outlives a restart (member_agent/fence_store.py; None: nowhere)
        self.fence_store: Optional[FenceStore] = None
        self.writes = PodWrites(gateway)  # pod writes and what is still in flight
        self.queues: list[Obj] = []
        self.priority_classes: list[Obj] = []
        #: The member cluster's HyperNodes, passed to every session, their problems and statuses.
        self.topology = HyperNodeBook(self.changes.bump)
        self.conf: SchedulerConf = DEFAULT_CONF
        self._conf_mtime: Optional[float] = None
        self.last_cycle: Optional[float] = None
        #: with --leader-elect: whether this replica holds the Lease (None: not electing)
        self.leading: Optional[bool] = None
        #: Where the next session's node search starts (Volcano's lastProcessedNodeIndex).
        self.last_processed_node_index = 0
        self.work_changed = asyncio.Event()
        self.status_changed = asyncio.Event()
        self.controller_config = ControllerConfig()
        #: The Works have been listed once: pods of unknown Works are orphans from then on.
        self.works_listed = False
        #: Job events waiting to be recorded in the federation (sync drains them).
        self.federation_events: list[Obj] = []
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
        if hasattr(self, "changes"):
            self.changes.bump()
        try:
            with open(path, encoding="utf-8") as handle:
                self.conf = parse_scheduler_conf(handle.read())
            log.info("Successfully loaded Scheduler conf from %s: actions %s", path, ", ".join(self.conf.actions))
            for warning in self.conf.warnings:
                log.warning("scheduler conf %s: %s", path, warning)
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
        if state is not None and state.record.uid != record.uid:
            # Deleted and created again under the same name: the old one's pods still go.
            state.deleted = True
            self.works[f"{record.key}@{state.record.uid}"] = state
            state = None
        if state is None:
            state = WorkState(record, GangTracker(record.placement.generation), first_seen=self.clock.now())
            state.seed_from_status(record.previous_status)
            self.works[record.key] = state
        elif record.placement.generation > state.record.placement.generation:
            log.info("Work %s: placement generation %d replaces %d", record.key, record.placement.generation,
                     state.record.placement.generation)
            state.gang.drop("new placement generation")
            if state.record.placement.cancelled:
                # The federation gave up on the old share: the new one starts afresh.
                state.run, state.seed_status, state.seed_pod_group_phase = None, {}, None
            state.gang = GangTracker(record.placement.generation)
        state.record = record
        state.spec_text = spec_text
        state.controller_error = None
        if record.error:
            log.warning("Work %s is invalid: %s", record.key, record.error)
        elif state.run is None:
            state.run = JobRun.start(record, state.first_seen, state.seed_status, state.seed_pod_group_phase)
        else:
            state.run.update_spec(record)
        self.work_changed.set()
        self.changes.bump()

    def forget_work(self, key: str) -> None:
        state = self.works.get(key)
        if state is not None:
            state.deleted = True
            self.work_changed.set()
            self.changes.bump()

    def prune_works(self, live_keys: set[str]) -> None:
        """After a full list of the Works: forget the ones gone (the list is authoritative)."""
        for key in list(self.works):
            if key not in live_keys:
                self.forget_work(key)
        self.works_listed = True

    def set_scheduling_inputs(self, queues: list[Obj], priority_classes: list[Obj]) -> None:
        if (queues, priority_classes) != (self.queues, self.priority_classes):
            self.changes.bump()
        self.queues, self.priority_classes = queues, priority_classes

    @property
    def hyper_nodes(self) -> list[Obj]:
        return self.topology.hyper_nodes

    def set_hyper_nodes(self, hyper_nodes: list[Obj]) -> None:
        self.topology.set(hyper_nodes)

    async def check_topology(self) -> None:
        await self.topology.check(self.cache.nodes, self.gateway, rfc3339(self.clock.now()))

    # ------------------------------------------------------------------ views
    def stale_generation(self, pod: Obj) -> bool:
        """Whether ``pod`` belongs to a placement generation older than the newest seen for its Work."""
        uid = ((pod.get("metadata") or {}).get("labels") or {}).get(WORK_UID_LABEL)
        seen = self.generations.get(uid or "")
        return seen is not None and pod_generation(pod) < seen

    def pods_of(self, record: WorkRecord) -> list[Obj]:
        return [p for p in self.cache.pods.values()
                if ((p.get("metadata") or {}).get("labels") or {}).get(WORK_UID_LABEL) == record.uid]

    def state_of_pod(self, pod: Obj) -> Optional[WorkState]:
        uid = ((pod.get("metadata") or {}).get("labels") or {}).get(WORK_UID_LABEL)
        for state in self.works.values():
            if state.record.uid == uid and not state.deleted:
                return state
        return None

    def overlay_pods(self) -> list[Obj]:
        return cycle_apply.overlay_pods(self)

    def snapshot_objects(self) -> list[Obj]:
        return cycle_apply.snapshot_objects(self)

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
        status["topology"] = cluster_topology(state, self.hyper_nodes)  # docs/protocol.md "Topology"
        self.metrics.set_queues(status["queues"])
        status["kubernetesVersion"] = self.options.kubernetes_version
        return status

    # ------------------------------------------------------------------ job controller pass
    def priority_values(self) -> dict[str, int]:
        out = {}
        for pc in self.priority_classes:
            name = (pc.get("metadata") or {}).get("name")
            if name:
                out[str(name)] = int(pc.get("value") or 0)
        return out

    def next_requeue(self) -> Optional[float]:
        times = [s.run.requeue_at for s in self.works.values() if s.run is not None and s.run.requeue_at is not None]
        return min(times) if times else None

    async def controller_pass(self) -> None:
        now = self.clock.now()
        self.writes.settle(self.cache.pods)
        priorities = self.priority_values()
        by_work: dict[str, list[Obj]] = {}  # one scan of the cache per pass, not one per Work
        for pod in self.cache.pods.values():
            uid = ((pod.get("metadata") or {}).get("labels") or {}).get(WORK_UID_LABEL)
            if uid:
                by_work.setdefault(uid, []).append(pod)
        if self.works_listed:
            await self._delete_orphans(by_work)
        else:  # restarted, the Works not listed yet: the pods' labels say what to fence
            await fence_unknown_shares(self, by_work, {state.record.uid for state in self.works.values()})
        for key, state in list(self.works.items()):
            try:
                await self._work_pass(key, state, by_work.get(state.record.uid, []), priorities, now)
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - one Work's surprise must not stop the others
                log.exception("job controller pass for Work %s failed", key)

    async def _delete_orphans(self, by_work: dict[str, list[Obj]]) -> None:
        """Pods of Works that no longer exist (deleted while the agent was down)."""
        known = {state.record.uid for state in self.works.values()}
        for uid, pods in by_work.items():
            if uid not in known:
                await self.writes.delete_all(pods, f"its Work (uid {uid}) no longer exists")

    async def _work_pass(self, key: str, state: WorkState, pods: list[Obj], priorities: dict[str, int],
                         now: float) -> None:
        record, run = state.record, state.run
        if state.deleted:
            await self.writes.delete_all(pods, "Work deleted")
            if run is not None and run.objects:
                namespace = run.job.metadata.namespace or "default"
                for kind, name in sorted(run.objects):
                    await gateway_call(f"delete {kind} {namespace}/{name}",
                                       self.gateway.delete_object(kind, namespace, name))
                run.objects.clear()
            if not [p for p in self.pods_of(record) if not pod_terminating(p)]:
                del self.works[key]
                if run is not None:
                    self._forget_job_metrics(run)
            return
        if record.error or run is None:
            self.update_status(state, now)
            return
        if fence_applies(self, state):
            await stop_fenced(self, state, pods, now)
            return
        if record.placement.cancelled:  # before the release: reservations; after it: a torn-down gang
            state.gang.evaluate(record, 0, run.phase, "", now)
            run.deleted_by_us.update(p["metadata"]["name"] for p in pods)
            await self.writes.delete_all(pods, "placement cancelled")
            self.update_status(state, now)
            return
        # generations are fencing tokens: a pod of an older generation never starts, and never keeps
        # running unless the new generation is a re-division that keeps it (keepsFromGeneration);
        # after a re-placement the new generation's pods start afresh once the old ones are gone
        stale = [p for p in pods if record.placement.stale(pod_generation(p), bool(pod_node(p)))]
        run.deleted_by_us.update(p["metadata"]["name"] for p in stale)
        await self.writes.delete_all(stale, f"older placement generation than {record.placement.generation}",
                                     grace=None)
        had_group = run.pod_group is not None
        plan = run.plan(record, [p for p in pods if p not in stale], now, self.controller_config, priorities)
        if plan is not None:
            await carry_out(self, state, plan, self.options.cluster)
            if not had_group and run.pod_group is not None:
                self.changes.bump()  # a PodGroup to enqueue: the next session need not wait for a period
            if run.pending_followup:
                self.work_changed.set()  # e.g. the PodGroup was just made: the next pass may create pods
        self.evaluate_gang(state, state.session_reason, now)
        self.update_status(state, now)

    def _forget_job_metrics(self, run: JobRun) -> None:
        md = run.job.metadata
        name, namespace = md.name or "", md.namespace or "default"
        if any(s.run is not None and (s.run.job.metadata.name, s.run.job.metadata.namespace or "default")
               == (name, namespace) for s in self.works.values()):
            return  # deleted and created again under the same name: the series are the new one's
        self.metrics.forget_job(name, namespace, pod_group_name(name, md.uid or ""))

    def evaluate_gang(self, state: WorkState, reason: str, now: float) -> None:
        min_member = int(((state.podgroup or {}).get("spec") or {}).get("minMember", 0) or 0)
        annotations = dict(state.gang.annotations)  # a release clears them
        to_bind = state.gang.evaluate(state.record, min_member, job_phase(state.job_status),
                                      reason, now)
        for pod_key, node in to_bind.items():
            log.info("Binding Task %s to node %s (reservation released)", pod_key, node)
            self.writes.bind(pod_key, node, annotations.get(pod_key))

    def update_status(self, state: WorkState, now: float) -> None:
        pg_phase = state.run.pod_group_phase if state.run is not None else state.seed_pod_group_phase
        with_gang = state.record.placement.declared
        status = work_status(state.record, state.job_status, pg_phase, state.gang.status() if with_gang else None,
                             now, state.written, error=state.controller_error)
        status = with_fenced_condition(status, state, now)
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

    def take_federation_events(self) -> list[Obj]:
        events, self.federation_events = self.federation_events[:MAX_QUEUED_EVENTS], []
        return events

    # ------------------------------------------------------------------ scheduling pass
    async def schedule_pass(self) -> Optional[CycleResult]:
        return await cycle_apply.schedule_pass(self)

    def apply_cycle(self, result: CycleResult) -> None:
        cycle_apply.apply_cycle(self, result)
        if result.bindings or result.evictions or result.nominations:
            self.changes.bump()  # reservations and writes in flight change the next snapshot

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
            wait = self.options.controller_period * 4
            due = self.next_requeue()
            if due is not None:  # a deferred policy action or a TTL falls due
                wait = min(wait, max(0.0, due - self.clock.now()))
            await first_of(self.clock.sleep(wait), self.work_changed.wait(),
                         self.cache.changed.wait())
            await self.clock.sleep(self.options.controller_period / 5)

    async def schedule_loop(self) -> None:
        """A session when something changed since the last one (woken by the change, not by the
        next period), or a period passed with pending work (:class:`member_agent.changes.SessionGate`):
        an idle agent runs none."""
        await self.cache.synced.wait()
        changed = self.changes.subscribe()
        while True:
            changed.clear()
            self.load_conf()
            version = self.changes.version
            if not cycle_apply.has_scheduling_objects(self):
                self.session_gate.skip()  # no pod or PodGroup of ours: a session could do nothing
            elif self.session_gate.due(self.clock.monotonic(), version, cycle_apply.has_pending_work(self)):
                self.session_gate.ran(self.clock.monotonic(), version)
                await self.schedule_pass()
            else:
                self.session_gate.skip()
            if self.session_gate.went_idle(IDLE_TRIM_PERIODS):
                release_memory()
            # Event-driven: a change (a Work's pods created, a PodGroup enqueued, capacity freed)
            # starts the next session once its burst settled; the period only paces pending work.
            await first_of(changed.wait(), self.clock.sleep(self.options.schedule_period))
            if changed.is_set():
                await self.clock.sleep(self.options.session_settle)


#: periods without a session after which the agent hands its freed heap back to the OS once
IDLE_TRIM_PERIODS = 30


def release_memory() -> None:
    """Collect garbage and return the freed heap to the OS (glibc ``malloc_trim``), so an agent
    that ran jobs goes back to a small footprint when it is idle again."""
    gc.collect()
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)
