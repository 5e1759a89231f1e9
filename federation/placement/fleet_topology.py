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
  the lowest tier that holds it in some cluster, else in one cluster, else divided over the
  fewest clusters (Karmada's Aggregated division) whatever the policy's weights.

Among the domains that fit, the lowest tier wins, then the tightest fit (the domain holding the
fewest extra pods: large domains stay free for large gangs), then the cluster name. All domains
of all clusters are rows of one matrix (:mod:`federation.placement.fleet_domains`), so the
search is one vectorised pass per task shape; only the best few candidates get the exact
gang-set check. The chosen cluster is then placed by the ordinary path on a view of it whose
node shapes are the domain's, so filters, assumed work and verification all apply. A job that
fits nowhere fails with the reason, which the placement controller writes as the binding's
condition and a ``FailedScheduling`` event (the job stays Pending at the federation).
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Callable, Mapping

import numpy as np

from federation.placement.decision import Failure, PlacementDecision
from federation.placement.estimate import Component, Groups, max_sets
from federation.placement.fleet_domains import CLUSTER_DOMAIN, DomainCache, DomainIndex
from federation.placement.request import ClusterState, JobDemand, JobTopology, PlacementRequest

PlaceFn = Callable[[PlacementRequest], PlacementDecision]
#: domains tried, best first, before giving up (a domain that fits is rarely refused)
MAX_TRIES = 8


def fleet_tier(clusters: tuple[ClusterState, ...]) -> int:
    """One tier above every member's top tier (a cluster without a report is one domain, tier 1)."""
    return max((c.topology.top_tier if c.topology else 1 for c in clusters), default=1) + 1


def describe(topology: JobTopology) -> str:
    limit = (f"highest tier {topology.highest_tier}" if topology.highest_tier is not None else
             f"highest tier name {topology.highest_tier_name}" if topology.highest_tier_name else "each cluster's top tier")
    return f"network topology ({topology.mode}, {limit})"


def allowed_tiers(topology: JobTopology, index: DomainIndex) -> np.ndarray:
    """Per cluster of ``index``, the tier the job may span (-1: the cluster has no tier of that name)."""
    if topology.mode == "soft" or (topology.highest_tier is None and not topology.highest_tier_name):
        return index.top_tier.copy()
    if topology.highest_tier_name:
        return np.array([names.get(topology.highest_tier_name, -1) for names in index.tier_names], dtype=np.int64)
    return np.minimum(index.top_tier, int(topology.highest_tier or 0))


def _largest(job: JobDemand) -> int:
    return max(range(len(job.tasks)), key=lambda i: sum(a for _, a in job.tasks[i].request))


class FleetSearch:
    """The domains of one request where the whole job may go, best first."""

    def __init__(self, index: DomainIndex, job: JobDemand, topology: JobTopology,
                 filtered: Mapping[str, str] | None = None) -> None:
        self.index, self.job = index, job
        #: cluster -> why the policy's filters drop it ("" kept; None: every cluster kept)
        self.filtered = filtered
        self.limit = allowed_tiers(topology, index)
        if filtered is not None:  # a cluster the filters drop is no candidate (limit -2)
            dropped = np.array([filtered.get(n, "") != "" for n in index.cluster_names], dtype=bool)
            self.limit[dropped] = -2
        tasks = [t for t in job.tasks if t.replicas > 0]
        rooms = [index.room(t.request, t.node_selector) for t in tasks]
        largest = job.tasks[_largest(job)]
        self.room = index.room(largest.request, largest.node_selector)  # orders the fits: the tightest first
        holds = np.ones(len(index.names), dtype=bool)
        for task, room in zip(tasks, rooms, strict=True):
            holds &= room >= task.replicas
        self.eligible = index.tier <= self.limit[index.cluster_of]
        candidates = np.flatnonzero(self.eligible & holds)
        order = np.lexsort((candidates, self.room[candidates], index.tier[candidates]))
        self.candidates = candidates[order].tolist()

    def exact(self, d: int) -> bool:
        """Whether the whole job first-fits as one gang set on domain ``d``'s node shapes."""
        if len(self.job.tasks) == 1:
            return True  # one pod shape: the summed per-node fit is exact
        rows = np.flatnonzero(self.index.domain_of_row == d)
        groups = Groups(self.index.counts[rows], self.index.free[rows],
                        [self.index.labels[r] for r in rows.tolist()], self.index.index)
        components = [Component(t.request, t.node_selector, t.replicas) for t in self.job.tasks if t.replicas > 0]
        return max_sets(groups, components, upper=1)[0] >= 1

    def why_not(self, ci: int) -> str:
        """Why cluster ``ci`` holds no candidate: no tier of the name, or what its best domain holds."""
        limit = int(self.limit[ci])
        if limit == -2 and self.filtered is not None:
            return f"excluded: {self.filtered.get(self.index.cluster_names[ci])}"
        if limit < 0:
            return "no tier named " + str(self.job.topology.highest_tier_name if self.job.topology else "")
        mine = np.flatnonzero((self.index.cluster_of == ci) & self.eligible)
        tier = int(self.index.tier[mine].max()) if len(mine) else limit
        roomiest = int(self.room[mine[self.index.tier[mine] == tier]].max()) if len(mine) else 0
        task = self.job.tasks[_largest(self.job)]
        return f"the roomiest tier-{tier} domain holds {roomiest} of the job's {task.name} pods"


def _on_domain(request: PlacementRequest, index: DomainIndex, d: int) -> PlacementRequest:
    """The request with only domain ``d``'s cluster, seen as the domain's nodes."""
    cluster = index.clusters[int(index.cluster_of[d])]
    view = replace(cluster, node_shapes=index.shapes[d], preemptible=())
    return replace(request, clusters=(view,))


def _whole(request: PlacementRequest, search: FleetSearch, on_view: PlaceFn) -> tuple[PlacementDecision | None, list[str]]:
    index, tried = search.index, 0
    refused: list[str] = []
    for d in search.candidates:
        if tried >= MAX_TRIES:
            break
        if not search.exact(d):
            continue
        tried += 1
        decision = on_view(_on_domain(request, index, d))
        cluster = index.cluster_names[int(index.cluster_of[d])]
        if decision.ok:
            where = "the whole cluster" if index.names[d] == CLUSTER_DOMAIN else \
                f"domain {index.names[d]} (tier {int(index.tier[d])})"
            # the view holds one cluster: the note on the policy's other clusterNames is not news
            reason = re.sub(r" \(clusterNames lists unknown [^)]*\)$", "", decision.reason)
            decision.reason = f"whole job in {where} of {cluster}; {reason}"
            return decision, refused
        refused.append(f"{cluster}: {decision.reason}")
    return None, refused


def _failed(request: PlacementRequest, topology: JobTopology, search: FleetSearch, refused: list[str]) -> PlacementDecision:
    job = request.job
    pods = "+".join(f"{t.name}×{t.replicas}" for t in job.tasks if t.replicas)
    placed_on = {r.split(":", 1)[0] for r in refused}
    why = [f"{name}: {search.why_not(ci)}" for ci, name in enumerate(search.index.cluster_names) if name not in placed_on]
    detail = "; ".join(sorted(why) + refused) or "no clusters"
    reason = (f"{describe(topology)}: no cluster has one domain of the allowed tier that fits the job's "
              f"{job.replicas} pods ({pods}), and the job is never divided across clusters below the fleet tier "
              f"{fleet_tier(request.clusters)} [{detail}]")
    return PlacementDecision(job.ref, "network topology", {}, reason, path="none",
                             failure=Failure("verify", reason, "Unschedulable"))


def place_with_topology(request: PlacementRequest, place_fn: PlaceFn, on_view: PlaceFn | None = None,
                        domains: DomainCache | None = None, filtered: Mapping[str, str] | None = None) -> PlacementDecision:
    """Place ``request`` under its job's network topology. ``place_fn`` is the ordinary path;
    ``on_view`` places on one cluster seen as one domain (default ``place_fn``; a separate placer
    keeps those one-cluster tables out of the snapshot's caches); ``filtered``: cluster -> why the
    policy's filters drop it ("" when kept), so dropped clusters' domains are never tried."""
    topology = request.job.topology
    if topology is None or request.job.replicas <= 0 or not request.clusters:
        return place_fn(request)
    fleet = fleet_tier(request.clusters)
    if topology.mode == "hard" and topology.highest_tier is not None and topology.highest_tier >= fleet:
        return place_fn(request)
    search = FleetSearch((domains or DomainCache()).get(request.clusters), request.job, topology, filtered)
    decision, refused = _whole(request, search, on_view or place_fn)
    if decision is not None:
        return decision
    if topology.mode == "hard":
        return _failed(request, topology, search, refused)
    divided = request
    if request.spec.strategy in ("StaticWeight", "DynamicWeight"):
        divided = replace(request, spec=replace(request.spec, strategy="Aggregated"))
    decision = place_fn(divided)
    if decision.ok:
        decision.reason = (f"{describe(topology)}: no cluster holds the whole job, divided over the fleet tier "
                           f"{fleet} with the fewest clusters; {decision.reason}")
    return decision


__all__ = ["place_with_topology", "fleet_tier", "allowed_tiers", "FleetSearch"]
