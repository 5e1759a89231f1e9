"""The agent's side of the two-phase gang start (docs/protocol.md, DESIGN.md "Gang across clusters").

Per Work, :class:`GangTracker` holds the reservation of a held share and decides the phase the
agent reports in ``status.gang`` for the Work's placement generation:

* ``hold: true`` and the session cannot place the gang — ``Unschedulable`` with the session's
  reason (e.g. ``gang: 6/8 tasks fit``) until it can; the federation decides when to cancel.
* ``hold: true`` — the scheduler's bindings for the share's pods are kept as a *reservation*
  (pod → node, resources held in every later snapshot, nothing bound). Once ``minMember`` pods
  are reserved the share is ``Reserved`` until ``reservedUntil`` (now + reserveTimeoutSeconds);
  an expired reservation is dropped and the share goes back to ``Pending`` (reason says so)
  and stops competing for resources until the federation cancels or releases it.
* ``hold: false`` after a reservation — the reserved pods are bound to their nodes (``Released``),
  then ``Running`` once the job runs.
* ``cancelled: true`` — the reservation is dropped, the share's unbound pods are deleted
  (``Cancelled``).
* a newer generation starts over; an older one is ignored by the caller (fencing).

Pure bookkeeping: no I/O, time passed in.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from member_agent.cluster.clock import rfc3339
from member_agent.cluster.gateway import Obj
from member_agent.works import WorkRecord
from policies.k8s.timestamps import epoch_seconds


@dataclass
class GangTracker:
    generation: int
    phase: str = "Pending"
    reason: str = ""
    reserved_until: Optional[float] = None
    reservations: dict[str, str] = field(default_factory=dict)  # "ns/pod" -> node
    #: "ns/pod" -> the session's pod annotations (GPU ids, NUMA decision) for the reserved node:
    #: shown on the reserved pods in every snapshot, patched onto them when they are bound.
    annotations: dict[str, dict[str, str]] = field(default_factory=dict)
    released: bool = False
    #: The reservation timed out: the share stops competing until the federation acts.
    expired: bool = False

    def reserve(self, pod_key: str, node: str, annotations: Optional[dict[str, str]] = None) -> None:
        if not self.expired:
            self.reservations[pod_key] = node
            if annotations:
                self.annotations[pod_key] = dict(annotations)

    def unreserve(self, pod_key: str) -> bool:
        """Give up one pod's reservation (the session evicted it); whether it was reserved."""
        self.annotations.pop(pod_key, None)
        return self.reservations.pop(pod_key, None) is not None

    @property
    def schedulable(self) -> bool:
        """Whether the share's PodGroup goes into the next snapshot."""
        return not self.expired and self.phase != "Cancelled"

    def drop(self, reason: str) -> dict[str, str]:
        dropped, self.reservations = self.reservations, {}
        self.annotations = {}
        self.reserved_until = None
        self.reason = reason
        return dropped

    def evaluate(self, record: WorkRecord, min_member: int, job_phase: str, schedule_reason: str,
                 now: float) -> dict[str, str]:
        """Move to the phase the record and the reservation call for.

        Returns the pods to bind now (non-empty exactly once, on release); read their annotations
        from :attr:`annotations` before calling (a release clears them)."""
        placement = record.placement
        to_bind: dict[str, str] = {}
        if placement.cancelled:
            self.drop("placement cancelled by the federation")
            self.phase = "Cancelled"
            return to_bind
        if job_phase == "Failed":
            self.phase, self.reason = "Failed", "job failed"
            return to_bind
        if record.gang_managed and placement.hold:
            if min_member > 0 and len(self.reservations) >= min_member:
                if self.phase != "Reserved":
                    self.phase = "Reserved"
                    self.reserved_until = now + placement.reserve_timeout
                    self.reason = f"gang: {len(self.reservations)}/{min_member} tasks reserved"
                elif self.reserved_until is not None and now > self.reserved_until:
                    self.drop(f"reservation expired after {placement.reserve_timeout}s without release")
                    self.phase, self.expired = "Pending", True
            elif self.expired:
                self.phase = "Pending"
            elif schedule_reason:
                # The session could not place the gang (Volcano's PodGroup condition Unschedulable):
                # a hint for the federation, which still decides when to cancel.
                self.phase, self.reason = "Unschedulable", schedule_reason
            else:
                self.phase = "Pending"
                self.reason = f"gang: {len(self.reservations)}/{min_member} tasks reserved"
            return to_bind
        self.expired = False  # released (or never held): schedule the share normally
        if self.reservations:
            to_bind, self.reservations = self.reservations, {}
            self.annotations = {}
            self.released = True
            self.reserved_until = None
            self.phase, self.reason = "Released", "released by the federation; binding reserved pods"
            return to_bind
        if job_phase in ("Running", "Completed", "Completing"):
            self.phase, self.reason = "Running", ""
        elif self.phase not in ("Released",):
            self.phase = "Pending"
            self.reason = schedule_reason
        return to_bind

    def status(self) -> Obj:
        out: Obj = {"generation": self.generation, "phase": self.phase}
        if self.phase == "Reserved" and self.reserved_until is not None:
            out["reservedUntil"] = rfc3339(self.reserved_until)
        if self.reason:
            out["reason"] = self.reason
        if self.reservations and not self.released:  # survives a restart of the agent
            out["reservations"] = dict(sorted(self.reservations.items()))
            if self.annotations:
                out["reservationAnnotations"] = {k: dict(v) for k, v in sorted(self.annotations.items())}
        return out

    def restore(self, gang: Obj) -> None:
        """After an agent restart: the held reservation this generation last reported (Work status)."""
        if gang.get("generation") != self.generation or gang.get("phase") not in ("Reserved", "Pending"):
            return
        held = gang.get("reservations") or {}
        if not isinstance(held, dict) or not held:
            return
        self.reservations = {str(k): str(v) for k, v in held.items()}
        notes = gang.get("reservationAnnotations") or {}
        self.annotations = {str(k): dict(v) for k, v in notes.items() if isinstance(v, dict) and k in self.reservations}
        if gang.get("phase") == "Reserved":
            self.phase = "Reserved"
            until = gang.get("reservedUntil")
            try:
                self.reserved_until = epoch_seconds(until) if isinstance(until, str) else None
            except ValueError:
                self.reserved_until = None
