"""Filter step: affinity, taints/tolerations, damped readiness, affinities fall-through, spread."""

from __future__ import annotations

import pytest
from placement_builders import PLACEMENT, cluster, gpu_nodes, job, load, request, task

from federation.placement.filter import filter_clusters
from federation.placement.place import Placer
from federation.placement.request import (
    ClusterAffinity,
    ClusterState,
    LabelSelector,
    Options,
    PlacementSpec,
    PreviousCluster,
    PreviousPlacement,
    Requirement,
    SpreadConstraint,
    Taint,
    Toleration,
    labels,
)

CASES = load(PLACEMENT / "filter-cases.yaml")[0]
NOW = 10_000.0


def build_cluster(spec: dict) -> ClusterState:
    lease = spec.get("leaseAge")
    return ClusterState(
        name="c",
        labels=labels(spec.get("labels")),
        provider=spec.get("provider", ""),
        region=spec.get("region", ""),
        zones=tuple(spec.get("zones", ())),
        taints=tuple(Taint(k, v, e) for k, e, v in spec.get("taints", [])),
        ready=spec.get("ready", "True"),
        ready_since=NOW - spec["readySince"] if "readySince" in spec else None,
        lease_renewed=None if lease is None else NOW - lease,
    )


def build_affinity(spec: dict) -> ClusterAffinity:
    selector = None
    if "labels" in spec or "expressions" in spec:
        selector = LabelSelector(labels(spec.get("labels")),
                                 tuple(Requirement(k, op, tuple(v)) for k, op, v in spec.get("expressions", [])))
    return ClusterAffinity(tuple(spec.get("clusterNames", ())), tuple(spec.get("exclude", ())), selector,
                           tuple(Requirement(k, op, tuple(v)) for k, op, v in spec.get("fields", [])))


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_filter_table(case: dict) -> None:
    placement = case["placement"]
    tolerations = tuple(Toleration(k, op, v, e) for k, op, v, e in placement.get("tolerations", []))
    result = filter_clusters((build_cluster(case["cluster"]),), build_affinity(placement.get("affinity", {})),
                             tolerations, (), frozenset({"c"} if placement.get("previous") else ()), NOW, Options())
    assert (len(result.candidates) == 1) == case["candidate"], result
    if not case["candidate"]:
        assert case["why"] in result.excluded["c"]
    assert result.valid_from == NOW and result.valid_until > NOW


def test_filter_answer_is_cached_until_the_next_readiness_boundary() -> None:
    flapping = ClusterState("c", node_shapes=(gpu_nodes(1, 8),), ready="True", ready_since=NOW - 10)
    clusters = (flapping,)
    placer = Placer()
    j, spec = job(task("w", 1, gpus=1)), PlacementSpec(strategy="DynamicWeight")
    assert not placer.place(request(j, spec, clusters, now=NOW)).ok  # ready for 10 s only
    assert not placer.place(request(j, spec, clusters, now=NOW + 19)).ok
    assert placer.place(request(j, spec, clusters, now=NOW + 20)).ok  # 30 s: the state counts


def two_clusters() -> tuple[ClusterState, ...]:
    return (cluster("a", gpu_nodes(2, 8), region="r1"), cluster("b", gpu_nodes(4, 8), region="r2"),
            cluster("c", gpu_nodes(1, 8), region="r2"))


def test_cluster_affinities_fall_through_to_the_next_term() -> None:
    spec = PlacementSpec(affinities=(ClusterAffinity(cluster_names=("a",), name="small"),
                                     ClusterAffinity(cluster_names=("b",), name="big")),
                         strategy="DynamicWeight")
    decision = Placer().place(request(job(task("w", 3, gpus=8)), spec, two_clusters()))
    assert decision.ok and decision.affinity_name == "big"
    assert decision.replicas() == {"b": 3}
    assert "earlier clusterAffinities failed: small" in decision.reason


def test_cluster_affinities_start_at_the_observed_term() -> None:
    spec = PlacementSpec(affinities=(ClusterAffinity(cluster_names=("a",), name="first"),
                                     ClusterAffinity(cluster_names=("b",), name="second")),
                         strategy="DynamicWeight")
    decision = Placer().place(request(job(task("w", 1, gpus=8)), spec, two_clusters(),
                                      previous=PreviousPlacement(affinity_name="second")))
    assert decision.affinity_name == "second" and decision.replicas() == {"b": 1}


def test_all_affinity_terms_failing_names_each() -> None:
    spec = PlacementSpec(affinities=(ClusterAffinity(cluster_names=("a",), name="t1"),
                                     ClusterAffinity(cluster_names=("c",), name="t2")), strategy="DynamicWeight")
    decision = Placer().place(request(job(task("w", 5, gpus=8)), spec, two_clusters()))
    assert not decision.ok and decision.failure is not None
    assert "clusterAffinities[t1]" in decision.failure.reason and "clusterAffinities[t2]" in decision.failure.reason


@pytest.mark.parametrize(
    ("spread", "replicas", "expect", "error"),
    [
        ([SpreadConstraint("cluster", "", 1, 1)], 3, {"b": 3}, ""),
        ([SpreadConstraint("cluster", "", 1, 2)], 6, {"a": 2, "b": 4}, ""),
        ([SpreadConstraint("cluster", "", 2, 2)], 5, {"a": 2, "b": 3}, ""),
        ([SpreadConstraint("cluster", "", 4, 4)], 1, None, "fewer than spreadConstraint cluster minGroups 4"),
        ([SpreadConstraint("cluster", "", 1, 0)], 1, None, "maxGroups 0"),
        ([SpreadConstraint("", "team", 1, 2)], 1, None, "just support cluster and region"),
        ([SpreadConstraint("region", "", 2, 2), SpreadConstraint("cluster", "", 2, 2)], 4, None, ""),
        ([SpreadConstraint("region", "", 3, 3), SpreadConstraint("cluster", "", 1, 3)], 1, None, "2 regions"),
    ],
)
def test_spread_constraints(spread: list, replicas: int, expect: dict | None, error: str) -> None:
    clusters = two_clusters()
    if spread[0].spread_by_label:
        clusters = tuple(ClusterState(**{**c.__dict__, "labels": labels({"team": "x"})}) for c in clusters)
    spec = PlacementSpec(spread=tuple(spread), strategy="DynamicWeight")
    decision = Placer().place(request(job(task("w", replicas, gpus=8)), spec, clusters))
    if error:
        assert not decision.ok and decision.failure is not None
        assert decision.failure.step == "filter" and error in decision.failure.reason
        return
    assert decision.ok, decision.reason
    if expect is not None:
        assert decision.replicas() == expect
    used = len(decision.shares)
    cluster_rule = next(s for s in spread if s.spread_by_field == "cluster")
    assert used <= cluster_rule.max_groups
    if any(s.spread_by_field == "region" for s in spread):
        assert {c.region for c in clusters if c.name in decision.shares} == {"r1", "r2"}


def test_static_weight_ignores_spread_constraints() -> None:
    spec = PlacementSpec(spread=(SpreadConstraint("cluster", "", 1, 1),), strategy="StaticWeight")
    decision = Placer().place(request(job(task("w", 3, gpus=8)), spec, two_clusters()))
    assert decision.ok and len(decision.shares) == 3


def test_previous_holder_scores_first_in_candidate_order() -> None:
    # Aggregated picks the shortest prefix; the cluster already holding the job sorts first
    spec = PlacementSpec(strategy="Aggregated")
    prev = PreviousPlacement((PreviousCluster("a", 1),))
    decision = Placer().place(request(job(task("w", 2, gpus=8)), spec, two_clusters(), previous=prev))
    assert decision.replicas() == {"a": 2}


def test_spread_counts_the_jobs_own_replicas_as_available() -> None:
    # Karmada's AvailableReplicas = estimate + replicas already assigned there: c (1 free + 1
    # held = 2) is kept with b (4), so 6 fit without a swap; the increment goes b 4, c 1.
    spec = PlacementSpec(spread=(SpreadConstraint("cluster", "", 1, 2),), strategy="DynamicWeight")
    prev = PreviousPlacement((PreviousCluster("c", 1),))
    decision = Placer().place(request(job(task("w", 7, gpus=8)), spec, two_clusters(), previous=prev))
    assert not decision.ok and "available replicas" in decision.reason
    decision = Placer().place(request(job(task("w", 6, gpus=8)), spec, two_clusters(), previous=prev))
    assert decision.ok, decision.reason
    assert decision.replicas() == {"b": 4, "c": 2}
    assert decision.diagnosis["a"].reason == "not selected by spreadConstraints"


def test_spread_swaps_a_kept_cluster_for_a_richer_one_when_short() -> None:
    # c holds the job, so it sorts first and is kept; the two kept (c 1+1 + b 4) cannot take 7,
    # so walking back from the last kept, c is swapped for d (3): b + d = 7.
    spec = PlacementSpec(spread=(SpreadConstraint("cluster", "", 1, 2),), strategy="DynamicWeight")
    prev = PreviousPlacement((PreviousCluster("c", 1),))
    clusters = (*two_clusters(), cluster("d", gpu_nodes(3, 8), region="r3"))
    decision = Placer().place(request(job(task("w", 7, gpus=8)), spec, clusters, previous=prev))
    assert decision.ok, decision.reason
    assert decision.replicas() == {"b": 4, "d": 3}
    assert decision.diagnosis["c"].reason == "not selected by spreadConstraints"
