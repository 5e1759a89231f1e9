"""HyperNodes built from node labels (Volcano 1.13's label discovery) and the agent's loop that
merges them with the member cluster's own HyperNodes."""

from __future__ import annotations

import asyncio

from member_agent.cluster.gateway import GatewayError
from member_agent.hypernode_discovery import discover_from_labels, hypernode_loop
from member_agent.scheduler.framework.hypernodes import build_tree
from policies.admission import admit
from policies.codec import decode_object

LEAF, SPINE = "volcano.sh/hypernode", "volcano.sh/hypercluster"
KEYS = [SPINE, LEAF, "kubernetes.io/hostname"]  # Volcano's order: highest domain first, node level last


def node(name: str, **labels: str) -> dict:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}}


NODES = [node("n0", **{LEAF: "s0", SPINE: "s4"}), node("n1", **{LEAF: "s0", SPINE: "s4"}),
         node("n2", **{LEAF: "s1", SPINE: "s4"}), node("n3", **{LEAF: "s2", SPINE: "s5"}),
         node("n4")]  # no labels: in no HyperNode


def test_one_key_per_tier_builds_leaves_and_spines() -> None:
    found = discover_from_labels(NODES, KEYS)
    by_name = {h["metadata"]["name"]: h for h in found}
    assert sorted(by_name) == ["s0", "s1", "s2", "s4", "s5"]
    assert by_name["s0"]["spec"]["tier"] == 1 and by_name["s4"]["spec"]["tier"] == 2
    assert by_name["s4"]["spec"]["tierName"] == SPINE
    assert by_name["s0"]["metadata"]["labels"] == {"volcano.sh/network-topology-source": "label"}
    for h in found:  # each one passes the webhook rules
        admit(decode_object(h))
    members = lambda n: [m["selector"]["exactMatch"]["name"] for m in by_name[n]["spec"]["members"]]  # noqa: E731
    assert members("s0") == ["n0", "n1"]
    assert members("s4") == ["s0", "s1"]
    tree = build_tree(found, [n["metadata"]["name"] for n in NODES], [n["metadata"]["labels"] for n in NODES])
    assert tree.problems == []
    assert tree.domain_of[2].tolist()[:4] == [tree.index["s4"]] * 3 + [tree.index["s5"]]
    assert tree.tier_of_name(LEAF) == 1
    assert tree.domain_of[1][4] == -1


class FakeCache:
    def __init__(self, nodes: list[dict]) -> None:
        self.nodes = {n["metadata"]["name"]: n for n in nodes}
        self.synced = asyncio.Event()
        self.synced.set()


class FakeAgent:
    def __init__(self) -> None:
        self.cache = FakeCache(NODES)
        self.hyper_nodes: list[dict] = []

    def set_hyper_nodes(self, hyper_nodes: list[dict]) -> None:
        self.hyper_nodes = hyper_nodes


class Gateway:
    def __init__(self) -> None:
        self.fail = False
        self.calls = 0

    async def list_hyper_nodes(self) -> list[dict]:
        self.calls += 1
        if self.fail:
            raise GatewayError("member API down")
        return [{"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode",
                 "metadata": {"name": "s0"}, "spec": {"tier": 1, "members": [
                     {"type": "Node", "selector": {"exactMatch": {"name": "n0"}}}]}}]


async def test_loop_merges_listed_and_discovered_listed_wins() -> None:
    agent, gateway, stop = FakeAgent(), Gateway(), asyncio.Event()
    task = asyncio.create_task(hypernode_loop(agent, gateway, [LEAF], [], period=0.01, stop=stop))
    for _ in range(200):
        if agent.hyper_nodes:
            break
        await asyncio.sleep(0.005)
    names = [h["metadata"]["name"] for h in agent.hyper_nodes]
    assert names == ["s0", "s1", "s2"]
    assert agent.hyper_nodes[0]["spec"]["members"] == [{"type": "Node", "selector": {"exactMatch": {"name": "n0"}}}]
    before = agent.hyper_nodes
    gateway.fail = True  # a failed list keeps what the agent had
    calls = gateway.calls
    for _ in range(400):
        if gateway.calls >= calls + 2:
            break
        await asyncio.sleep(0.005)
    assert gateway.calls >= calls + 2 and agent.hyper_nodes == before
    stop.set()
    await asyncio.wait_for(task, 1)
