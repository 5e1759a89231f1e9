"""``Cluster.status.topology``: how large a gang fits inside one network domain, per tier.

The agent knows its HyperNodes (network domains: leaf switches at tier 1, spines at tier 2, ...)
and the federation does not; what the federation needs to keep a job, or one share of it, inside
one domain is, per tier, the free capacity of the roomiest domains. The agent ranks the domains
(``member_agent/topology_status.py``) and this module writes the report both sides agree on
(docs/protocol.md "Topology"):

    topology:
      k: 4                    # at most k domains per tier and per ranking
      topTier: 3              # the cluster's top tier: the whole cluster (capacity: nodeShapes)
      tiers:                  # the real tiers below it, ascending
      - tier: 1
        tierName: leaf
        domains: 4            # how many tier-1 domains the cluster has
        top:                  # the roomiest ones, each with its free capacity as node shapes
        - {name: leaf0, nodes: 4, shapes: [{count: 4, free: {cpu: "64", nvidia.com/gpu: "8", ...}}]}

A cluster without HyperNodes reports ``{k, topTier: 1, tiers: []}``: one domain, the cluster.
The report is tiers × k domains (a few shapes each) whatever the cluster's size, and it is part
of the status the agent sends when something changed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np
from pydantic import ValidationError

from policies.capacity import NodeState
from policies.capacity_summary import node_shapes
from policies.errors import InvalidConfiguration
from policies.models.karmada_cluster import ClusterTopology

#: domains reported per tier and per ranking (the federation sees the k roomiest)
TOPOLOGY_K = 4
#: the name of the one domain of a cluster without HyperNodes, and of every cluster's top tier
CLUSTER_DOMAIN = "<cluster-top-hypernode>"


@dataclass(frozen=True)
class RankedTier:
    """One tier below the top: its domains, roomiest first (at most the reported ones)."""

    tier: int
    tier_name: str
    domains: int  # how many domains the tier has in all
    ranked: Sequence[tuple[str, np.ndarray]]  # (HyperNode name, node rows of NodeState)


def topology_report(state: NodeState, tiers: Sequence[RankedTier], top_tier: int, k: int = TOPOLOGY_K) -> dict[str, Any]:
    """The ``status.topology`` dict for ``state``'s free resources and the ranked domains."""
    out: list[dict[str, Any]] = []
    for tier in sorted(tiers, key=lambda t: t.tier):
        top = [{"name": name, "nodes": int(len(rows)), "shapes": node_shapes(state, rows.tolist())}
               for name, rows in tier.ranked]
        entry: dict[str, Any] = {"tier": tier.tier, "domains": tier.domains, "top": top}
        if tier.tier_name:
            entry["tierName"] = tier.tier_name
        out.append(entry)
    return {"k": k, "topTier": max(1, top_tier), "tiers": out}


def single_domain_report(k: int = TOPOLOGY_K) -> dict[str, Any]:
    """A cluster without HyperNodes: one domain, the cluster (tier 1 is its top tier)."""
    return {"k": k, "topTier": 1, "tiers": []}


def parse_topology(raw: Mapping[str, Any], cluster: str) -> ClusterTopology:
    """Validate a reported ``status.topology``; a bad one names the cluster, the field path and the rule."""
    try:
        parsed = ClusterTopology.model_validate(raw)
    except ValidationError as err:
        first = err.errors()[0]
        path = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in first["loc"])
        raise InvalidConfiguration(f"Cluster {cluster}: status.topology{path}: {first['msg']}") from err
    tiers = [t.tier for t in parsed.tiers]
    if tiers != sorted(set(tiers)):
        raise InvalidConfiguration(f"Cluster {cluster}: status.topology.tiers: tiers must be distinct and ascending, "
                                   f"found {tiers}")
    if tiers and tiers[-1] >= parsed.top_tier:
        raise InvalidConfiguration(f"Cluster {cluster}: status.topology.topTier: must be above every reported tier "
                                   f"({tiers[-1]}), found {parsed.top_tier}")
    return parsed
