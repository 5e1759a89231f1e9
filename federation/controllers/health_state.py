"""Cluster health as a pure state machine: lease age -> Ready condition and taints.

``assess(observation, recovering_since, now, config)`` decides, for one Cluster, what its
``Ready`` condition and Caldera-managed taints should be (reference/karmada.md §6.2, §6.3):

* lease renewed within its duration (``leaseDurationSeconds``, 40 s by default, or
  ``lease_grace`` when set) -> healthy;
* lease older than that (or no lease ``startup_grace`` after the Cluster was created) ->
  ``Ready=Unknown`` and ``cluster.karmada.io/unreachable:NoSchedule``;
  a cluster whose agent reports ``Ready=False`` with a fresh lease gets
  ``cluster.karmada.io/not-ready:NoSchedule`` instead;
* unhealthy for ``failover_grace`` (300 s by default) -> the same key with ``NoExecute`` as
  well: the placement controller re-places jobs on that cluster elsewhere;
* back to healthy only after the lease has stayed fresh for ``success_threshold`` (damping:
  one lucky renewal of a flapping agent does not clear the taints).

When the cluster became unhealthy is read back from the NoSchedule taint's ``timeAdded``, so
the decision survives a controller restart. All time comes in through ``now``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from federation.controllers.status_aggregate import parse_stamp, stamp

UNREACHABLE = "cluster.karmada.io/unreachable"
NOT_READY = "cluster.karmada.io/not-ready"
MANAGED_KEYS = frozenset({UNREACHABLE, NOT_READY})
DEFAULT_LEASE_DURATION = 40.0


@dataclass(frozen=True)
class HealthConfig:
    #: seconds without renewal before a lease counts as expired; None: the lease's own duration
    lease_grace: float | None = None
    #: seconds unhealthy before the NoExecute taint (Karmada's old failover-eviction-timeout)
    failover_grace: float = 300.0
    #: seconds the lease must stay fresh before an unhealthy cluster is Ready again
    success_threshold: float = 30.0
    #: seconds a new Cluster may go without any lease (ClusterStatusNeverUpdated)
    startup_grace: float = 60.0
    #: how often the controller re-evaluates every cluster
    monitor_period: float = 5.0
    #: grace of the pods a cut-off agent deletes when it fences (published in status.failoverTiming;
    #: None: 30 s, cut to half the room short graces leave)
    pod_termination_grace: float | None = None


@dataclass(frozen=True)
class Observation:
    """What the API tells about one cluster right now."""

    name: str
    created: datetime | None
    lease_renewed: datetime | None
    lease_duration: float | None
    #: the Ready condition currently on the Cluster (status, reason)
    ready_status: str | None
    ready_reason: str | None
    #: taints currently on the Cluster: (key, effect, timeAdded)
    taints: tuple[tuple[str, str, str | None], ...] = ()

    def unhealthy_since(self) -> datetime | None:
        """When our NoSchedule taint was added (the cluster is unhealthy since then), if present."""
        for key, effect, added in self.taints:
            if key in MANAGED_KEYS and effect == "NoSchedule":
                return parse_stamp(added)
        return None

    def is_tainted(self) -> bool:
        return any(key in MANAGED_KEYS for key, _effect, _added in self.taints)


@dataclass(frozen=True)
class Verdict:
    healthy: bool
    ready: str  # "True" | "False" | "Unknown"
    reason: str
    message: str
    #: Caldera-managed taints the Cluster should carry: (key, effect, timeAdded)
    taints: tuple[tuple[str, str, str], ...]
    lease_age: float | None
    #: when the current fresh streak started while still tainted (carry to the next call)
    recovering_since: datetime | None = None
    #: no opinion yet (a new cluster without a lease, inside startup_grace): write nothing
    undecided: bool = False


def lease_age(obs: Observation, now: datetime) -> float | None:
    if obs.lease_renewed is None:
        return None
    return max(0.0, (now - obs.lease_renewed).total_seconds())


def _grace(obs: Observation, config: HealthConfig) -> float:
    if config.lease_grace is not None:
        return config.lease_grace
    return float(obs.lease_duration or DEFAULT_LEASE_DURATION)


def _lease_problem(obs: Observation, now: datetime, config: HealthConfig) -> tuple[str, str] | None:
    """(reason, message) when the lease says the cluster is gone, else None."""
    age = lease_age(obs, now)
    grace = _grace(obs, config)
    if age is None:
        since_created = (now - obs.created).total_seconds() if obs.created else 0.0
        if since_created > config.startup_grace:
            return ("ClusterStatusNeverUpdated",
                    f"no Lease karmada-cluster/{obs.name} within {config.startup_grace:.0f}s of registration")
        return None
    if age > grace:
        renewed = stamp(obs.lease_renewed) if obs.lease_renewed else "never"
        return ("ClusterStatusUnknown",
                f"Lease karmada-cluster/{obs.name} not renewed within {grace:.0f}s (last renewal {renewed})")
    return None


def assess(obs: Observation, recovering_since: datetime | None, now: datetime, config: HealthConfig) -> Verdict:
    """The Ready condition and managed taints ``obs`` should have at ``now`` (module docstring)."""
    age = lease_age(obs, now)
    problem = _lease_problem(obs, now, config)
    if obs.lease_renewed is None and problem is None and not obs.is_tainted():
        return Verdict(obs.ready_status == "True", obs.ready_status or "Unknown", obs.ready_reason or "",
                       "waiting for the first Lease renewal", (), None, undecided=True)
    agent_not_ready = problem is None and obs.ready_status == "False"
    if problem is None and not agent_not_ready:
        if not obs.is_tainted():
            reason = obs.ready_reason if obs.ready_status == "True" and obs.ready_reason else "ClusterReady"
            return Verdict(True, "True", reason, "lease fresh: cluster is healthy and ready to accept workloads",
                           (), age)
        # tainted by us earlier: recover only after the lease has stayed fresh long enough
        start = recovering_since or now
        fresh_for = (now - start).total_seconds()
        if fresh_for >= config.success_threshold:
            return Verdict(True, "True", "ClusterReady",
                           f"lease fresh again for {fresh_for:.0f}s: cluster is ready", (), age)
        problem = ("ClusterRecovering", f"lease renewed at {stamp(start)}; waiting for "
                                        f"{config.success_threshold:.0f}s of fresh heartbeats before clearing taints")
        recovering = start
    else:
        recovering = None
    since = obs.unhealthy_since() or now
    key = NOT_READY if agent_not_ready else UNREACHABLE
    if agent_not_ready:
        ready, reason, message = "False", str(obs.ready_reason or "ClusterNotReady"), "the agent reports NotReady"
    else:
        assert problem is not None
        ready, reason, message = "Unknown", problem[0], problem[1]
    # keep the key we already set while recovering, so the taint's timeAdded (our memory) is stable
    existing = {(k, e): a for k, e, a in obs.taints if k in MANAGED_KEYS}
    if recovering is not None and existing:
        key = sorted(existing)[0][0]
    added = stamp(since)
    taints: list[tuple[str, str, str]] = [(key, "NoSchedule", existing.get((key, "NoSchedule")) or added)]
    unhealthy_for = (now - since).total_seconds()
    # while recovering nothing escalates: NoExecute stays if it was there, but is never added
    if (key, "NoExecute") in existing or (recovering is None and unhealthy_for >= config.failover_grace):
        taints.append((key, "NoExecute", existing.get((key, "NoExecute")) or stamp(now)))
    return Verdict(False, ready, reason, message, tuple(taints), age, recovering)


def merged_taints(current: list[dict[str, object]], verdict: Verdict) -> list[dict[str, object]]:
    """``current`` with the managed taints replaced by the verdict's (admins' taints untouched)."""
    kept = [t for t in current if not (isinstance(t, dict) and t.get("key") in MANAGED_KEYS)]
    ours: list[dict[str, object]] = [{"key": k, "effect": e, "timeAdded": a} for k, e, a in verdict.taints]
    return kept + ours
