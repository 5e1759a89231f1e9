"""The user path of network topology (issue 34 "Done when"), through the agent: the example
cluster file's 16 nodes under four leaf HyperNodes of 4 (two spines), the example scheduler
conf with network-topology-aware, Volcano Jobs with networkTopology arriving as Works."""

from __future__ import annotations

from pathlib import Path

import pytest
from agent_fakes import NS, Harness, job_work
from aiohttp.test_utils import TestClient, TestServer

from member_agent.cluster.clock import ManualClock
from member_agent.cluster.sim import SimCluster
from member_agent.cluster.sim_kubelet import KubeletOptions
from member_agent.endpoints import build_app, status_document
from policies.cluster_layout import load_cluster_file
from policies.scheduler_conf import parse_scheduler_conf

ROOT = Path(__file__).resolve().parents[2]
CLUSTER = ROOT / "examples" / "clusters" / "topology-16.yaml"
CONF = ROOT / "examples" / "scheduler-conf" / "network-topology.conf"
#: leaf -> its nodes, as the cluster file's regexMatch selectors declare them
LEAVES = {"leaf0": range(0, 4), "leaf1": range(4, 8), "leaf2": range(8, 12), "leaf3": range(12, 16)}
ALLOCATED = "volcano.sh/job-allocated-hypernode"
SPINES = {"spine0": ("leaf0", "leaf1"), "spine1": ("leaf2", "leaf3")}


def leaf_of(node: str) -> str:
    index = int(node.rsplit("-", 1)[1])
    return next(leaf for leaf, nodes in LEAVES.items() if index in nodes)


def topology_job(name: str, pods: int, topology: dict) -> dict:
    work = job_work(name, replicas=pods, cpu="8", gpu=8, duration="1000s")
    work["spec"]["workload"]["manifests"][0]["spec"]["networkTopology"] = topology
    return work


@pytest.fixture
async def topo():
    clock = ManualClock()
    cluster = load_cluster_file(str(CLUSTER))
    sim = SimCluster(cluster.nodes, clock, KubeletOptions(start_delay=1.0, default_duration=10.0))
    h = Harness(sim=sim, clock=clock, real_scheduler=True)
    h.agent.conf = parse_scheduler_conf(CONF.read_text())
    h.agent.set_hyper_nodes(cluster.hyper_nodes)
    await h.start()
    yield h
    await h.stop()


def nodes_of(h: Harness, job: str) -> list[str]:
    return sorted(str(p["spec"]["nodeName"]) for p in h.pods(job).values() if p["spec"].get("nodeName"))


def podgroup_annotations(h: Harness, job: str) -> dict:
    state = h.agent.works.get(f"{NS}/team.{job}")
    group = (state.podgroup if state is not None else None) or {}
    return dict((group.get("metadata") or {}).get("annotations") or {})


def podgroup_message(h: Harness, job: str) -> str:
    state = h.agent.works.get(f"{NS}/team.{job}")
    group = (state.podgroup if state is not None else None) or {}
    return " ".join(str(c.get("message", "")) for c in (group.get("status") or {}).get("conditions") or [])


async def test_hard_tier1_in_one_leaf_pending_when_too_big_soft_across_one_spine(topo: Harness) -> None:
    # a 4-pod job of 8 GPUs per pod with hard tier 1 runs in one leaf
    topo.federation.put_work(topology_job("four", 4, {"mode": "hard", "highestTierAllowed": 1}))
    await topo.run_until(lambda: len(nodes_of(topo, "four")) == 4)
    assert len({leaf_of(n) for n in nodes_of(topo, "four")}) == 1
    # the PodGroup names the HyperNode the gang was placed in, as Volcano's scheduler annotates it
    await topo.run_until(lambda: podgroup_annotations(topo, "four").get(ALLOCATED) is not None)
    assert podgroup_annotations(topo, "four")[ALLOCATED] == leaf_of(nodes_of(topo, "four")[0])
    # a 6-pod one stays Pending, saying that no tier-1 domain fits it
    topo.federation.put_work(topology_job("six-hard", 6, {"mode": "hard", "highestTierAllowed": 1}))
    await topo.run_until(lambda: "no tier-1 HyperNode" in podgroup_message(topo, "six-hard"))
    assert nodes_of(topo, "six-hard") == []
    # soft mode places it across two leaves of one spine
    topo.federation.put_work(topology_job("six-soft", 6, {"mode": "soft"}))
    await topo.run_until(lambda: len(nodes_of(topo, "six-soft")) == 6)
    leaves = {leaf_of(n) for n in nodes_of(topo, "six-soft")}
    assert len(leaves) == 2 and any(leaves <= set(members) for members in SPINES.values())
    assert nodes_of(topo, "six-hard") == []  # still Pending: the free leaves hold 4 nodes at most
    assert status_document(topo.agent, topo.sync)["hyperNodes"] == 6


async def test_topology_problems_are_reported_not_refused(topo: Harness) -> None:
    claimed_twice = {"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode",
                     "metadata": {"name": "leaf-extra"},
                     "spec": {"tier": 1, "members": [{"type": "Node",
                                                      "selector": {"exactMatch": {"name": "topo-a100-0"}}}]}}
    topo.agent.set_hyper_nodes([*topo.agent.hyper_nodes, claimed_twice])
    topo.federation.put_work(topology_job("four", 4, {"mode": "hard", "highestTierAllowed": 1}))
    await topo.run_until(lambda: len(nodes_of(topo, "four")) == 4)
    problems = status_document(topo.agent, topo.sync)["topologyProblems"]
    assert any("topo-a100-0 is claimed by HyperNodes leaf-extra and leaf0 of tier 1" in p for p in problems)
    # the cluster file's HyperNodes have no API object: their status is on the agent's /status (over HTTP)
    async with TestClient(TestServer(build_app(topo.agent, topo.sync, topo.sim), host="127.0.0.1")) as client:
        response = await client.get("/status")
        statuses = (await response.json())["hyperNodeStatus"]
    assert {name: s["nodeCount"] for name, s in statuses.items()} == {
        "leaf-extra": 1, "leaf0": 4, "leaf1": 4, "leaf2": 4, "leaf3": 4, "spine0": 8, "spine1": 8}
    resolved = {name: s["conditions"][0]["status"] for name, s in statuses.items()}
    assert resolved == {"leaf-extra": "False", "leaf0": "False", "leaf1": "True", "leaf2": "True", "leaf3": "True",
                        "spine0": "True", "spine1": "True"}
    assert "claimed by HyperNodes leaf-extra and leaf0" in statuses["leaf0"]["conditions"][0]["message"]
    assert statuses["leaf1"]["conditions"][0]["reason"] == "MembersResolved"
    events = [e for e in topo.sim.events if e["reason"] == "TopologyProblem"]
    assert [e["involvedObject"]["name"] for e in events] == ["leaf0"]  # the first HyperNode it names
    assert events[0]["type"] == "Warning" and "claimed by HyperNodes" in events[0]["message"]


async def test_partitions_each_in_one_leaf_job_in_one_spine(topo: Harness) -> None:
    """A vcjob task's partitionPolicy becomes a subGroupPolicy (pods labelled volcano.sh/partition-id):
    each partition of 4 in one leaf, the 8-pod job inside one spine."""
    work = topology_job("parts", 8, {"mode": "hard", "highestTierAllowed": 2})
    task = work["spec"]["workload"]["manifests"][0]["spec"]["tasks"][0]
    task["partitionPolicy"] = {"totalPartitions": 2, "partitionSize": 4,
                               "networkTopology": {"mode": "hard", "highestTierAllowed": 1}}
    topo.federation.put_work(work)
    await topo.run_until(lambda: len(nodes_of(topo, "parts")) == 8)
    by_partition: dict[str, set[str]] = {}
    for pod in topo.pods("parts").values():
        partition = pod["metadata"]["labels"]["volcano.sh/partition-id"]
        by_partition.setdefault(partition, set()).add(leaf_of(pod["spec"]["nodeName"]))
    assert sorted(by_partition) == ["0", "1"]
    assert all(len(leaves) == 1 for leaves in by_partition.values())
    used = set().union(*by_partition.values())
    assert len(used) == 2 and any(used <= set(members) for members in SPINES.values())
