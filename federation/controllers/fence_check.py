"""Fencing, federation side (pure): the graces it publishes, the agent's fence it checks, and the
``caldera serve`` flag combinations it refuses.

The federation re-places a cluster's jobs once its Lease has gone unrenewed for the lease grace
``L`` plus the failover grace ``F``; each agent stops its re-placeable shares before that
(``member_agent/fencing.py``). The health controller publishes ``L``, ``F`` and the pod
termination grace ``T`` in the Cluster's ``status.failoverTiming`` and checks the
``status.fence`` the agent reports against them (docs/protocol.md, *Fencing*).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: the smallest margin an agent can have: a 1 s renew period plus the 5 s network allowance
MIN_MARGIN = 6.0
#: the spanning fence may come this much after the federation tears the gang's other shares down
SPANNING_SLACK = 5.0
DEFAULT_LEASE_GRACE = 40.0
DEFAULT_TERMINATION_GRACE = 30.0


def timing(lease_grace: float, failover_grace: float, termination_grace: float) -> dict[str, float]:
    """``status.failoverTiming`` (without the check), in seconds."""
    return {"leaseGraceSeconds": lease_grace, "failoverGraceSeconds": failover_grace,
            "podTerminationGraceSeconds": termination_grace}


def _number(raw: Mapping[str, Any], key: str) -> float | None:
    try:
        return float(raw[key])
    except (KeyError, TypeError, ValueError):
        return None


def check(report: Any, published: Mapping[str, float]) -> tuple[str, str]:
    """``(result, message)`` for the agent's ``status.fence``: ``Safe``, ``Unsafe`` or ``Unreported``."""
    if not isinstance(report, Mapping):
        return "Unreported", "the agent reports no fence (status.fence): a partition may run its jobs twice"
    if report.get("enabled") is False:
        return "Unsafe", "the agent runs with --no-self-fence: a partition may run its jobs twice"
    lease, failover = published["leaseGraceSeconds"], published["failoverGraceSeconds"]
    fence, spanning = _number(report, "fenceSeconds"), _number(report, "spanningFenceSeconds")
    grace = _number(report, "podTerminationGraceSeconds")
    if fence is None or spanning is None or grace is None:
        return "Unsafe", "status.fence lacks fenceSeconds, spanningFenceSeconds or podTerminationGraceSeconds"
    if fence + grace >= lease + failover:
        return "Unsafe", (f"fence {fence:g}s + termination grace {grace:g}s is not before the re-placement at "
                          f"lease grace {lease:g}s + failover grace {failover:g}s")
    if spanning > lease + SPANNING_SLACK:
        return "Unsafe", (f"spanning fence {spanning:g}s comes more than {SPANNING_SLACK:g}s after the lease "
                          f"grace {lease:g}s, when the federation tears a spanning gang down")
    return "Safe", (f"fence {fence:g}s (spanning gangs {spanning:g}s) + termination grace {grace:g}s before "
                    f"the re-placement at {lease + failover:g}s")


def published_termination_grace(lease_grace: float, failover_grace: float, termination_grace: float | None) -> float:
    """The pod termination grace published to agents: the flag's, else 30 s cut to half the room
    the graces leave (so short graces still fence before the re-placement)."""
    if termination_grace is not None:
        return termination_grace
    return max(0.0, min(DEFAULT_TERMINATION_GRACE, (lease_grace + failover_grace - MIN_MARGIN) / 2))


def unsafe_flags(lease_grace: float | None, failover_grace: float | None, termination_grace: float | None) -> str | None:
    """Why ``caldera serve``'s health flags could let a re-placement come before the fence (None: safe)."""
    lease = DEFAULT_LEASE_GRACE if lease_grace is None else lease_grace
    failover = 300.0 if failover_grace is None else failover_grace
    if lease + failover <= MIN_MARGIN:
        return (f"--cluster-lease-grace ({lease:g}) + --cluster-failover-grace ({failover:g}) must exceed "
                f"{MIN_MARGIN:g}s (one renew period and the network delay): a cut-off agent could not stop "
                f"its jobs before they are re-placed")
    if termination_grace is not None and lease + failover <= termination_grace + MIN_MARGIN:
        return (f"--cluster-lease-grace ({lease:g}) + --cluster-failover-grace ({failover:g}) must exceed "
                f"--pod-termination-grace ({termination_grace:g}) + {MIN_MARGIN:g}s (one renew period and the "
                f"network delay): otherwise a job could be re-placed before the cut-off agent's pods have stopped")
    return None
