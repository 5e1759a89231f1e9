"""``status.topology`` as the agent reports it (member_agent/topology_status.py, policies/topology_report.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from agent_fakes import Harness, job_work

from member_agent.cluster.clock import ManualClock
from member_agent.cluster.sim import SimCluster
from member_agent.cluster.sim_kubelet import KubeletOptions
from policies.cluster_layout import load_cluster_file
from policies.errors import InvalidConfiguration
from policies.scheduler_conf import parse_scheduler_conf
from policies.topology_report import parse_topology
from tests.topology_builders import layout_text, reported_status


def domains(status: dict[str, Any], tier: int) -> dict[str, int]:
    """domain -> free 8-GPU nodes, for the reported domains of ``tier``."""
    entry = next(t for t in status["topology"]["tiers"] if t["tier"] == tier)
    return {d["name"]: sum(s["count"] for s in d["shapes"] if s["free"].get("nvidia.com/gpu") == "8")
            for d in entry["top"]}


def test_leaves_and_spines_are_reported_per_tier() -> None:
    _, status = reported_status(layout_text("c", 16, leaf=4, spine=2))
    topology = status["topology"]
    assert topology["topTier"] == 3 and topology["k"] == 4
    assert [(t["tier"], t.get("tierName"), t["domains"]) for t in topology["tiers"]] == [(1, "leaf", 4), (2, "spine", 2)]
    assert domains(status, 1) == {"leaf0": 4, "leaf1": 4, "leaf2": 4, "leaf3": 4}
    assert domains(status, 2) == {"spine0": 8, "spine1": 8}
    parse_topology(topology, "c")  # what the agent writes, the federation accepts


def test_the_roomiest_domains_are_kept_when_there_are_more_than_k() -> None:
    # leaves 0..5; leaves 0-2 have busy nodes, so with k=2 the two whole-node rankings keep leaves
    # 3 and 4 (4 free nodes, ties by name), and the GPU ranking the same two
    busy = [(0, 8), (1, 8), (4, 8), (8, 1)]
    _, status = reported_status(layout_text("c", 24, leaf=4), busy, k=2)
    assert domains(status, 1) == {"leaf3": 4, "leaf4": 4}
    assert status["topology"]["tiers"][0]["domains"] == 6


def test_a_partly_used_domain_reports_its_free_shapes() -> None:
    _, status = reported_status(layout_text("c", 8, leaf=4), [(0, 8), (1, 3)])
    leaf0 = next(d for d in status["topology"]["tiers"][0]["top"] if d["name"] == "leaf0")
    assert leaf0["nodes"] == 4
    free_gpus = sorted((s["count"], s["free"].get("nvidia.com/gpu", "0")) for s in leaf0["shapes"])
    assert free_gpus == [(1, "0"), (1, "5"), (2, "8")]


def test_a_cluster_without_hypernodes_is_one_domain() -> None:
    _, status = reported_status(layout_text("c", 8, leaf=0))
    assert status["topology"] == {"k": 4, "topTier": 1, "tiers": []}


BAD = [
    ({"k": 4, "topTier": 2, "tiers": [{"tier": 0, "domains": 1, "top": []}]},
     "status.topology.tiers[0].tier: Input should be greater than or equal to 1"),
    ({"k": 4, "topTier": 3, "tiers": [{"tier": 2, "domains": 1, "top": []}, {"tier": 1, "domains": 1, "top": []}]},
     "status.topology.tiers: tiers must be distinct and ascending, found [2, 1]"),
    ({"k": 4, "topTier": 1, "tiers": [{"tier": 1, "domains": 1, "top": []}]},
     "status.topology.topTier: must be above every reported tier (1), found 1"),
    ({"k": 4, "topTier": 2, "tiers": [{"tier": 1, "domains": 1, "top": [{"name": "x", "nodes": 1}]}]},
     "status.topology.tiers[0].top[0].shapes: Field required"),
    ({"k": 4, "topTier": 1, "racks": []}, "status.topology.racks: Extra inputs are not permitted"),
    ({"k": 0, "topTier": 1}, "status.topology.k: Input should be greater than or equal to 1"),
]


@pytest.mark.parametrize(("raw", "message"), BAD, ids=[m for _, m in BAD])
def test_a_malformed_report_is_refused_naming_the_field(raw: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidConfiguration) as err:
        parse_topology(raw, "cluster-a")
    assert str(err.value) == f"Cluster cluster-a: {message}"


async def test_the_agents_report_follows_the_jobs_it_runs() -> None:
    """Through the agent (examples/clusters/topology-16.yaml): the status it writes carries the
    leaves, and once a 4-pod job of 8 GPUs fills one leaf, that leaf holds no free node."""
    root = Path(__file__).resolve().parents[2]
    layout = load_cluster_file(str(root / "examples" / "clusters" / "topology-16.yaml"))
    clock = ManualClock()
    sim = SimCluster(layout.nodes, clock, KubeletOptions(start_delay=1.0, default_duration=1000.0))
    h = Harness(sim=sim, clock=clock, real_scheduler=True)
    h.agent.conf = parse_scheduler_conf((root / "examples" / "scheduler-conf" / "network-topology.conf").read_text())
    h.agent.set_hyper_nodes(layout.hyper_nodes)
    await h.start()
    try:
        assert domains(h.sync.cluster_status(), 1) == {"leaf0": 4, "leaf1": 4, "leaf2": 4, "leaf3": 4}
        work = job_work("four", replicas=4, cpu="8", gpu=8, duration="1000s")
        work["spec"]["workload"]["manifests"][0]["spec"]["networkTopology"] = {"mode": "hard", "highestTierAllowed": 1}
        h.federation.put_work(work)
        await h.run_until(lambda: sum(1 for p in h.pods("four").values() if p["spec"].get("nodeName")) == 4)
        after = domains(h.sync.cluster_status(), 1)
    finally:
        await h.stop()
    assert sorted(after.values()) == [0, 4, 4, 4], after  # one leaf full, reported as such
