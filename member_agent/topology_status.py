"""The agent's ``status.topology``: per tier, the roomiest network domains (docs/protocol.md "Topology").

Domains are ranked by :func:`top_domains` (one vectorised pass over the node rows and one
``bincount`` per tier) for each node shape of the cluster: per distinct allocatable vector, how
many *whole free nodes* of that kind a domain holds (what multi-node gangs of whole-node pods
need), and, on a GPU cluster, how many free GPUs it holds (for gangs of smaller pods). The union
of the k best of each ranking is reported, each domain with its free capacity as node shapes
(:mod:`policies.topology_report`), so the federation can estimate any pod shape exactly on them.
Nodes that are not Ready or are cordoned count as holding nothing.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from member_agent.scheduler.framework.domain_capacity import top_domains
from member_agent.scheduler.framework.hypernodes import HyperNodeTree, topology_of
from policies.capacity import NodeState
from policies.resources import GPU, PODS
from policies.topology_report import TOPOLOGY_K, RankedTier, single_domain_report, topology_report


def _rankings(state: NodeState) -> list[np.ndarray]:
    """The request rows the domains are ranked by: a whole node of each distinct allocatable
    vector, and one GPU when the cluster has GPUs."""
    requests: list[np.ndarray] = []
    if len(state.names):
        for row in np.unique(state.alloc, axis=0):
            if (row > 0).any():
                requests.append(row)
    gpu = state.column.get(GPU)
    if gpu is not None and state.alloc[:, gpu].any():
        one = np.zeros(len(state.columns))
        one[gpu] = 1000.0  # policies.resources: scalar resources in milli-units
        one[state.column[PODS]] = 1.0
        requests.append(one)
    return requests


def ranked_tiers(tree: HyperNodeTree, state: NodeState, k: int) -> list[RankedTier]:
    usable = state.ready & ~state.unschedulable
    free = np.where(usable[:, None], np.maximum(state.free, 0.0), 0.0)
    chosen: dict[int, list[str]] = {tier: [] for tier in tree.tier_list[:-1]}
    for request in _rankings(state):
        for room in top_domains(tree, free, request, k):
            if room.tier in chosen and room.hypernode not in chosen[room.tier]:
                chosen[room.tier].append(room.hypernode)
    out = []
    for tier in tree.tier_list[:-1]:
        members = tree.by_tier[tier]
        tier_name = next((tree.tier_names[h] for h in members.tolist() if tree.tier_names[h]), "")
        ranked = [(name, np.flatnonzero(tree.domain_of[tier] == tree.index[name])) for name in chosen[tier]]
        out.append(RankedTier(tier, tier_name, int(len(members)), ranked))
    return out


def cluster_topology(state: NodeState, hyper_nodes: Sequence[Mapping[str, Any]], k: int = TOPOLOGY_K) -> dict[str, Any]:
    """``status.topology`` for the nodes and pods of ``state`` and the cluster's HyperNodes."""
    tree = topology_of(hyper_nodes, tuple(state.names), state.labels) if hyper_nodes else None
    if tree is None or not tree.real:
        return single_domain_report(k)
    return topology_report(state, ranked_tiers(tree, state, k), tree.top_tier, k)
