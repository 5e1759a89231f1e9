"""The seed's 1:2 PropagationPolicy with every seed Job; gang invariants on each decision."""

from __future__ import annotations

import itertools

import pytest
from placement_builders import PLACEMENT, clusters_file, load, request, seed_job, seed_policy

from federation.placement.gang import verify_share
from federation.placement.place import Placer
from federation.placement.table import ClusterTable
from federation.placement.webster import webster

CASES = load(PLACEMENT / "seed-cases.yaml")[0]


def _id(case: dict) -> str:
    return f"{case['job']}@{case['clusters'].removesuffix('.yaml')}"


@pytest.mark.parametrize("case", CASES, ids=[_id(c) for c in CASES])
def test_seed_job_under_seed_policy(case: dict) -> None:
    job = seed_job(case["job"])
    clusters = clusters_file(case["clusters"])
    decision = Placer().place(request(job, seed_policy(), clusters))
    assert decision.ok, decision.reason
    assert decision.path == case["path"], decision.reason
    got = {c: {t: [ts.replicas, ts.min_available, ts.offset] for t, ts in s.tasks.items()}
           for c, s in decision.shares.items()}
    assert got == case["expect"]
    if case["path"] == "karmada":  # the answer is exactly Karmada's static split
        assert decision.replicas() == {c: n for c, n in webster(job.replicas, {"cluster-a": 1, "cluster-b": 2}).items() if n}
    assert_gang_invariants(decision, job, clusters)


def assert_gang_invariants(decision, job, clusters) -> None:  # type: ignore[no-untyped-def]
    table = ClusterTable(clusters)
    shares = decision.shares
    assert sum(s.min_available for s in shares.values()) == job.min_available
    for t in job.tasks:
        held = [(c, s.tasks[t.name]) for c, s in shares.items() if t.name in s.tasks]
        assert sum(ts.replicas for _, ts in held) == t.replicas
        assert sum(ts.min_available for _, ts in held) == t.min_available
        if t.replicas == 1:
            assert len(held) == 1, f"task {t.name} with one replica was split"
        indices = sorted(itertools.chain.from_iterable(range(ts.offset, ts.offset + ts.replicas) for _, ts in held))
        assert indices == list(range(t.replicas)), "global task indices must be unique and complete"
    for name, share in shares.items():
        assert share.replicas == sum(ts.replicas for ts in share.tasks.values())
        assert sum(ts.min_available for ts in share.tasks.values()) <= share.min_available <= share.replicas
        ok, _, why = verify_share(table, job, name, {t: ts.replicas for t, ts in share.tasks.items()}, ())
        assert ok, f"{name}: {why}"


def test_infeasible_split_reports_where_karmada_fails() -> None:
    decision = Placer().place(request(seed_job("gpu-dist-training"), seed_policy(),
                                      clusters_file("clusters-b-fragmented.yaml")))
    assert decision.karmada_split == {"cluster-a": 3, "cluster-b": 5}
    assert "only 3 of 5 pods" in decision.diagnosis["cluster-b"].infeasible
    assert decision.diagnosis["cluster-a"].infeasible == ""
    assert decision.optimizer["status"] == 0
