"""The agent's side of fencing, per Work: stop a share the federation may re-place once the
agent has been cut off for its fence time (:mod:`member_agent.fencing`), and keep it stopped.

A fenced share stays stopped for its placement generation, even after the agent reaches the
federation again: by then the federation may have re-placed it (a re-placed generation is never
brought back to life). The agent reports the fence on the Work (condition ``Fenced``) and in the
local Job's state; the federation answers with a new generation (docs/protocol.md, *Fencing*),
or deletes the Work.
"""

from __future__ import annotations

import logging
from typing import Any, Optional, Protocol

from member_agent.cluster.gateway import Obj, pod_terminating
from member_agent.fencing import Fence
from member_agent.pod_writes import PodWrites
from member_agent.work_state import WorkState
from member_agent.works import FENCE_LABEL, GENERATION_LABEL


class Agent(Protocol):
    """What fencing needs of :class:`member_agent.agent.Agent` (which imports this module)."""

    fence: Optional[Fence]
    fenced: dict[str, int]
    writes: PodWrites

    def update_status(self, state: WorkState, now: float) -> None: ...

log = logging.getLogger("caldera.agent.fence")
FENCED_CONDITION = "Fenced"
#: ``Agent.fenced`` value of a Work fenced by its pods' labels, not listed yet
UNLISTED = -1
#: member Job phases with nothing left to stop
FINISHED = frozenset({"Completed", "Failed", "Aborted", "Terminated"})


def fence_applies(agent: Agent, state: WorkState) -> bool:
    """Whether ``state``'s share is (or stays) fenced; records a new fence."""
    record = state.record
    if not record.placement.failover or state.run is None or state.run.phase in FINISHED:
        return False
    held = agent.fenced.get(record.uid)
    if held == UNLISTED:  # fenced by its pods' labels before the Works were listed: this generation stays
        held = agent.fenced[record.uid] = record.placement.generation
    if held is not None and record.placement.generation <= held:
        return True
    if held is not None:  # the federation answered with a newer generation: it starts afresh
        del agent.fenced[record.uid]
        state.fenced_reason = ""
    fence = agent.fence
    if fence is None or not fence.fenced(spanning=record.placement.clusters > 1):
        return False
    agent.fenced[record.uid] = record.placement.generation
    state.fenced_reason = fence.reason()
    log.warning("Work %s (generation %d): %s; stopping its pods", record.key, record.placement.generation,
                state.fenced_reason)
    return True


async def stop_fenced(agent: Agent, state: WorkState, pods: list[Obj], now: float) -> None:
    """Delete the share's pods with the fence's termination grace and say why on the local Job."""
    run = state.run
    assert run is not None
    if not state.fenced_reason:
        state.fenced_reason = "fenced: federation unreachable"
    grace = agent.fence.times().termination_grace if agent.fence is not None else 0
    live = [p for p in pods if not pod_terminating(p)]
    run.deleted_by_us.update(p["metadata"]["name"] for p in live)
    if state.gang.reservations:
        state.gang.drop("fenced")
    await agent.writes.delete_all(live, state.fenced_reason, grace)
    job_status = run.job.status
    if job_status is not None and job_status.state is not None:
        # a new status, never an edit in place: a status model's wire form is remembered by the
        # model (controllers/reconcile.py), so an edited one would be read back without the reason
        fenced = job_status.state.model_copy(update={"reason": FENCED_CONDITION, "message": state.fenced_reason})
        run.job.status = job_status.model_copy(update={"state": fenced})
    agent.update_status(state, now)


async def fence_unknown_shares(agent: Agent, by_work: dict[str, list[Obj]], known: set[str]) -> None:
    """Before the first list of the Works (a restart during a partition): stop the pods of Works
    the agent does not know yet by their labels, once the fence says so (or had said so before the
    restart), and remember their generation as fenced: listed later at that generation, the Work
    stays stopped (:func:`fence_applies`)."""
    fence = agent.fence
    if fence is None or not fence.enabled:
        return
    for uid, pods in by_work.items():
        live = [p for p in pods if not pod_terminating(p)]
        labels = [(p.get("metadata") or {}).get("labels") or {} for p in live]
        if uid in known or not live or any(lab.get(FENCE_LABEL) == "never" for lab in labels):
            continue  # a pod without the label predates it: treated as re-placeable (the default)
        spanning = any(lab.get(FENCE_LABEL) == "spanning" for lab in labels)
        if not (fence.fenced(spanning) or fence.fenced_at_restore(spanning)):
            continue
        generation = max(_int(lab.get(GENERATION_LABEL)) for lab in labels)
        # the Work's generation, once listed, stays fenced (it may be newer than the pods' labels: a
        # re-division that kept them); only a generation the federation gives later starts afresh
        agent.fenced.setdefault(uid, UNLISTED)
        reason = fence.reason()
        log.warning("Work uid %s (generation %d, not listed since the agent started): %s; stopping its %d pod(s)",
                    uid, generation, reason, len(live))
        await agent.writes.delete_all(live, reason, fence.times().termination_grace)


def _int(text: object) -> int:
    try:
        return int(str(text))
    except ValueError:
        return 0


def with_fenced_condition(status: Obj, state: WorkState, now: float) -> Obj:
    """The Work status with ``Fenced=True`` (its message says since when) when the share is fenced."""
    if not state.fenced_reason:
        return status
    from member_agent.works import condition  # the Work status helpers

    conditions: list[Any] = [c for c in status.get("conditions") or [] if c.get("type") != FENCED_CONDITION]
    fenced = condition(FENCED_CONDITION, True, "FederationUnreachable", state.fenced_reason, now)
    fenced["observedGeneration"] = state.record.placement.generation
    conditions.append(fenced)
    return dict(status, conditions=conditions)
