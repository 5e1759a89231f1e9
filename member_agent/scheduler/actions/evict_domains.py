"""The network domains ``gangpreempt`` and ``gangreclaim`` look for victims in (volcano.md §5.6).

Volcano's gang eviction plans inside one domain at a time: the job's HyperNode gradients for
*eviction* (network-topology-aware: tiers reversed, widest first, at most
``hypernode.gradient.evict.max-hypernodes`` HyperNodes, each with allocatable ≥ the job's
need), flattened, de-duplicated and capped at the action's ``maxDomains`` (≤ 0: 8). A job
without network topology (or a session without HyperNodes) has one domain, the cluster; a
hard-topology job with no eligible HyperNode has none and evicts nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from member_agent.scheduler.framework.hypernode_state import state_of

if TYPE_CHECKING:
    from member_agent.scheduler.framework.infos import JobInfo
    from member_agent.scheduler.framework.session import Session

#: (domain name, its sorted node rows, or None for every node)
EvictDomain = tuple[str, "np.ndarray | None"]
WHOLE_CLUSTER: list[EvictDomain] = [("", None)]


def victim_domains(ssn: Session, job: JobInfo, max_domains: int, need: np.ndarray) -> list[EvictDomain]:
    state = state_of(ssn)
    limit = state.limit(job) if state is not None else None
    if state is None or limit is None:
        return WHOLE_CLUSTER
    if limit.error:
        return []
    cap = max_domains if max_domains > 0 else 8
    evict_cap = state.evict_cap
    tree = state.tree
    out: list[EvictDomain] = []
    seen: set[int] = set()
    for group in state.gradients(job, limit, need, evict=True, cap=evict_cap):
        for h in group.tolist():
            if h in seen:
                continue
            seen.add(h)
            out.append((tree.names[h], None if h == tree.top else tree.rows[h]))
    return out[:cap]
