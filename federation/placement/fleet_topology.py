"""The fleet tier: network topology across the federation (docs/topology.md "The fleet tier").

Every member reports, per tier of its HyperNodes, the free capacity of its roomiest network
domains (``status.topology``, docs/protocol.md "Topology"); its top tier is the whole cluster.
The boundary between clusters is the slowest link of all, so the federation adds one tier above
every member's top tier, the *fleet tier*: ``max(topTier) + 1`` over the clusters of the request.

A job's ``spec.networkTopology`` then decides how placement may divide it:

* ``mode: hard`` whose allowed tier is below the fleet tier (``highestTierAllowed`` below it,
  a ``highestTierName``, or no tier at all: each cluster's top tier) is never divided across
  clusters: the whole job goes to one cluster, and only where one domain of the allowed tier
  fits it, as the reported capacity says. The allowed tier resolves per cluster: a name is
  looked up in that cluster's tier names (a cluster without it is not a candidate), a number
  above the cluster's top tier means the whole cluster.
* ``mode: hard`` at or above the fleet tier may be divided as the policy says.
* ``mode: soft`` prefers fewer, larger shares in fewer domains: the whole job in one domain of
  the lowest tier that holds it in some cluster, else in one cluster, else divided with the
  fewest clusters (Karmada's Aggregated division) whatever the policy's weights.

Among the domains that fit, the lowest tier wins, then the tightest fit (the domain holding the
fewest extra pods: large domains stay free for large gangs), then the cluster name. The chosen
cluster is placed by the ordinary path on a view of it whose node shapes are the domain's, so
filters, assumed work and the exact gang-set check all apply. A job that fits nowhere fails
with the reason, which the placement controller writes as the binding's condition and a
``FailedScheduling`` event (the job stays Pending at the federation).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable

from federation.placement.decision import Failure, PlacementDecision
from federation.placement.estimate import Component, groups_of, max_sets, per_node_fit, resource_index
from federation.placement.request import (
    ClusterState,
    ClusterTopology,
    JobDemand,
    JobTopology,
    NodeShape,
    PlacementRequest,
)

PlaceFn = Callable[[PlacementRequest], PlacementDecision]
#: clusters tried, best domain first, before giving up (a domain that fits is rarely refused)
MAX_TRIES = 8
CLUSTER_DOMAIN = "<cluster-top-hypernode>"


@dataclass(frozen=True)
class DomainFit:
    tier: int
    room: int  # pods of the job's largest task the domain holds
    cluster: str
    domain: str
    shapes: tuple[NodeShape, ...]


def fleet_tier(clusters: tuple[ClusterState, ...]) -> int:
    """One tier above every member's top tier (a cluster without a report is one domain, tier 1)."""
    return max((c.topology.top_tier if c.topology else 1 for c in clusters), default=1) + 1


def describe(topology: JobTopology) -> str:
    limit = (f"highest tier {topology.highest_tier}" if topology.highest_tier is not None else
             f"highest tier name {topology.highest_tier_name}" if topology.highest_tier_name else "each cluster's top tier")
    return f"network topology ({topology.mode}, {limit})"


def allowed_tier(topology: JobTopology, cluster: ClusterTopology) -> int | None:
    """The cluster's tier the job may span (None: the cluster has no tier of that name)."""
    if topology.mode == "soft":
        return cluster.top_tier
    if topology.highest_tier_name:
        return next((t.tier for t in cluster.tiers if t.tier_name == topology.highest_tier_name), None)
    if topology.highest_tier is not None:
        return min(topology.highest_tier, cluster.top_tier)
    return cluster.top_tier


def _tiers(cluster: ClusterState) -> list[tuple[int, str, list[tuple[str, tuple[NodeShape, ...]]]]]:
    """(tier, tier name, [(domain, shapes)]) ascending; the top tier is the whole cluster."""
    topo = cluster.topology or ClusterTopology()
    out = [(t.tier, t.tier_name, [(d.name, d.shapes) for d in t.domains]) for t in topo.tiers]
    out.append((topo.top_tier, "", [(CLUSTER_DOMAIN, cluster.node_shapes or ())]))
    return out


def _fits(job: JobDemand, shapes: tuple[NodeShape, ...]) -> tuple[bool, int]:
    """Whether the whole job first-fits on ``shapes``, and how many of its largest task's pods they hold."""
    probe = ClusterState("domain", node_shapes=shapes)
    index = resource_index((probe,))
    if any(name not in index for t in job.tasks for name, amount in t.request if amount > 0):
        return False, 0
    groups = groups_of(probe, index)
    largest = max(job.tasks, key=lambda t: sum(a for _, a in t.request))
    vec = groups.vector(largest.request)
    room = 0 if vec is None else int((per_node_fit(groups.free, vec) * groups.counts * groups.mask(largest.node_selector)).sum())
    if room < largest.replicas:
        return False, room
    components = [Component(t.request, t.node_selector, t.replicas) for t in job.tasks if t.replicas > 0]
    whole, _ = max_sets(groups, components, upper=1)
    return whole >= 1, room


def best_domain(job: JobDemand, cluster: ClusterState, limit: int) -> tuple[DomainFit | None, str]:
    """The lowest-tier, tightest domain of ``cluster`` (tier <= ``limit``) the whole job fits in;
    otherwise None and what the roomiest domain of the limit tier holds."""
    roomiest, last = 0, 0
    for tier, _name, domains in _tiers(cluster):
        if tier > limit:
            break
        fitting: list[DomainFit] = []
        roomiest, last = 0, tier  # what the highest tier tried holds, for the message
        for domain, shapes in domains:
            ok, room = _fits(job, shapes)
            roomiest = max(roomiest, room)
            if ok:
                fitting.append(DomainFit(tier, room, cluster.name, domain, shapes))
        if fitting:
            return min(fitting, key=lambda f: (f.room, f.domain)), ""
    largest = max(job.tasks, key=lambda t: sum(a for _, a in t.request))
    return None, f"the roomiest tier-{last} domain holds {roomiest} of the job's {largest.name} pods"


def _candidates(job: JobDemand, topology: JobTopology,
                clusters: tuple[ClusterState, ...]) -> tuple[list[DomainFit], dict[str, str]]:
    fits: list[DomainFit] = []
    why: dict[str, str] = {}
    for cluster in clusters:
        limit = allowed_tier(topology, cluster.topology or ClusterTopology())
        if limit is None:
            why[cluster.name] = f"no tier named {topology.highest_tier_name}"
            continue
        found, reason = best_domain(job, cluster, limit)
        if found is None:
            why[cluster.name] = reason
        else:
            fits.append(found)
    fits.sort(key=lambda f: (f.tier, f.room, f.cluster))
    return fits, why


def _on_domain(request: PlacementRequest, fit: DomainFit) -> PlacementRequest:
    """The request with only ``fit``'s cluster, seen as the domain's nodes."""
    cluster = next(c for c in request.clusters if c.name == fit.cluster)
    view = replace(cluster, node_shapes=fit.shapes, preemptible=())
    return replace(request, clusters=(view,))


def _whole(request: PlacementRequest, place_fn: PlaceFn, fits: list[DomainFit]) -> tuple[PlacementDecision | None, list[str]]:
    refused = []
    for fit in fits[:MAX_TRIES]:
        decision = place_fn(_on_domain(request, fit))
        if decision.ok:
            where = "the whole cluster" if fit.domain == CLUSTER_DOMAIN else f"domain {fit.domain} (tier {fit.tier})"
            decision.reason = f"whole job in {where} of {fit.cluster}; {decision.reason}"
            return decision, refused
        refused.append(f"{fit.cluster}: {decision.reason}")
    return None, refused


def _failed(request: PlacementRequest, topology: JobTopology, why: dict[str, str], refused: list[str]) -> PlacementDecision:
    job = request.job
    pods = "+".join(f"{t.name}×{t.replicas}" for t in job.tasks if t.replicas)
    detail = "; ".join([f"{name}: {reason}" for name, reason in sorted(why.items())] + refused) or "no clusters"
    reason = (f"{describe(topology)}: no cluster has one domain of the allowed tier that fits the job's "
              f"{job.replicas} pods ({pods}), and the job is never divided across clusters below the fleet tier "
              f"{fleet_tier(request.clusters)} [{detail}]")
    return PlacementDecision(job.ref, "network topology", {}, reason, path="none",
                             failure=Failure("verify", reason, "Unschedulable"))


def place_with_topology(request: PlacementRequest, place_fn: PlaceFn) -> PlacementDecision:
    """Place ``request`` under its job's network topology (``place_fn``: the ordinary path)."""
    topology = request.job.topology
    if topology is None or request.job.replicas <= 0:
        return place_fn(request)
    fleet = fleet_tier(request.clusters)
    if topology.mode == "hard" and topology.highest_tier is not None and topology.highest_tier >= fleet:
        return place_fn(request)
    fits, why = _candidates(request.job, topology, request.clusters)
    decision, refused = _whole(request, place_fn, fits)
    if decision is not None:
        return decision
    if topology.mode == "hard":
        return _failed(request, topology, why, refused)
    divided = request
    if request.spec.strategy in ("StaticWeight", "DynamicWeight"):
        divided = replace(request, spec=replace(request.spec, strategy="Aggregated"))
    decision = place_fn(divided)
    if decision.ok:
        decision.reason = f"{describe(topology)}: no cluster holds the whole job, divided over the fleet tier " \
                          f"{fleet} with the fewest clusters; {decision.reason}"
    return decision


__all__ = ["place_with_topology", "fleet_tier", "allowed_tier", "best_domain", "DomainFit"]
