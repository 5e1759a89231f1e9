"""The agent's HyperNodes: the tree every session reads, its problems and each HyperNode's status.

The HyperNodes come from the sim cluster file's ``hyperNodes:`` or, on a real member, from its
HyperNode objects and node-label discovery (member_agent/hypernode_discovery.py). Sessions read
only their names and specs, so a change of status alone (such as the agent's own status write)
asks for no new session. What a HyperNode cannot show on its own (a cycle, a node claimed twice in
a tier) is logged and recorded once per change as a Warning event ``TopologyProblem`` about the
HyperNode it names; problems and statuses (member_agent/hypernode_status.py) are on ``/status``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from member_agent.cluster.gateway import ClusterGateway, Obj
from member_agent.hypernode_status import check_hyper_nodes, names

log = logging.getLogger("caldera.agent")


class HyperNodeBook:
    def __init__(self, bump: Callable[[], None]) -> None:
        self._bump = bump  # a change every session could see (the agent's Changes.bump)
        self.hyper_nodes: list[Obj] = []
        self.problems: list[str] = []
        #: name -> status (nodeCount, conditions) of each HyperNode
        self.status: dict[str, dict[str, Any]] = {}
        self._checked: Any = None  # what the last check saw: the HyperNodes and the node names

    def set(self, hyper_nodes: list[Obj]) -> None:
        """New HyperNodes: the next session sees them if a name or spec changed."""
        if hyper_nodes == self.hyper_nodes:
            return
        if _scheduled(hyper_nodes) != _scheduled(self.hyper_nodes):
            self._bump()
        self.hyper_nodes = hyper_nodes

    async def check(self, nodes: dict[str, Obj], gateway: ClusterGateway, now: str) -> None:
        """Problems and statuses again, once per change of the HyperNodes or of the node names;
        an event for each problem not seen before."""
        key = (id(self.hyper_nodes), len(self.hyper_nodes), tuple(sorted(nodes)))
        if key == self._checked:
            return
        self._checked = key
        problems: list[str] = []
        last, self.status = self.status, {}
        if self.hyper_nodes:
            problems, self.status = check_hyper_nodes(self.hyper_nodes, nodes.values(), last, now)
        new = [p for p in problems if p not in self.problems]
        self.problems = list(problems)
        for problem in new:
            log.warning("network topology problem: %s", problem)
            involved = next((h for h in self.hyper_nodes if names(problem, str(h["metadata"]["name"]))), None)
            if involved is not None:
                await gateway.record_event(involved, "Warning", "TopologyProblem", problem)


def _scheduled(objs: list[Obj]) -> list[Any]:
    return [((h.get("metadata") or {}).get("name"), h.get("spec")) for h in objs]

