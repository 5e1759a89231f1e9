"""The fleet tier (docs/topology.md): the table in tests/data/placement/fleet-topology.yaml, placed
through ``place`` on clusters built as the agent reports them (status.topology)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml
from placement_builders import PLACEMENT, job, request, task

from federation.placement.adapters import placement_spec
from federation.placement.place import Placer
from federation.placement.request import JobDemand, JobTopology
from tests.policy_builders import one_to_one_policy
from tests.topology_builders import topo_cluster

TABLE = yaml.safe_load((PLACEMENT / "fleet-topology.yaml").read_text())
POLICY = one_to_one_policy(["a", "b"], namespace="default", affinity=False)


def demand(spec: dict[str, Any]) -> JobDemand:
    base = job(task("worker", spec["pods"], gpus=spec.get("gpus", 8)))
    raw = spec.get("topology")
    if raw is None:
        return base
    topology = JobTopology(raw["mode"], raw.get("highestTierAllowed"), raw.get("highestTierName", ""))
    return JobDemand(base.namespace, base.name, base.uid, base.tasks, base.min_available, topology=topology)


@pytest.mark.parametrize("case", TABLE["cases"], ids=[c["name"] for c in TABLE["cases"]])
def test_fleet_topology(case: dict[str, Any]) -> None:
    clusters = tuple(topo_cluster(c["name"], c["nodes"], c.get("leaf", 4), c.get("spine", 0),
                                  [tuple(b) for b in c.get("busy", [])], c.get("report", True))
                     for c in case.get("clusters", TABLE["default_clusters"]))
    policy = copy.deepcopy(POLICY)
    if "clusterNames" in case:
        policy["spec"]["placement"]["clusterAffinity"] = {"clusterNames": case["clusterNames"]}
    decision = Placer().place(request(demand(case["job"]), placement_spec(policy), clusters))
    expect = case["expect"]
    if "error" in expect:
        assert not decision.ok, decision.replicas()
        for part in expect["error"]:
            assert part in decision.reason, decision.reason
        return
    assert decision.ok, decision.reason
    assert decision.replicas() == expect["split"], decision.reason
    for part in expect.get("reason", []):
        assert part in decision.reason, decision.reason
