"""Step 1, filter: which clusters may take the job at all, and why each other one may not.

Readiness is damped: a change of the Ready condition counts only after it has held for a
threshold (Karmada's ``--cluster-failure-threshold`` / ``--cluster-success-threshold``, 30 s),
so a flapping cluster neither loses nor gains work on every blip. A lease older than its
duration reads as Ready=Unknown from the moment it expired. A cluster that is not
(effectively) ready carries Karmada's automatic NoSchedule taint (``not-ready`` or
``unreachable``) and is filtered through the taint rules, so a policy may tolerate it.
As in Karmada, NoSchedule taints do not remove a cluster already holding the job;
NoExecute taints always do.
"""

from __future__ import annotations

from dataclasses import dataclass

from federation.placement.request import (
    ClusterAffinity,
    ClusterState,
    Options,
    SpreadConstraint,
    Taint,
    Toleration,
)
from federation.placement.selectors import affinity_mismatch
from policies.k8s import tolerations as k8s_tolerations

NOT_READY_TAINT = "cluster.karmada.io/not-ready"
UNREACHABLE_TAINT = "cluster.karmada.io/unreachable"


def effective_ready(cluster: ClusterState, now: float, options: Options) -> tuple[str, str]:
    """The damped Ready status and a note explaining it."""
    raw, since = cluster.ready, cluster.ready_since
    if cluster.lease_renewed is not None and now - cluster.lease_renewed > cluster.lease_duration:
        # the lease duration is itself the grace period: no second damping on top
        return "Unknown", f"lease not renewed for {now - cluster.lease_renewed:.0f}s"
    if since is None:
        return raw, ""
    held = now - since
    if raw == "True" and held < options.ready_success_threshold:
        return "False", f"Ready for {held:.0f}s only (success threshold {options.ready_success_threshold:.0f}s)"
    if raw != "True" and held < options.ready_failure_threshold:
        return "True", f"{raw} for {held:.0f}s only (failure threshold {options.ready_failure_threshold:.0f}s)"
    return raw, ""


def readiness_taints(status: str) -> tuple[Taint, ...]:
    if status == "False":
        return (Taint(NOT_READY_TAINT, effect="NoSchedule"),)
    if status == "Unknown":
        return (Taint(UNREACHABLE_TAINT, effect="NoSchedule"),)
    return ()


def _missing_spread_field(cluster: ClusterState, spread: tuple[SpreadConstraint, ...]) -> str:
    for constraint in spread:
        if constraint.spread_by_field == "provider" and not cluster.provider:
            return "no provider, required by spreadByField provider"
        if constraint.spread_by_field == "region" and not cluster.region:
            return "no region, required by spreadByField region"
        if constraint.spread_by_field == "zone" and not cluster.zones:
            return "no zone, required by spreadByField zone"
        if constraint.spread_by_label and constraint.spread_by_label not in dict(cluster.labels):
            return f"no label {constraint.spread_by_label!r}, required by spreadByLabel"
    return ""


@dataclass(frozen=True)
class FilterResult:
    """Candidates in name order; why each other cluster is out; readiness notes."""

    candidates: tuple[ClusterState, ...]
    excluded: dict[str, str]
    notes: dict[str, str]
    #: the answer holds on [valid_from, valid_until): no readiness boundary lies in between
    valid_from: float
    valid_until: float


def filter_clusters(
    clusters: tuple[ClusterState, ...],
    affinity: ClusterAffinity,
    tolerations: tuple[Toleration, ...],
    spread: tuple[SpreadConstraint, ...],
    previous: frozenset[str],
    now: float,
    options: Options,
) -> FilterResult:
    out: list[ClusterState] = []
    excluded: dict[str, str] = {}
    notes: dict[str, str] = {}
    for cluster in sorted(clusters, key=lambda c: c.name):
        if cluster.deleting:
            excluded[cluster.name] = "being deleted"
            continue
        mismatch = affinity_mismatch(affinity, cluster)
        if mismatch:
            excluded[cluster.name] = mismatch
            continue
        status, note = effective_ready(cluster, now, options)
        taints = cluster.taints + readiness_taints(status)
        if cluster.name in previous:  # NoSchedule only blocks new placements
            taints = tuple(t for t in taints if t.effect == "NoExecute")
        blocking = k8s_tolerations.untolerated(taints, tolerations) if taints else []
        if blocking:
            shown = ", ".join(f"{t.key}{'=' + t.value if t.value else ''}:{t.effect}" for t in blocking)
            why = f"untolerated taint {shown}"
            excluded[cluster.name] = f"{why} ({note})" if note else why
            continue
        missing = _missing_spread_field(cluster, spread) if spread else ""
        if missing:
            excluded[cluster.name] = missing
            continue
        if note:
            notes[cluster.name] = note
        out.append(cluster)
    return FilterResult(tuple(out), excluded, notes, now, next_boundary(clusters, now, options))


def next_boundary(clusters: tuple[ClusterState, ...], now: float, options: Options) -> float:
    """The first time after ``now`` at which some cluster's effective readiness may change."""
    boundary = float("inf")
    for c in clusters:
        if c.ready_since is not None:
            for t in (c.ready_since + options.ready_success_threshold, c.ready_since + options.ready_failure_threshold):
                if t > now:
                    boundary = min(boundary, t)
        if c.lease_renewed is not None:
            t = c.lease_renewed + c.lease_duration
            if t >= now:
                boundary = min(boundary, t + 1e-9)
    return boundary
