"""The agent's scheduling pass: snapshot → ``run_cycle`` (worker thread) → :class:`CycleResult`
applied to the agent and, through :mod:`member_agent.pod_writes`, to the member cluster.

The snapshot is the cache with every write still in flight shown as done, and a held share's
reservations shown as bound with their device annotations (:func:`overlay_pods`).
What each result field becomes (docs/agent.md, docs/scheduler.md "Part 2"):

* ``bindings`` — bound through the gateway after ``pod_annotations`` are patched onto the pod;
  for a *held* share (two-phase start) kept as the share's reservation with its annotations
  instead, and bound with them on release (:mod:`member_agent.gang`).
* ``device_allocations`` — logged with the binding and kept for ``/status`` (the GPU ids also
  reach the pod in ``volcano.sh/gpu-index``).
* ``evictions`` + ``eviction_reasons`` — ``DisruptionTarget`` condition with the reason, delete
  with grace, an ``Evict`` event and a log line; a reserved (never bound) pod only loses its
  reservation, the pod itself is not deleted.
* ``nominations`` — the pipelined preemptor's ``status.nominatedNodeName``.
* ``pod_groups`` / ``conditions`` / ``jobs`` — the PodGroup phase of each Work's run, the gang
  verdict of a held share, Volcano's metrics.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import replace
from typing import Optional, Protocol

from member_agent import scheduling
from member_agent.cluster.cache import ClusterCache
from member_agent.cluster.clock import Clock
from member_agent.cluster.gateway import Obj, pod_managed, pod_node, pod_terminal, pod_terminating
from member_agent.metrics import AgentMetrics
from member_agent.pod_writes import PodWrites, format_devices, with_placement
from member_agent.queue_allotment import allotted_queues
from member_agent.scheduler.framework.result import CycleResult
from member_agent.scheduler.framework.session import SessionOptions
from member_agent.work_state import WorkState
from policies.scheduler_conf import SchedulerConf

log = logging.getLogger("caldera.agent")


class SchedulingOptions(Protocol):
    @property
    def use_real_scheduler(self) -> bool: ...

    @property
    def session_options(self) -> SessionOptions: ...


class Agent(Protocol):
    """What a scheduling pass reads and changes of :class:`member_agent.agent.Agent` (which calls
    it): a protocol, so this module needs no import of the agent."""

    cache: ClusterCache
    works: dict[str, WorkState]
    writes: PodWrites
    queues: list[Obj]
    priority_classes: list[Obj]
    conf: SchedulerConf
    metrics: AgentMetrics
    last_cycle: Optional[float]
    last_processed_node_index: int
    work_changed: asyncio.Event

    @property
    def clock(self) -> Clock: ...

    @property
    def options(self) -> SchedulingOptions: ...

    def apply_cycle(self, result: CycleResult) -> None: ...

    def state_of_pod(self, pod: Obj) -> Optional[WorkState]: ...

    def evaluate_gang(self, state: WorkState, reason: str, now: float) -> None: ...

    def update_status(self, state: WorkState, now: float) -> None: ...

    def stale_generation(self, pod: Obj) -> bool: ...


def overlay_pods(agent: Agent) -> list[Obj]:
    """Cluster pods, with reserved and in-flight bindings shown as bound (with the session's
    device annotations, so the next session does not hand the same GPUs out again)."""
    reserved: dict[str, tuple[str, Optional[dict[str, str]]]] = {}
    for state in agent.works.values():
        for key, node in state.gang.reservations.items():
            reserved[key] = (node, state.gang.annotations.get(key))
    out = []
    for key, pod in agent.cache.pods.items():
        pod = agent.writes.overlay(key, pod)
        if key in reserved and not pod_node(pod):
            pod = with_placement(pod, *reserved[key])
        out.append(pod)
    return out


def snapshot_objects(agent: Agent) -> list[Obj]:
    groups = [s.podgroup for s in agent.works.values()
              if s.podgroup and s.podgroup.get("kind") == "PodGroup" and not s.deleted and not s.controller_error
              and not s.record.placement.cancelled and not s.record.error and s.gang.schedulable]
    queues = allotted_queues(agent.queues, (s.record.job for s in agent.works.values() if not s.deleted))
    return [*agent.cache.nodes.values(), *overlay_pods(agent), *groups, *queues, *agent.priority_classes,
            *agent.hyper_nodes]


def has_scheduling_objects(agent: Agent) -> bool:
    """Whether a session has anything to act on: a pod of ours or a PodGroup (an agent without
    jobs never runs one, and never loads the session scheduler)."""
    return any(pod_managed(p) for p in agent.cache.pods.values()) or any(
        s.podgroup and not s.deleted for s in agent.works.values())


def has_pending_work(agent: Agent) -> bool:
    """Whether a session could do something even if nothing changed: a pod of ours waiting for a
    node, or a PodGroup still to enqueue or to start (Pending/Inqueue)."""
    for pod in agent.cache.pods.values():
        if pod_managed(pod) and not pod_node(pod) and not pod_terminal(pod) and not pod_terminating(pod):
            return True
    for state in agent.works.values():
        group = state.podgroup
        if group and not state.deleted and ((group.get("status") or {}).get("phase") or "Pending") in (
                "Pending", "Inqueue"):
            return True
    return False


async def schedule_pass(agent: Agent) -> Optional[CycleResult]:
    if not agent.cache.synced.is_set():
        return None
    if agent.hyper_nodes:
        await agent.check_topology()
    objects = snapshot_objects(agent)
    started = time.perf_counter()
    # The node search resumes where the previous session stopped, as Volcano's does.
    options = replace(agent.options.session_options, last_processed_node_index=agent.last_processed_node_index)
    try:
        result = await asyncio.to_thread(scheduling.run_once, objects, agent.conf, agent.clock,
                                         agent.options.use_real_scheduler, agent.snapshot_sync, options)
    except Exception:  # noqa: BLE001 - one bad cycle must not stop the agent
        log.exception("scheduling cycle failed")
        agent.metrics.attempts.labels("error").inc()
        return None
    agent.last_processed_node_index = result.last_processed_node_index
    agent.apply_cycle(result)
    agent.metrics.observe_cycle(result, (time.perf_counter() - started) * 1000.0)
    agent.last_cycle = agent.clock.now()
    return result


def apply_cycle(agent: Agent, result: CycleResult) -> None:
    loud = bool(result.bindings or result.evictions or result.nominations)
    for line in result.logs:
        log.log(logging.INFO if loud else logging.DEBUG, "%s", line)
    _apply_bindings(agent, result)
    _apply_evictions(agent, result)
    _apply_nominations(agent, result)
    _apply_pod_groups(agent, result)
    pod_group_metrics(agent)


def _apply_bindings(agent: Agent, result: CycleResult) -> None:
    now = agent.clock.now()
    for pod_key, node in result.bindings.items():
        pod = agent.cache.pods.get(pod_key)
        if pod is None or pod_node(pod):
            continue
        if agent.stale_generation(pod):  # fencing token: a pod of a superseded placement never starts
            log.info("Not binding Task %s: its placement generation is superseded", pod_key)
            continue
        annotations = result.pod_annotations.get(pod_key)
        devices = result.device_allocations.get(pod_key)
        if devices:
            agent.writes.devices[pod_key] = devices
        state = agent.state_of_pod(pod)
        if state is not None and state.record.gang_managed and state.record.placement.hold:
            state.gang.reserve(pod_key, node, annotations)
            log.info("Reserving Task %s on node %s (held share of Work %s)%s", pod_key, node, state.record.key,
                     _devices_suffix(devices))
        else:
            log.info("Binding Task %s to node %s%s", pod_key, node, _devices_suffix(devices))
            agent.writes.bind(pod_key, node, annotations)
        if state is not None and state.run is not None:
            job = state.run.job
            agent.metrics.observe_job_placed(job.metadata.name or "", job.metadata.namespace or "",
                                             job.spec.queue or "default", state.first_seen, now)


def _devices_suffix(devices: Optional[dict[str, list[int]]]) -> str:
    return f" with devices {format_devices(devices)}" if devices else ""


def _apply_evictions(agent: Agent, result: CycleResult) -> None:
    for pod_key in result.evictions:
        reason = result.eviction_reasons.get(pod_key, "")
        pod = agent.cache.pods.get(pod_key)
        state = agent.state_of_pod(pod) if pod is not None else None
        if pod is not None and not pod_node(pod) and state is not None and state.gang.unreserve(pod_key):
            # Reserved, never bound: the reservation goes, the pod stays pending for its share.
            log.info("Evicting Task %s: dropping its reservation: %s", pod_key, reason or "no reason given")
            continue
        log.info("Evicting Task %s: %s", pod_key, reason or "no reason given")
        agent.writes.evict(pod_key, reason, pod)
    agent.metrics.observe_evictions(result.evictions, result.eviction_reasons)


def _apply_nominations(agent: Agent, result: CycleResult) -> None:
    for pod_key in result.nominations_cleared:
        pod = agent.cache.pods.get(pod_key)
        if pod is None or pod_node(pod) or pod_key in result.nominations:
            continue
        log.info("Clearing the nomination of Task %s: it no longer holds", pod_key)
        agent.writes.nominate(pod_key, None, pod)
    for pod_key, node in result.nominations.items():
        pod = agent.cache.pods.get(pod_key)
        if pod is None or pod_node(pod):
            continue
        log.info("Nominating Task %s to node %s (pipelined; waiting for its victims to leave)", pod_key, node)
        agent.writes.nominate(pod_key, node, pod)


def _apply_pod_groups(agent: Agent, result: CycleResult) -> None:
    now = agent.clock.now()
    pg_state: dict[str, WorkState] = {}
    for s in agent.works.values():
        md = (s.podgroup or {}).get("metadata", {})
        pg_state[f"{md.get('namespace')}/{md.get('name')}"] = s
    for pg_key, phase in result.pod_groups.items():
        state = pg_state.get(pg_key)
        if state is None or state.run is None or state.podgroup is None:
            continue
        if state.record.gang_managed and state.record.placement.hold and phase in ("Running", "Completed"):
            phase = "Inqueue"  # reserved, not bound: the PodGroup is not running yet
        if state.run.set_pod_group_phase(phase, result.conditions.get(pg_key)):
            log.info("PodGroup %s is %s", pg_key, phase.lower())
            agent.work_changed.set()  # e.g. Inqueue: the controller creates the pods now
        if state.run.set_pod_group_annotations(result.pod_group_annotations.get(pg_key) or {}):
            agent.work_changed.set()
        if phase == "Running" and not state.scheduled_reported and state.record.job:
            state.scheduled_reported = True
            md = state.record.job.get("metadata") or {}
            agent.metrics.observe_job_scheduled(md.get("name", ""), md.get("namespace", ""),
                                                state.podgroup.get("spec", {}).get("queue", "default"),
                                                max(0.0, now - state.first_seen))
        report = result.jobs.get(pg_key)
        # A verdict only when the session saw the whole gang: pods still on their way into the
        # cache ("NotEnoughPods" in Volcano) are no reason to call the share unschedulable.
        whole = report is not None and report.pending > 0 and report.tasks >= max(1, report.min_available)
        state.session_reason = report.reason if whole and report is not None else ""
        agent.evaluate_gang(state, state.session_reason, now)
        agent.update_status(state, now)


def pod_group_metrics(agent: Agent) -> None:
    counts: dict[str, dict[str, int]] = {}
    for state in agent.works.values():
        if state.run is None or state.deleted or state.run.pod_group_phase is None:
            continue
        queue = state.run.job.spec.queue or "default"
        phase = state.run.pod_group_phase  # a finished job's deleted PodGroup counts in its last phase
        bucket = counts.setdefault(queue, {})
        bucket[phase] = bucket.get(phase, 0) + 1
    agent.metrics.set_pod_groups(counts)
