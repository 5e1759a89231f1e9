"""Bad input: each case fails with a clear reason naming the step (or the field), never a crash."""

from __future__ import annotations

import pytest
from placement_builders import cluster, gpu_nodes, job, request, task

from federation.placement.adapters import build_request, placement_spec
from federation.placement.place import Placer
from federation.placement.request import ClusterAffinity, ClusterState, PlacementSpec, StaticWeight
from policies.errors import ValidationFailed

CLUSTERS = (cluster("a", gpu_nodes(2, 8)), cluster("b", gpu_nodes(2, 8)))


def policy(placement: dict) -> dict:
    return {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
            "metadata": {"name": "p", "namespace": "default"},
            "spec": {"resourceSelectors": [{"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job"}],
                     "placement": placement}}


def test_no_matching_cluster_is_no_cluster_fit_with_each_reason() -> None:
    spec = PlacementSpec(affinities=(ClusterAffinity(cluster_names=("nope",)),), strategy="DynamicWeight")
    decision = Placer().place(request(job(task("w", 1, gpus=1)), spec, CLUSTERS))
    assert decision.failure is not None
    assert (decision.failure.step, decision.failure.condition) == ("filter", "NoClusterFit")
    assert "a: not in clusterAffinity.clusterNames" in decision.failure.reason
    assert "unknown cluster(s) nope" in decision.failure.reason


def test_unknown_cluster_name_beside_known_ones_is_reported_but_placed() -> None:
    spec = PlacementSpec(affinities=(ClusterAffinity(cluster_names=("a", "ghost")),), strategy="DynamicWeight")
    decision = Placer().place(request(job(task("w", 2, gpus=8)), spec, CLUSTERS))
    assert decision.ok and decision.replicas() == {"a": 2}
    assert "unknown ghost" in decision.reason


@pytest.mark.parametrize("weight", [0, -1, "2"])
def test_weights_below_one_are_rejected_with_the_field_path(weight: object) -> None:
    bad = policy({"replicaScheduling": {"replicaSchedulingType": "Divided", "weightPreference": {
        "staticWeightList": [{"targetCluster": {"clusterNames": ["a"]}, "weight": 1},
                             {"targetCluster": {"clusterNames": ["b"]}, "weight": weight}]}}})
    with pytest.raises(ValidationFailed) as err:
        placement_spec(bad)
    assert err.value.paths == ["spec.placement.replicaScheduling.weightPreference.staticWeightList[1].weight"]


def test_both_affinity_forms_are_rejected() -> None:
    bad = policy({"clusterAffinity": {"clusterNames": ["a"]},
                  "clusterAffinities": [{"affinityName": "x", "clusterNames": ["b"]}]})
    with pytest.raises(ValidationFailed, match="cannot both be set"):
        placement_spec(bad)


def test_rules_matching_no_candidate_fall_back_to_equal_weights() -> None:
    spec = PlacementSpec(strategy="StaticWeight",
                         static_weights=(StaticWeight(ClusterAffinity(cluster_names=("zzz",)), 3),))
    decision = Placer().place(request(job(task("w", 4, gpus=8)), spec, CLUSTERS))
    assert decision.ok and decision.replicas() == {"a": 2, "b": 2}


def test_infeasible_capacity_is_unschedulable_naming_each_clusters_capacity() -> None:
    for strategy in ("StaticWeight", "DynamicWeight", "Aggregated"):
        decision = Placer().place(request(job(task("w", 9, gpus=8)), PlacementSpec(strategy=strategy), CLUSTERS))
        assert decision.failure is not None, strategy
        assert decision.failure.step == "divide"
        assert "a fits w×2" in decision.failure.reason and "b fits w×2" in decision.failure.reason


def test_duplicated_job_too_big_everywhere_fails_at_verify() -> None:
    decision = Placer().place(request(job(task("w", 3, gpus=8)), PlacementSpec(strategy="Duplicated"), CLUSTERS))
    assert decision.failure is not None and decision.failure.step == "verify"
    assert "only 2 of 3 pods" in decision.failure.reason


def test_duplicated_copies_where_the_whole_job_fits() -> None:
    clusters = CLUSTERS + (cluster("c", gpu_nodes(1, 8)),)
    decision = Placer().place(request(job(task("w", 2, gpus=8)), PlacementSpec(strategy="Duplicated"), clusters))
    assert decision.ok and decision.replicas() == {"a": 2, "b": 2}
    assert decision.diagnosis["c"].verdict == "infeasible"
    assert all(s.tasks["w"].offset == 0 for s in decision.shares.values())


def test_job_without_replicas_and_clusters_without_status() -> None:
    decision = Placer().place(request(job(task("w", 0)), PlacementSpec(strategy="StaticWeight"), CLUSTERS))
    assert decision.failure is not None and "no replicas" in decision.failure.reason
    blind = (ClusterState("x"),)
    decision = Placer().place(request(job(task("w", 1, gpus=1)), PlacementSpec(strategy="DynamicWeight"), blind))
    assert decision.failure is not None
    assert decision.diagnosis["x"].estimate_kind == "none"


def test_no_clusters_at_all() -> None:
    decision = Placer().place(request(job(task("w", 1)), PlacementSpec(strategy="StaticWeight"), ()))
    assert decision.failure is not None and "no clusters given" in decision.failure.reason


def test_build_request_accepts_wire_dicts() -> None:
    j = {"kind": "Job", "metadata": {"name": "j"}, "spec": {"tasks": [{"name": "w", "replicas": 2, "template": {
        "spec": {"containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "500m"},
                                                                         "limits": {"cpu": "1", "nvidia.com/gpu": 1}}}]}}}]}}
    c = {"kind": "Cluster", "metadata": {"name": "a"}, "status": {"conditions": [{"type": "Ready", "status": "True"}],
                                                                  "nodeShapes": [{"count": 1, "free": {"cpu": "2", "nvidia.com/gpu": "2"}}]}}
    req = build_request(j, policy({"replicaScheduling": {"replicaSchedulingType": "Divided"}}), [c])
    assert dict(req.job.tasks[0].request) == {"cpu": 500.0, "nvidia.com/gpu": 1000.0, "pods": 1.0}
    assert req.job.min_available == 2 and req.spec.strategy == "StaticWeight"
    assert Placer().place(req).replicas() == {"a": 2}
