"""Network topology in the job-mode replay (``caldera simulate --clusters ... --topology ...``).

The cluster files' ``hyperNodes:`` go to each member's scheduler (as the agent passes them) and
to its reported ``status.topology`` (the federation's fleet tier, docs/topology.md). When a job's
pods are bound, :meth:`TopologyReplay.on_bind` finds the tier it spans: the tier of the lowest
HyperNode holding all of its nodes in its cluster (a cluster without HyperNodes is one domain,
tier 1), or the fleet tier (one above every member's top tier) when it was divided across
clusters. With ``--topology-slowdown TIER=FACTOR,...`` the job's run time is multiplied by the
factor of that tier (``fleet=F`` names the fleet tier; tiers not listed run at 1.0), a simple
model of communication cost, so JCT shows what topology is worth.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

from member_agent.scheduler.framework.hypernodes import HyperNodeTree, topology_of
from policies.errors import InvalidConfiguration

FLEET = "fleet"


def parse_slowdown(text: str) -> dict[str, float]:
    """``1=1.0,2=1.3,fleet=2`` -> {"1": 1.0, "2": 1.3, "fleet": 2.0}; a bad entry names itself and the rule."""
    out: dict[str, float] = {}
    for part in (p.strip() for p in text.split(",") if p.strip()):
        tier, sep, factor = part.partition("=")
        tier = tier.strip()
        if not sep or not (tier == FLEET or (tier.isdigit() and int(tier) >= 1)):
            raise InvalidConfiguration(f"--topology-slowdown: {part!r}: want TIER=FACTOR, TIER a tier >= 1 or 'fleet'")
        try:
            value = float(factor)
        except ValueError:
            value = -1.0
        if value < 1.0:
            raise InvalidConfiguration(f"--topology-slowdown: {part!r}: FACTOR must be a number >= 1")
        out[tier] = value
    return out


def parse_mode(text: Optional[str]) -> Optional[dict[str, Any]]:
    """``--topology``: none | soft | hard | hard:TIER -> the jobs' ``spec.networkTopology`` (None: none)."""
    if text in (None, "", "none"):
        return None
    mode, _, tier = str(text).partition(":")
    if mode == "soft" and not tier:
        return {"mode": "soft"}
    if mode == "hard" and (not tier or (tier.isdigit() and int(tier) >= 1)):
        return {"mode": "hard", **({"highestTierAllowed": int(tier)} if tier else {})}
    raise InvalidConfiguration(f"--topology: {text!r}: want none, soft, hard or hard:TIER (TIER >= 1)")


class TopologyReplay:
    """Per member, its HyperNode tree; per job, the tier it spanned."""

    def __init__(self, members: Mapping[str, tuple[Sequence[Mapping[str, Any]], Sequence[Mapping[str, Any]]]],
                 slowdown: Mapping[str, float], network_topology: Optional[dict[str, Any]]) -> None:
        """``members``: name -> (nodes, HyperNode manifests)."""
        self.trees: dict[str, Optional[HyperNodeTree]] = {}
        self.rows: dict[str, dict[str, int]] = {}
        for name, (nodes, hyper_nodes) in members.items():
            ordered = sorted(nodes, key=lambda n: n["metadata"]["name"])
            names = tuple(n["metadata"]["name"] for n in ordered)
            self.rows[name] = {n: i for i, n in enumerate(names)}
            tree = topology_of(list(hyper_nodes), names, [n["metadata"].get("labels") or {} for n in ordered])
            self.trees[name] = tree if tree is not None and tree.real else None
        tops = [t.top_tier if t is not None else 1 for t in self.trees.values()]
        self.fleet_tier = max(tops, default=1) + 1
        self.slowdown = dict(slowdown)
        self.network_topology = network_topology
        self.spans: dict[str, int] = {}  # job -> tier spanned

    def with_topology(self, manifest: dict[str, Any]) -> dict[str, Any]:
        if self.network_topology is not None:
            manifest["spec"]["networkTopology"] = dict(self.network_topology)
        return manifest

    def tier_of(self, member: str, nodes: Sequence[str]) -> int:
        tree = self.trees.get(member)
        if tree is None:
            return 1
        rows = [self.rows[member][n] for n in nodes if n in self.rows[member]]
        return int(tree.tiers[tree.lca_of_rows(rows)])

    def on_bind(self, member: str, job: str, nodes: Sequence[str], clusters: int) -> float:
        """Record the tier ``job`` spans now that its pods bind on ``nodes``; its run-time factor."""
        tier = self.fleet_tier if clusters > 1 else self.tier_of(member, nodes)
        self.spans[job] = max(tier, self.spans.get(job, 0)) if clusters > 1 else tier
        key = FLEET if tier == self.fleet_tier and clusters > 1 else str(tier)
        return self.slowdown.get(key, 1.0)

    def summary(self, jobs: Sequence[Any]) -> dict[str, Any]:
        """Per job the tier spanned, the count per tier, and the share of gangs in one tier-1 domain."""
        gangs = [j for j in jobs if j.name in self.spans and sum(j.clusters.values()) > 1]
        in_leaf = sum(1 for j in gangs if self.spans[j.name] == 1)
        per_tier: dict[str, int] = {}
        for job in jobs:
            if job.name in self.spans:
                tier = self.spans[job.name]
                label = FLEET if tier == self.fleet_tier and len(job.clusters) > 1 else str(tier)
                per_tier[label] = per_tier.get(label, 0) + 1
        return {"networkTopology": self.network_topology, "fleetTier": self.fleet_tier,
                "slowdown": self.slowdown or None, "jobsPerTier": dict(sorted(per_tier.items())),
                "gangs": len(gangs), "gangsInOneTier1Domain": (in_leaf / len(gangs)) if gangs else None,
                "tierSpanned": {j.name: self.spans[j.name] for j in jobs if j.name in self.spans}}
