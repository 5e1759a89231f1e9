"""Self-fencing: an agent cut off from the federation stops what the federation may re-place.

The federation re-places a cluster's jobs once its Lease has gone unrenewed for its lease grace
``L`` plus its failover grace ``F`` (the NoExecute taint), and tears down a gang spanning clusters
as soon as one of them is Unknown (after ``L``). Both count on their own monotonic clocks: the
federation from the last renewal it saw, the agent from the *start* of its last successful
renewal (never later than the moment the federation stored it). The agent therefore stops:

* a share the federation may re-place on its own (a single-cluster share, a Duplicated copy)
  after ``single = L + F - T - margin``; its pods are deleted with grace ``T``, so they are gone
  ``margin`` seconds before the re-placement can happen;
* a share of a gang spanning clusters after ``spanning = max(renew + 1, L - margin)`` (at most
  ``single``): the federation withdraws the gang's other shares after ``L``, so neither half runs
  long without the other; never before a renewal is overdue, so a lease grace shorter than the
  margin does not stop spanning shares of a connected agent;
* nothing whose Work says ``spec.placement.failover: false`` (the policy tolerates the
  unreachable NoExecute taint forever: the federation never re-places it while the cluster is
  Unknown).

``margin`` is one renew period plus the network delay allowance. ``T`` is the pod termination
grace (``--fence-termination-grace``, the federation's published value when unset), shortened
to half the room when the graces are too short for it, so the fence always comes first. The
federation publishes ``L``, ``F`` and ``T`` in the Cluster's ``status.failoverTiming``; the agent
reports what it derived in ``status.fence`` (docs/protocol.md, *Fencing*). Until the federation
has answered once the agent assumes Karmada's defaults (40 s + 300 s). Time comes from the
injected clock.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Optional

from member_agent.cluster.clock import Clock, rfc3339

DEFAULT_LEASE_GRACE = 40.0
DEFAULT_FAILOVER_GRACE = 300.0
DEFAULT_TERMINATION_GRACE = 30
#: seconds allowed for a request to reach the federation and its watchers
NETWORK_DELAY = 5.0
TIMING_FIELD = "failoverTiming"
FENCE_FIELD = "fence"


@dataclass(frozen=True)
class FenceTimes:
    """Seconds without a successful renewal after which shares stop, and how they stop."""

    single: float
    spanning: float
    termination_grace: int
    margin: float
    lease_grace: float
    failover_grace: float


def derive(lease_grace: float, failover_grace: float, termination_grace: int, renew_period: float,
           network_delay: float = NETWORK_DELAY) -> FenceTimes:
    """The fence times for the federation's graces (module docstring)."""
    margin = renew_period + network_delay
    room = max(0.0, lease_grace + failover_grace - margin)
    grace = max(0, min(int(termination_grace), int(room / 2)))
    single = room - grace
    # never before a renewal is overdue (one renew period + 1 s): a fence of 0 would stop a
    # spanning share while its agent is connected (a lease grace under the margin, e.g. 4 s)
    overdue = min(single, renew_period + 1.0)
    spanning = max(overdue, min(single, lease_grace - margin))
    return FenceTimes(single, spanning, grace, margin, lease_grace, failover_grace)


def published_timing(cluster: Mapping[str, Any]) -> Optional[dict[str, float]]:
    """The graces the federation published on a Cluster (``status.failoverTiming``), if any."""
    raw = ((cluster.get("status") or {}).get(TIMING_FIELD)) or {}
    if not isinstance(raw, Mapping):
        return None
    try:
        out = {"lease": float(raw["leaseGraceSeconds"]), "failover": float(raw["failoverGraceSeconds"])}
        if raw.get("podTerminationGraceSeconds") is not None:
            out["termination"] = float(raw["podTerminationGraceSeconds"])
    except (KeyError, TypeError, ValueError):
        return None
    return out if out["lease"] >= 0 and out["failover"] >= 0 else None


class Fence:
    """When this agent last reached the federation, and whether its shares must stop now."""

    def __init__(self, clock: Clock, renew_period: float, *, termination_grace: Optional[int] = None,
                 fence_after: Optional[float] = None, enabled: bool = True) -> None:
        self.clock = clock
        self.renew_period = renew_period
        #: --fence-termination-grace (None: the federation's published value, else 30)
        self.termination_flag = termination_grace
        #: --fence-after (None: derived from the federation's graces)
        self.fence_after = fence_after
        self.enabled = enabled
        self.timing: Optional[dict[str, float]] = None
        # an agent that never reached the federation counts from its start
        self.last_renewal = clock.monotonic()
        self.last_renewal_wall = clock.now()
        #: wall time the current fence began (None: not fenced)
        self.fenced_at: Optional[float] = None
        #: seconds without a renewal already behind a restarted agent (None: nothing restored)
        self.restored_gap: Optional[float] = None

    def restart(self) -> None:
        """The sync starts (again) with nothing persisted: count from now, as if the federation
        had just been reached."""
        self.renewed(self.clock.monotonic(), self.clock.now())

    def record(self) -> dict[str, Any]:
        """What a restarted agent needs to fence on time (:mod:`member_agent.fence_store`): the
        wall time of the last successful renewal's start and the federation's graces."""
        out: dict[str, Any] = {"lastRenewal": rfc3339(self.last_renewal_wall),
                               "lastRenewalUnix": round(self.last_renewal_wall, 3)}
        if self.timing is not None:
            out["timing"] = dict(self.timing)
        return out

    def restore(self, record: Mapping[str, Any]) -> bool:
        """Resume from a persisted :meth:`record` (a restart): the time since its renewal counts as
        time without one, measured on the wall clock (the only clock that survives a restart; a
        record from the future counts as a renewal now). False when the record is unusable."""
        try:
            last_wall = float(record["lastRenewalUnix"])
        except (KeyError, TypeError, ValueError):
            return False
        timing = record.get("timing")
        if isinstance(timing, Mapping) and self.timing is None:
            self.learn({"status": {TIMING_FIELD: {"leaseGraceSeconds": timing.get("lease"),
                                                  "failoverGraceSeconds": timing.get("failover"),
                                                  "podTerminationGraceSeconds": timing.get("termination")}}})
        gap = max(0.0, self.clock.now() - last_wall)
        self.last_renewal = self.clock.monotonic() - gap
        self.last_renewal_wall = min(last_wall, self.clock.now())
        self.restored_gap = gap
        return True

    def fenced_at_restore(self, spanning: bool) -> bool:
        """Whether the agent had already been cut off for the fence time when it restarted (its
        shares stay stopped even if the federation answers before it knows their Works)."""
        if not self.enabled or self.restored_gap is None:
            return False
        times = self.times()
        return self.restored_gap >= (times.spanning if spanning else times.single)

    def renewed(self, started_monotonic: float, started_wall: float) -> None:
        """A renewal that started at ``started_*`` succeeded."""
        if started_monotonic >= self.last_renewal:
            self.last_renewal, self.last_renewal_wall = started_monotonic, started_wall
        self.fenced_at = None

    def learn(self, cluster: Mapping[str, Any]) -> None:
        timing = published_timing(cluster)
        if timing is not None:
            self.timing = timing

    def times(self) -> FenceTimes:
        timing = self.timing or {}
        termination = self.termination_flag
        if termination is None:
            termination = int(timing.get("termination", DEFAULT_TERMINATION_GRACE))
        times = derive(timing.get("lease", DEFAULT_LEASE_GRACE), timing.get("failover", DEFAULT_FAILOVER_GRACE),
                       termination, self.renew_period)
        if self.fence_after is not None:
            after = max(0.0, self.fence_after)
            times = FenceTimes(min(after, times.single), min(after, times.spanning), times.termination_grace,
                               times.margin, times.lease_grace, times.failover_grace)
        return times

    def unreachable_for(self) -> float:
        return max(0.0, self.clock.monotonic() - self.last_renewal)

    def fenced(self, spanning: bool) -> bool:
        """Whether a share (of a gang spanning clusters, or not) must be stopped now."""
        if not self.enabled:
            return False
        times = self.times()
        limit = times.spanning if spanning else times.single
        if self.unreachable_for() < limit:
            return False
        if self.fenced_at is None:
            self.fenced_at = self.clock.now()
        return True

    def reason(self) -> str:
        return f"fenced: federation unreachable since {rfc3339(self.last_renewal_wall)}"

    def report(self) -> dict[str, Any]:
        """``status.fence`` of the Cluster (what the federation checks against its graces)."""
        times = self.times()
        return {"enabled": self.enabled, "fenceSeconds": round(times.single, 3),
                "spanningFenceSeconds": round(times.spanning, 3),
                "podTerminationGraceSeconds": times.termination_grace, "marginSeconds": round(times.margin, 3),
                "basis": "federation" if self.timing is not None else "defaults",
                "leaseGraceSeconds": times.lease_grace, "failoverGraceSeconds": times.failover_grace}
