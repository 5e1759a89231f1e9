"""Admission of the objects controllers and agents write: Cluster status, ResourceBinding, Work."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from policies.admission import admit
from policies.errors import ValidationFailed
from policies.models.karmada_cluster import Cluster
from policies.models.karmada_work import ResourceBinding, Work

JOB = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": "train"}}


def work(namespace: str = "karmada-es-cluster-a", manifests: list[dict[str, Any]] | None = None,
         **placement: Any) -> Work:
    spec: dict[str, Any] = {"workload": {"manifests": [JOB] if manifests is None else manifests}}
    if placement:
        spec["placement"] = placement
    return Work.model_validate({"metadata": {"name": "ml.train", "namespace": namespace}, "spec": spec})


def paths(obj: Any) -> list[str]:
    with pytest.raises(ValidationFailed) as info:
        admit(obj)
    return info.value.paths


def test_valid_works() -> None:
    admit(work())
    admit(work(generation=3, hold=True, clusters=2, reserveTimeoutSeconds=60))
    admit(work(generation=1, hold=False, clusters=1))


@pytest.mark.parametrize(("obj", "expected"), [
    (work(namespace="ml"), ["metadata.namespace"]),
    (work(generation=1, hold=True, clusters=1), ["spec.placement.hold"]),
    (work(manifests=[JOB, JOB], generation=1, clusters=2), ["spec.workload.manifests"]),
    (work(manifests=[{"metadata": {"name": "x"}}]),
     ["spec.workload.manifests[0].apiVersion", "spec.workload.manifests[0].kind"]),
])
def test_invalid_works(obj: Work, expected: list[str]) -> None:
    assert paths(obj) == expected


def test_work_status_enums() -> None:
    obj = work()
    obj = Work.model_validate({**obj.to_wire(), "status": {
        "gang": {"generation": 1, "phase": "Booked"},
        "manifestStatuses": [{"identifier": {"version": "v1alpha1", "kind": "Job", "name": "train"}, "health": "Sick"}]}})
    assert paths(obj) == ["status.gang.phase", "status.manifestStatuses[0].health"]


def binding(clusters: list[dict[str, Any]], **extra: Any) -> ResourceBinding:
    return ResourceBinding.model_validate({
        "metadata": {"name": "train-job", "namespace": "ml"},
        "spec": {"resource": {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": "train"},
                 "clusters": clusters, **extra}})


def test_binding_rules() -> None:
    admit(binding([{"name": "a", "replicas": 2}, {"name": "b", "replicas": 2}]))
    assert paths(binding([{"name": "a"}, {"name": "a"}])) == ["spec.clusters[1].name"]
    dup = binding([], components=[{"name": "w", "replicas": 1}, {"name": "w", "replicas": 2}])
    assert paths(dup) == ["spec.components[1].name"]
    bad_placement = binding([], placement={"replicaScheduling": {"replicaDivisionPreference": "Even"}})
    assert paths(bad_placement) == ["spec.placement.replicaScheduling.replicaDivisionPreference"]


def test_cluster_status_consistency() -> None:
    ok = Cluster.model_validate({"metadata": {"name": "a"}, "status": {
        "nodeSummary": {"totalNum": 4, "readyNum": 4}, "gpus": [{"product": "A100", "total": 8, "free": 8}],
        "queues": [{"name": "q1"}, {"name": "q2"}]}})
    admit(ok)
    bad = Cluster.model_validate({"metadata": {"name": "a"}, "status": {
        "nodeSummary": {"totalNum": 4, "readyNum": 5}, "gpus": [{"product": "A100", "total": 8, "free": 9}],
        "queues": [{"name": "q1"}, {"name": "q1"}]}})
    assert paths(bad) == ["status.nodeSummary.readyNum", "status.gpus[0].free", "status.queues[1].name"]
    fragmented = Cluster.model_validate({"metadata": {"name": "a"}, "status": {
        "gpus": [{"product": "A100", "total": 8, "free": 4, "fragmented": 5}]}})
    assert paths(fragmented) == ["status.gpus[0].fragmented"]
    negative = {"metadata": {"name": "a"}, "status": {"gpus": [{"product": "A100", "total": 8, "free": 4,
                                                                   "fragmented": -1}]}}
    with pytest.raises(ValidationError):
        Cluster.model_validate(negative)


def test_cluster_status_topology_consistency() -> None:
    shape = {"count": 4, "free": {"nvidia.com/gpu": "8"}}
    ok = Cluster.model_validate({"metadata": {"name": "a"}, "status": {"topology": {"k": 4, "topTier": 2, "tiers": [
        {"tier": 1, "tierName": "leaf", "domains": 3, "top": [{"name": "leaf0", "nodes": 4, "shapes": [shape]}]}]}}})
    admit(ok)
    unordered = Cluster.model_validate({"metadata": {"name": "a"}, "status": {"topology": {"k": 4, "topTier": 3, "tiers": [
        {"tier": 2, "domains": 1, "top": []}, {"tier": 1, "domains": 1, "top": []}]}}})
    assert paths(unordered) == ["status.topology.tiers"]
    low_top = Cluster.model_validate({"metadata": {"name": "a"}, "status": {"topology": {"k": 4, "topTier": 1, "tiers": [
        {"tier": 1, "domains": 1, "top": []}]}}})
    assert paths(low_top) == ["status.topology.topTier"]
    with pytest.raises(ValidationError):
        Cluster.model_validate({"metadata": {"name": "a"}, "status": {"topology": {"k": 4, "topTier": 1, "rack": 1}}})
