"""A HyperNode's status as the agent computes it: nodeCount through member HyperNodes, the
MembersResolved condition, and a lastTransitionTime that moves only when the condition does."""

from __future__ import annotations

import pytest
from agent_fakes import Harness

from member_agent.hypernode_status import check_hyper_nodes, names, status_changed

NODES = [{"metadata": {"name": f"n{i}", "labels": {}}} for i in range(6)]


def hn(name: str, tier: int, kind: str, *members: str) -> dict:
    return {"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode", "metadata": {"name": name},
            "spec": {"tier": tier, "members": [{"type": kind, "selector": {"exactMatch": {"name": m}}}
                                               for m in members]}}


TREE = [hn("leaf0", 1, "Node", "n0", "n1"), hn("leaf1", 1, "Node", "n2", "n3", "n4"),
        hn("spine0", 2, "HyperNode", "leaf0", "leaf1"), hn("empty", 1, "Node", "nope")]


def test_node_count_through_member_hypernodes() -> None:
    problems, statuses = check_hyper_nodes(TREE, NODES, {}, "2026-12-06T05:00:00Z")
    assert problems == []
    assert {name: s["nodeCount"] for name, s in statuses.items()} == {"empty": 0, "leaf0": 2, "leaf1": 3,
                                                                       "spine0": 5}
    condition = statuses["spine0"]["conditions"][0]
    assert condition == {"type": "MembersResolved", "status": "True", "reason": "MembersResolved",
                         "message": "5 nodes", "lastTransitionTime": "2026-12-06T05:00:00Z"}


def test_transition_time_kept_while_status_holds_and_moved_when_it_flips() -> None:
    _, first = check_hyper_nodes(TREE, NODES, {}, "T1")
    grown = [*TREE[:1], hn("leaf1", 1, "Node", "n2", "n3", "n4", "n5"), *TREE[2:]]
    _, second = check_hyper_nodes(grown, NODES, first, "T2")
    assert second["spine0"]["nodeCount"] == 6 and status_changed(first["spine0"], second["spine0"])
    assert second["spine0"]["conditions"][0]["lastTransitionTime"] == "T1"  # still True
    cycle = [*grown, hn("leaf0-loop", 3, "HyperNode", "spine0"), hn("spine0-up", 4, "HyperNode", "leaf0-loop")]
    cycle[2] = hn("spine0", 2, "HyperNode", "leaf0", "leaf1", "spine0-up")  # spine0 -> spine0-up -> ... -> spine0
    problems, third = check_hyper_nodes(cycle, NODES, second, "T3")
    assert any("cycle" in p for p in problems)
    condition = third["spine0"]["conditions"][0]
    assert (condition["status"], condition["reason"], condition["lastTransitionTime"]) == (
        "False", "TopologyProblem", "T3")
    assert third["leaf1"]["conditions"][0]["lastTransitionTime"] == "T1"  # not named: unchanged
    # an API object's own status (what the agent wrote before a restart) keeps its time
    served = [dict(h, status=first[h["metadata"]["name"]]) for h in TREE]
    _, again = check_hyper_nodes(served, NODES, {}, "T9")
    assert again["leaf0"]["conditions"][0]["lastTransitionTime"] == "T1"
    assert not status_changed(first["leaf0"], again["leaf0"])


def test_no_hypernodes_no_status() -> None:
    assert check_hyper_nodes([], NODES, {}, "T") == ([], {})


def test_a_change_of_status_alone_starts_no_session() -> None:
    """The agent's own status write comes back in the next listing: sessions read names and specs
    only, so that listing must not wake the scheduler."""
    agent = Harness().agent
    agent.set_hyper_nodes(TREE)
    version = agent.changes.version
    _, statuses = check_hyper_nodes(TREE, NODES, {}, "T1")
    agent.set_hyper_nodes([dict(h, status=statuses[h["metadata"]["name"]]) for h in TREE])
    assert agent.changes.version == version and agent.hyper_nodes[0]["status"]["nodeCount"] == 2
    agent.set_hyper_nodes([*TREE[:1], hn("leaf1", 1, "Node", "n2"), *TREE[2:]])
    assert agent.changes.version > version


@pytest.mark.parametrize(("problem", "name", "named"), [
    ("node n1 is claimed by leaf-1 and leaf-2 of tier 1", "leaf-1", True),
    ("node n1 is claimed by leaf-1 and leaf-2 of tier 1", "leaf", False),  # a prefix of a name with '-'
    ("cycle: spine.a -> leaf -> spine.a", "spine", False),  # a prefix of a name with '.'
    ("cycle: spine.a -> leaf -> spine.a", "leaf", True),
    ("leaf-10 has no member", "leaf-1", False),
])
def test_a_problem_names_a_hypernode_only_by_its_whole_name(problem: str, name: str, named: bool) -> None:
    """The status condition and the TopologyProblem event both attribute a problem with this rule."""
    assert names(problem, name) is named
