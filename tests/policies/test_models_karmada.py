"""Karmada models: every field of the API shapes decodes, unknown fields are rejected with
their path, and dumping gives back what was written."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from policies.kinds import lookup
from policies.models.karmada_cluster import Cluster
from policies.models.karmada_policy import (
    ClusterOverridePolicy,
    ClusterPropagationPolicy,
    OverridePolicy,
    PropagationPolicy,
)
from policies.models.karmada_work import ResourceBinding, Work, binding_name, execution_namespace

FULL_POLICY: dict[str, Any] = {
    "apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
    "metadata": {"name": "full", "namespace": "ml"},
    "spec": {
        "resourceSelectors": [{"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": "train",
                               "labelSelector": {"matchLabels": {"team": "a"}}}],
        "propagateDeps": True,
        "placement": {
            "clusterAffinities": [
                {"affinityName": "gpu", "labelSelector": {"matchExpressions": [
                    {"key": "gpu", "operator": "In", "values": ["a100"]}]},
                 "fieldSelector": {"matchExpressions": [{"key": "region", "operator": "In", "values": ["eu"]}]},
                 "overflowAffinities": [{"affinityName": "burst", "clusterNames": ["cloud-1"]}]},
                {"affinityName": "any", "exclude": ["legacy"]},
            ],
            "clusterTolerations": [{"key": "maintenance", "operator": "Exists", "effect": "NoExecute",
                                    "tolerationSeconds": 60}],
            "spreadConstraints": [{"spreadByField": "cluster", "minGroups": 1, "maxGroups": 2}],
            "replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
                                  "weightPreference": {"dynamicWeight": "AvailableReplicas"}},
            "workloadAffinity": {"antiAffinity": {"groupByLabelKey": "replica-set"}},
        },
        "priority": 10, "preemption": "Always", "dependentOverrides": ["op-a"],
        "schedulerName": "caldera", "conflictResolution": "Overwrite", "activationPreference": "Lazy",
        "failover": {"application": {"decisionConditions": {"tolerationSeconds": 120}, "purgeMode": "Gracefully",
                                     "gracePeriodSeconds": 600,
                                     "statePreservation": {"rules": [{"aliasLabelName": "step",
                                                                      "jsonPath": "{.checkpoint}"}]}},
                     "cluster": {"purgeMode": "Directly"}},
        "suspension": {"dispatchingOnClusters": {"clusterNames": ["cluster-b"]}},
        "preserveResourcesOnDeletion": True,
        "schedulePriority": {"priorityClassSource": "KubePriorityClass", "priorityClassName": "high"},
    },
}


def test_full_propagation_policy_round_trips() -> None:
    policy = PropagationPolicy.model_validate(FULL_POLICY)
    assert policy.to_wire() == FULL_POLICY
    placement = policy.spec.placement
    assert placement is not None and placement.cluster_affinities is not None
    assert placement.cluster_affinities[0].overflow_affinities is not None
    assert placement.cluster_affinities[0].overflow_affinities[0].cluster_names == ["cloud-1"]
    assert policy.spec.failover is not None and policy.spec.failover.application is not None
    assert policy.spec.failover.application.decision_conditions is not None
    assert policy.spec.failover.application.decision_conditions.toleration_seconds == 120


def test_cluster_propagation_policy_shares_the_spec() -> None:
    doc = dict(FULL_POLICY, kind="ClusterPropagationPolicy", metadata={"name": "c"})
    assert ClusterPropagationPolicy.model_validate(doc).to_wire() == doc


@pytest.mark.parametrize(("patch_path", "bad_key"), [
    (("spec",), "placment"),
    (("spec", "placement"), "clusterAffinty"),
    (("spec", "placement", "replicaScheduling"), "divisionPreference"),
])
def test_unknown_fields_are_rejected_at_their_path(patch_path: tuple[str, ...], bad_key: str) -> None:
    doc: dict[str, Any] = {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
                           "metadata": {"name": "p"},
                           "spec": {"resourceSelectors": [{"apiVersion": "v1", "kind": "ConfigMap"}],
                                    "placement": {"replicaScheduling": {}}}}
    target = doc
    for key in patch_path:
        target = target[key]
    target[bad_key] = {}
    with pytest.raises(ValidationError) as info:
        PropagationPolicy.model_validate(doc)
    [err] = info.value.errors()
    assert err["type"] == "extra_forbidden"
    assert err["loc"] == (*patch_path, bad_key)


def test_wrong_api_version_for_the_model() -> None:
    doc = dict(FULL_POLICY, apiVersion="policy.karmada.io/v1beta1")
    with pytest.raises(ValidationError, match="apiVersion must be 'policy.karmada.io/v1alpha1'"):
        PropagationPolicy.model_validate(doc)


def test_override_policies() -> None:
    doc: dict[str, Any] = {
        "apiVersion": "policy.karmada.io/v1alpha1", "kind": "OverridePolicy",
        "metadata": {"name": "o", "namespace": "ml"},
        "spec": {"resourceSelectors": [{"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job"}],
                 "overrideRules": [{"targetCluster": {"clusterNames": ["a"]}, "overriders": {
                     "plaintext": [{"path": "/spec/tasks/0/replicas", "operator": "replace", "value": 2}],
                     "imageOverrider": [{"predicate": {"path": "/spec/tasks/0/template/spec/containers/0/image"},
                                         "component": "Registry", "operator": "replace", "value": "mirror.local"}],
                     "commandOverrider": [{"containerName": "c", "operator": "add", "value": ["--x"]}],
                     "argsOverrider": [{"containerName": "c", "operator": "remove", "value": ["--y"]}],
                     "labelsOverrider": [{"operator": "add", "value": {"zone": "a"}}],
                     "annotationsOverrider": [{"operator": "remove", "value": {"note": ""}}],
                     "fieldOverrider": [{"fieldPath": "/data/conf", "yaml": [
                         {"subPath": "/a", "operator": "replace", "value": 1}]}],
                 }}]},
    }
    policy = OverridePolicy.model_validate(doc)
    assert policy.to_wire() == doc
    rules = policy.spec.override_rules or []
    assert rules[0].overriders.field_overrider is not None
    assert rules[0].overriders.field_overrider[0].yaml_ is not None
    cop = dict(doc, kind="ClusterOverridePolicy", metadata={"name": "o"})
    assert ClusterOverridePolicy.model_validate(cop).to_wire() == cop


CLUSTER: dict[str, Any] = {
    "apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster", "metadata": {"name": "cluster-a"},
    "spec": {"id": "uid-1", "syncMode": "Pull", "apiEndpoint": "https://10.0.0.1:6443",
             "secretRef": {"namespace": "karmada-cluster", "name": "cluster-a"},
             "proxyURL": "socks5://proxy:1080", "provider": "aws", "region": "eu-west-1", "zones": ["a", "b"],
             "taints": [{"key": "maintenance", "effect": "NoSchedule"}],
             "resourceModels": [{"grade": 0, "ranges": [{"name": "cpu", "min": "0", "max": "4"}]}]},
    "status": {
        "kubernetesVersion": "v1.30.2",
        "apiEnablements": [{"groupVersion": "batch.volcano.sh/v1alpha1", "resources": [{"name": "jobs", "kind": "Job"}]}],
        "conditions": [{"type": "Ready", "status": "True", "reason": "ClusterReady"}],
        "nodeSummary": {"totalNum": 8, "readyNum": 8},
        "resourceSummary": {"allocatable": {"cpu": "512", "memory": "4Ti", "nvidia.com/gpu": 64},
                            "allocated": {"cpu": "100m", "pods": 3}, "allocating": {},
                            "allocatableModelings": [{"grade": 0, "count": 8}]},
        "nodeShapes": [{"count": 6, "free": {"cpu": "64", "nvidia.com/gpu": "8"},
                        "labels": {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"}}],
        "gpus": [{"product": "NVIDIA-A100-SXM4-80GB", "total": 64, "free": 48}],
        "numa": {"nodesPerHost": 2},
        "queues": [{"name": "ai-training", "allocated": {"nvidia.com/gpu": 16}, "deserved": {"nvidia.com/gpu": 32},
                    "capability": {"nvidia.com/gpu": 32}}],
    },
}


def test_cluster_round_trips_with_caldera_status() -> None:
    cluster = Cluster.model_validate(CLUSTER)
    assert cluster.to_wire() == CLUSTER
    assert cluster.is_ready()
    assert cluster.status is not None and cluster.status.node_shapes is not None
    assert cluster.status.node_shapes[0].count == 6


def test_cluster_not_ready_without_condition() -> None:
    assert not Cluster.model_validate({"metadata": {"name": "x"}}).is_ready()


@pytest.mark.parametrize(("where", "value", "loc"), [
    ("allocatable", {"cpu": "lots"}, ("status", "resourceSummary", "allocatable", "cpu")),
    ("shape", {"count": -1, "free": {}}, ("status", "nodeShapes", 0, "count")),
])
def test_cluster_status_is_checked(where: str, value: Any, loc: tuple[Any, ...]) -> None:
    status: dict[str, Any] = ({"resourceSummary": {"allocatable": value}} if where == "allocatable"
                              else {"nodeShapes": [value]})
    with pytest.raises(ValidationError) as info:
        Cluster.model_validate({"metadata": {"name": "x"}, "status": status})
    assert info.value.errors()[0]["loc"] == loc


BINDING: dict[str, Any] = {
    "apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
    "metadata": {"name": "train-job", "namespace": "ml"},
    "spec": {
        "resource": {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "namespace": "ml", "name": "train",
                     "uid": "1234", "resourceVersion": "7"},
        "replicas": 9,
        "replicaRequirements": {"resourceRequest": {"nvidia.com/gpu": "8"},
                                "nodeClaim": {"nodeSelector": {"pool": "gpu"}, "tolerations": [{"operator": "Exists"}]}},
        "components": [{"name": "worker", "replicas": 8}],
        "clusters": [{"name": "cluster-a", "replicas": 6, "components": [{"name": "worker", "replicas": 6}]}],
        "placement": {"clusterAffinity": {"clusterNames": ["cluster-a"]}},
        "gracefulEvictionTasks": [{"fromCluster": "cluster-b", "reason": "TaintUntolerated", "producer": "taint-manager",
                                   "gracePeriodSeconds": 600}],
        "rescheduleTriggeredAt": "2026-12-02T10:00:00Z", "schedulerName": "caldera",
        "failover": {"cluster": {"purgeMode": "Gracefully"}}, "conflictResolution": "Abort",
        "suspension": {"scheduling": True},
    },
    "status": {"schedulerObservedGeneration": 2, "lastScheduledTime": "2026-12-02T10:00:01Z",
               "conditions": [{"type": "Scheduled", "status": "True", "reason": "Success"}],
               "aggregatedStatus": [{"clusterName": "cluster-a", "status": {"state": {"phase": "Running"}},
                                     "applied": True, "health": "Healthy"}]},
}


def test_resource_binding_round_trips() -> None:
    binding = ResourceBinding.model_validate(BINDING)
    assert binding.to_wire() == BINDING
    assert binding.spec.resource.uid == "1234"
    assert binding_name("train", "Job") == "train-job"
    assert binding_name("a:b", "Job") == "a.b-job"


def test_component_name_limit() -> None:
    doc = {**BINDING, "spec": {**BINDING["spec"], "components": [{"name": "x" * 33, "replicas": 1}]}}
    with pytest.raises(ValidationError) as info:
        ResourceBinding.model_validate(doc)
    assert info.value.errors()[0]["loc"] == ("spec", "components", 0, "name")


def test_work_with_gang_protocol() -> None:
    doc: dict[str, Any] = {
        "apiVersion": "work.karmada.io/v1alpha1", "kind": "Work",
        "metadata": {"name": "ml.train", "namespace": execution_namespace("cluster-a"),
                     "labels": {"caldera.io/job": "ml.train"}},
        "spec": {"workload": {"manifests": [{"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
                                             "metadata": {"name": "train"}, "spec": {"anything": [1, 2]}}]},
                 "placement": {"generation": 3, "hold": True, "cancelled": False, "clusters": 2,
                               "reserveTimeoutSeconds": 60}},
        "status": {"conditions": [{"type": "Applied", "status": "True"}],
                   "manifestStatuses": [{"identifier": {"ordinal": 0, "group": "batch.volcano.sh", "version": "v1alpha1",
                                                        "kind": "Job", "namespace": "ml", "name": "train"},
                                         "status": {"state": {"phase": "Pending"}}, "health": "Unknown"}],
                   "gang": {"generation": 3, "phase": "Reserved", "reservedUntil": "2026-12-02T10:00:00Z",
                            "reason": "gang: 6/6 tasks fit"}},
    }
    work = Work.model_validate(doc)
    assert work.to_wire() == doc
    assert work.namespace == "karmada-es-cluster-a"
    assert work.spec.placement is not None and work.spec.placement.hold


def test_plain_karmada_work_has_no_placement() -> None:
    work = Work.model_validate({"metadata": {"name": "w"}, "spec": {"workload": {"manifests": []}}})
    assert work.spec.placement is None
    with pytest.raises(ValidationError):
        Work.model_validate({"metadata": {"name": "w"}, "spec": {"placement": {"generation": 1, "clusters": 0}}})


@pytest.mark.parametrize("model", [PropagationPolicy, ClusterPropagationPolicy, OverridePolicy,
                                   ClusterOverridePolicy, Cluster, ResourceBinding, Work])
def test_kinds_table_points_at_the_models(model: Any) -> None:
    assert lookup(model.API_VERSION, model.KIND).model is model


# ---------------------------------------------------------------- property: wire form is kept
_names = st.lists(st.from_regex(r"[a-z][a-z0-9-]{0,8}", fullmatch=True), min_size=1, max_size=3, unique=True)
_affinity = st.fixed_dictionaries({}, optional={
    "clusterNames": _names, "exclude": _names,
    "labelSelector": st.fixed_dictionaries({"matchLabels": st.dictionaries(
        st.sampled_from(["gpu", "zone", "pool"]), st.from_regex(r"[a-z0-9]{1,6}", fullmatch=True), min_size=1)}),
})
_placement = st.fixed_dictionaries({}, optional={
    "clusterAffinity": _affinity,
    "spreadConstraints": st.lists(st.fixed_dictionaries(
        {"spreadByField": st.sampled_from(["cluster", "region"]), "minGroups": st.integers(0, 3)},
        optional={"maxGroups": st.integers(0, 5)}), max_size=2),
    "replicaScheduling": st.fixed_dictionaries(
        {"replicaSchedulingType": st.sampled_from(["Duplicated", "Divided"])},
        optional={"replicaDivisionPreference": st.sampled_from(["Aggregated", "Weighted"]),
                  "weightPreference": st.fixed_dictionaries({"staticWeightList": st.lists(
                      st.fixed_dictionaries({"targetCluster": _affinity, "weight": st.integers(1, 100)}),
                      min_size=1, max_size=3)})}),
})


@settings(max_examples=60, deadline=None)
@given(placement=_placement, priority=st.integers(-10, 10))
def test_generated_policies_keep_their_wire_form(placement: dict[str, Any], priority: int) -> None:
    doc = {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
           "metadata": {"name": "p", "namespace": "ns"},
           "spec": {"resourceSelectors": [{"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job"}],
                    "placement": placement, "priority": priority}}
    policy = PropagationPolicy.model_validate(doc)
    assert policy.to_wire() == doc
    assert PropagationPolicy.model_validate(policy.to_wire()) == policy
