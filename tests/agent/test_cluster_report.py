"""``caldera place`` derives from a cluster layout file the Cluster a ``--sim`` agent reports: the
registration and the status (node shapes, resource summary, GPUs, NUMA) must be exactly the agent's."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from agent_fakes import FakeFederation

from member_agent.agent import Agent, AgentOptions
from member_agent.cluster.clock import ManualClock
from member_agent.cluster.sim import SimCluster, SimGateway
from member_agent.cluster.sim_kubelet import KubeletOptions
from member_agent.sync import FederationSync
from policies.cluster_layout import load_cluster_file
from policies.cluster_report import SIM_KUBERNETES_VERSION, idle_cluster

ROOT = Path(__file__).resolve().parents[2]
LAYOUTS = sorted((ROOT / "examples" / "clusters").glob("*.yaml")) + sorted((ROOT / "examples" / "placement").glob("*.yaml"))


async def _until(predicate, rounds: int = 1000) -> None:
    for _ in range(rounds):
        if predicate():
            return
        await asyncio.sleep(0)
    assert predicate(), "condition not reached"


@pytest.mark.parametrize("path", LAYOUTS, ids=lambda p: f"{p.parent.name}/{p.name}")
async def test_derived_cluster_is_what_the_sim_agent_reports(path: Path) -> None:
    layout = load_cluster_file(str(path))
    assert layout.name
    clock = ManualClock()
    sim = SimCluster(layout.nodes, clock, KubeletOptions(start_delay=1.0, default_duration=10.0))
    spec = {"provider": layout.provider, "region": layout.region, "zone": layout.zone, "labels": layout.labels}
    agent = Agent(AgentOptions(layout.name, cluster_spec=spec, kubernetes_version=SIM_KUBERNETES_VERSION),
                  SimGateway(sim), clock)
    federation = FakeFederation()
    sync = FederationSync(agent, federation, clock)
    cache = asyncio.create_task(agent.cache.run())
    try:
        await _until(lambda: len(agent.cache.nodes) == len(layout.nodes))
        await sync.register()
        registered = federation.objects[("Cluster", "", layout.name)]
        reported = sync.cluster_status()
    finally:
        cache.cancel()
        await asyncio.gather(cache, return_exceptions=True)
    derived = idle_cluster(layout)
    assert derived["spec"] == registered["spec"]
    assert derived["metadata"]["labels"] == registered["metadata"]["labels"]
    # the agent stamps when it first reported Ready; the derived Cluster has held Ready for longer
    ready = reported.pop("conditions")[0]
    assert ready.pop("lastTransitionTime")
    assert derived["status"].pop("conditions") == [ready]
    if layout.hyper_nodes:  # the domains need the agent's HyperNode tree (docs/topology.md, limits)
        assert reported.pop("topology") and "topology" not in derived["status"]
    assert derived["status"] == reported
    assert sum(shape["count"] for shape in reported["nodeShapes"]) == len(layout.nodes)
