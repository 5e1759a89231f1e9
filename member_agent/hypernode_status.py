"""A HyperNode's ``status``: ``nodeCount`` and a condition, as the agent computes them.

Volcano's HyperNode controller keeps ``status.nodeCount``: the nodes the HyperNode covers,
counting those of its member HyperNodes, through every tier below it. The agent counts them in
the tree the scheduler uses (:func:`build_tree`): a HyperNode membership the tree ignores (a
cycle, a second parent, a member whose tier is not below its parent's) adds nothing; a node
claimed by two HyperNodes of one tier counts in both, as their selectors match it (the scheduler
keeps it in one, and the condition says so).

The condition is Caldera's own (the reference gives ``status.conditions`` but no types):
``MembersResolved`` is ``True`` (reason ``MembersResolved``, message ``N nodes``) unless a
problem of the topology names the HyperNode, then ``False`` with reason ``TopologyProblem``
and the problems as the message. Its ``lastTransitionTime`` changes only when its status does.

Where it goes (docs/topology.md): a HyperNode the member cluster's API serves gets its status
subresource patched through the kube gateway when the status changes (not every period);
HyperNodes without an API object (the ``--sim`` cluster file's, those built from node labels)
show theirs on the agent's ``/status`` (``hyperNodeStatus``).
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Mapping, Sequence

from member_agent.scheduler.framework.hypernodes import HyperNodeTree, build_tree

CONDITION = "MembersResolved"


def names(problem: str, name: str) -> bool:
    """Whether ``problem`` names the HyperNode ``name`` as a whole name (``leaf`` is not named by a
    problem about ``leaf-1``: names hold ``-`` and ``.``)."""
    return re.search(rf"(?<![\w.-]){re.escape(name)}(?![\w.-])", problem) is not None


def _problems_of(name: str, problems: list[str]) -> list[str]:
    return [p for p in problems if names(p, name)]


def hypernode_statuses(tree: HyperNodeTree, previous: Mapping[str, Mapping[str, Any]], now: str,
                       generations: Mapping[str, int] | None = None) -> dict[str, dict[str, Any]]:
    """Every real HyperNode's status. ``previous``: the statuses last seen (the API objects' own,
    or the last computed), whose condition keeps its ``lastTransitionTime`` when unchanged."""
    out: dict[str, dict[str, Any]] = {}
    for h, name in enumerate(tree.names[:-1]):  # the last one is the virtual cluster top
        count = int(len(tree.rows[h]))
        mine = _problems_of(name, tree.problems)
        condition: dict[str, Any] = {
            "type": CONDITION,
            "status": "False" if mine else "True",
            "reason": "TopologyProblem" if mine else "MembersResolved",
            "message": "; ".join(mine) if mine else f"{count} node{'' if count == 1 else 's'}",
        }
        if generations and name in generations:
            condition["observedGeneration"] = generations[name]
        before = next((c for c in (previous.get(name) or {}).get("conditions") or ()
                       if isinstance(c, Mapping) and c.get("type") == CONDITION), None)
        kept = before is not None and before.get("status") == condition["status"] and before.get("lastTransitionTime")
        condition["lastTransitionTime"] = before["lastTransitionTime"] if kept and before is not None else now
        out[name] = {"nodeCount": count, "conditions": [condition]}
    return out


def _essence(status: Mapping[str, Any] | None) -> tuple[Any, ...]:
    """What a change of status is judged by (not the transition time)."""
    status = status or {}
    conditions = tuple(sorted((str(c.get("type")), str(c.get("status")), str(c.get("reason")), str(c.get("message")))
                              for c in status.get("conditions") or () if isinstance(c, Mapping)))
    return status.get("nodeCount"), conditions


def status_changed(current: Mapping[str, Any] | None, wanted: Mapping[str, Any]) -> bool:
    return _essence(current) != _essence(wanted)


def check_hyper_nodes(hyper_nodes: Sequence[Mapping[str, Any]], nodes: Iterable[Mapping[str, Any]],
                      last: Mapping[str, Mapping[str, Any]], now: str) -> tuple[list[str], dict[str, dict[str, Any]]]:
    """The problems of the topology and every HyperNode's status, over the cluster's nodes.
    ``last``: the statuses computed before; an API object's own status takes precedence."""
    if not hyper_nodes:
        return [], {}
    ordered = sorted(nodes, key=lambda n: n["metadata"]["name"])
    tree = build_tree(hyper_nodes, [n["metadata"]["name"] for n in ordered],
                      [n["metadata"].get("labels") or {} for n in ordered])
    metas = [h.get("metadata") or {} for h in hyper_nodes]
    seen = {**last, **{str(m.get("name")): h["status"] for m, h in zip(metas, hyper_nodes, strict=True)
                       if isinstance(h.get("status"), Mapping)}}
    generations = {str(m.get("name")): int(m["generation"]) for m in metas if m.get("generation")}
    return tree.problems, hypernode_statuses(tree, seen, now, generations)
