"""Free capacity per network domain, per tier: what issue 35's Cluster-status report needs.

For a pod shape (a request vector), each node holds ``min_d floor(free_d / request_d)`` such
pods; a HyperNode holds the sum over its nodes; per tier, the ``k`` HyperNodes holding the most
are "the largest gangs of that shape that fit inside one domain of the tier". Everything is one
vectorised pass over the node rows plus one ``bincount`` per tier (``domain_of`` arrays of
:class:`HyperNodeTree`), so a report of tiers × k × shapes costs O(shapes × (nodes + HyperNodes)).
A cluster without HyperNodes is one domain (the top tier only).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from member_agent.scheduler.framework.hypernodes import TOP, HyperNodeTree


@dataclass(frozen=True)
class DomainRoom:
    tier: int
    hypernode: str
    pods: int  # pods of the shape the domain's free resources hold


def pods_per_row(free: np.ndarray, request: np.ndarray) -> np.ndarray:
    """Per node row: how many pods of ``request`` its free resources (rows × dims) hold."""
    dims = np.flatnonzero(request >= 0.1)
    if len(dims) == 0 or len(free) == 0:
        return np.zeros(len(free), dtype=np.int64)
    held: np.ndarray = np.floor((free[:, dims] + 0.1) / request[dims]).min(axis=1).clip(min=0).astype(np.int64)
    return held


def top_domains(tree: HyperNodeTree | None, free: np.ndarray, request: np.ndarray, k: int) -> list[DomainRoom]:
    """Per tier (lowest first), the ``k`` HyperNodes holding the most pods of ``request``
    (ties: by name), from the nodes' free resources ``free`` (rows × dims)."""
    per_row = pods_per_row(free, request)
    if tree is None:
        return [DomainRoom(1, TOP, int(per_row.sum()))]
    out: list[DomainRoom] = []
    for tier in tree.tier_list:
        doms = tree.domain_of[tier]
        inside = doms >= 0
        room = np.bincount(doms[inside], weights=per_row[inside], minlength=len(tree.names))
        members = tree.by_tier[tier]
        order = members[np.lexsort((members, -room[members]))][:k]
        out.extend(DomainRoom(tier, tree.names[h], int(room[h])) for h in order.tolist())
    return out
