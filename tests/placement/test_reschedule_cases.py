"""``caldera place`` with a previous assignment, table-driven (tests/data/placement/reschedule-cases.yaml)."""

from __future__ import annotations

from typing import Any

import pytest
from placement_builders import PLACEMENT, cluster, gpu_nodes, job, load, request, task

from federation.placement.place import Placer
from federation.placement.request import (
    ClusterAffinity,
    PlacementSpec,
    PreviousCluster,
    PreviousPlacement,
    StaticWeight,
)

CASES = load(PLACEMENT / "reschedule-cases.yaml")[0]


def _previous(case: dict[str, Any]) -> PreviousPlacement:
    clusters = []
    indices = case.get("previousIndices") or {}
    for name, held in (case.get("previous") or {}).items():
        mine = tuple((t, tuple(ix)) for t, ix in (indices.get(name) or {}).items())
        if isinstance(held, dict):
            clusters.append(PreviousCluster(name, sum(held.values()), tuple(held.items()), mine))
        else:
            clusters.append(PreviousCluster(name, held, (), mine))
    return PreviousPlacement(tuple(clusters), fresh=case.get("fresh", False))


def _spec(case: dict[str, Any]) -> PlacementSpec:
    rules = tuple(StaticWeight(ClusterAffinity(cluster_names=(n,)), w) for n, w in (case.get("weights") or {}).items())
    return PlacementSpec(strategy=case["strategy"], static_weights=rules)


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_reschedule_case(case: dict[str, Any]) -> None:
    if "tasks" in case:
        demand = job(*(task(n, r, gpus=g) for n, r, g in case["tasks"]))
    else:
        demand = job(task("worker", case["replicas"], gpus=case["gpus"]))
    clusters = tuple(cluster(n, *(gpu_nodes(c, g) for c, g in shapes)) for n, shapes in case["clusters"].items())
    decision = Placer().place(request(demand, _spec(case), clusters, previous=_previous(case)))
    if "error" in case:
        assert not decision.ok and case["error"] in decision.reason, decision.reason
        return
    assert decision.ok, decision.reason
    expect = case["expect"]
    if any(isinstance(v, dict) for v in expect.values()):
        got: Any = {n: {t: s.replicas for t, s in share.tasks.items()} for n, share in decision.shares.items()}
    else:
        got = decision.replicas()
    assert got == expect, decision.reason
    for name, tasks in (case.get("expectIndices") or {}).items():
        for t, ranges in tasks.items():
            ts = decision.shares[name].tasks[t]
            got_ranges = [list(r) for r in ts.indices] or [[ts.offset, ts.offset + ts.replicas]]
            assert got_ranges == ranges, (name, t, ts)
    if "path" in case:
        assert decision.path == case["path"], decision.reason
