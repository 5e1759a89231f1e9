"""Carrying out what a job controller pass planned for a Work's Job, through the agent's gateway.

The pass itself is pure (:mod:`member_agent.job_runner`); this is its side: the gateway's writes of
plugin objects (best effort, logged, never fatal to the pass), the pod writes, the metrics and the
events, both on the local Job and queued for the federation.
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

from member_agent.cluster.clock import Clock
from member_agent.cluster.gateway import ClusterGateway, GatewayError, Obj
from member_agent.job_runner import RunPlan, federation_event
from member_agent.metrics import AgentMetrics
from member_agent.pod_writes import PodWrites
from member_agent.work_state import WorkState
from member_agent.works import JOB_API_VERSION

log = logging.getLogger("caldera.agent")


class Agent(Protocol):
    """What carrying out a plan needs of :class:`member_agent.agent.Agent` (which imports this module)."""

    gateway: ClusterGateway
    writes: PodWrites
    clock: Clock
    metrics: AgentMetrics
    federation_events: list[Obj]


async def gateway_call(what: str, call: Any) -> None:
    """A best-effort write of a plugin object: logged, never fatal to the pass."""
    try:
        await call
    except GatewayError as exc:
        log.warning("%s: %s", what, exc)


async def carry_out(agent: Agent, state: WorkState, plan: RunPlan, cluster: str) -> None:
    """Carry out a job controller pass's plan: plugin objects deleted and applied, pods deleted and
    created, the first pod and the Job's phase in the metrics, the plan's events recorded on the
    local Job and queued for the federation (as from ``cluster``). A refused Job only logs, once."""
    run, record = state.run, state.record
    assert run is not None
    if plan.error:
        if state.controller_error != plan.error:
            log.warning("Work %s: the job controller refused the Job: %s", record.key, plan.error)
        state.controller_error = plan.error
        return
    state.controller_error = None
    namespace = run.job.metadata.namespace or "default"
    for kind, name in plan.delete_objects:
        await gateway_call(f"delete {kind} {namespace}/{name}", agent.gateway.delete_object(kind, namespace, name))
    for obj in plan.apply_objects:
        md = obj.get("metadata") or {}
        await gateway_call(f"apply {obj.get('kind')} {namespace}/{md.get('name')}",
                           agent.gateway.apply_object(dict(obj, metadata=dict(md, namespace=namespace))))
    for name in plan.delete_pods:
        await agent.writes.delete(namespace, name)
    for pod in plan.create_pods:
        await agent.writes.create(pod)
    now = agent.clock.now()
    if plan.create_pods and not state.first_pod_reported:
        state.first_pod_reported = True
        agent.metrics.observe_first_pod(max(0.0, now - state.first_seen))
    if run.phase != state.reported_phase:
        state.reported_phase = run.phase
        agent.metrics.set_job_phase(run.job.metadata.name or "", namespace, run.job.spec.queue or "default",
                                    run.phase)
    if plan.events:
        involved = dict(run.job.to_wire(), apiVersion=JOB_API_VERSION, kind="Job")
        involved.pop("status", None)
        for event_type, reason, message in plan.events:
            await agent.gateway.record_event(involved, event_type, reason, message)
            agent.federation_events.append(federation_event(run, cluster, agent.clock.now(),
                                                            event_type, reason, message))
