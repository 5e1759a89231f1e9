"""What the agent holds for one Work: its record, the two-phase tracker, the job controller run,
and the status written back (docs/agent.md)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from member_agent.cluster.gateway import Obj
from member_agent.gang import GangTracker
from member_agent.job_runner import JobRun
from member_agent.works import WorkRecord


@dataclass
class WorkState:
    record: WorkRecord
    gang: GangTracker
    run: Optional[JobRun] = None
    written: Optional[Obj] = None  # last status written to the federation
    deleted: bool = False
    first_seen: float = 0.0
    scheduled_reported: bool = False
    pending_status: Optional[Obj] = None  # computed, not yet written
    spec_text: str = ""
    #: The job controller refused the Job (reported as ``Applied=False``, reason ``InvalidJob``).
    controller_error: Optional[str] = None
    #: Seeds from the Work's status after a restart (used when the run starts).
    seed_status: Obj = field(default_factory=dict)
    seed_pod_group_phase: Optional[str] = None
    first_pod_reported: bool = False
    #: Why the last session could not place the job's gang ("" when it could, or had nothing to do).
    session_reason: str = ""
    reported_phase: str = ""
    #: "fenced: federation unreachable since ..." while the share is fenced (member_agent.fenced_works)
    fenced_reason: str = ""

    @property
    def job_status(self) -> Obj:
        return self.run.status if self.run is not None else self.seed_status

    @property
    def podgroup(self) -> Optional[Obj]:
        return self.run.pod_group if self.run is not None else None

    def seed_from_status(self, status: Obj) -> None:
        """After a restart: the Job's status as last reported, the PodGroup phase, the gang phase if released."""
        manifests = status.get("manifestStatuses") or []
        observed = status.get("observedPlacementGeneration")
        if isinstance(observed, int) and observed < self.record.placement.generation:
            manifests = []  # the status of a superseded generation: its pods' counts are not this one's
        if manifests and isinstance(manifests[0].get("status"), dict):
            self.seed_status = dict(manifests[0]["status"])
        gang = status.get("gang") or {}
        if gang.get("generation") == self.record.placement.generation and gang.get("phase") in ("Released", "Running"):
            self.gang.phase = gang["phase"]
            self.gang.released = True
        elif self.record.placement.hold:
            self.gang.restore(gang)  # a held share keeps the nodes it reserved before the restart
        for cond in status.get("conditions") or []:
            if cond.get("type") == "PodGroup" and cond.get("reason"):
                self.seed_pod_group_phase = cond["reason"]
