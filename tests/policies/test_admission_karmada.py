"""Karmada webhook rules: defaults and validations for policies and clusters (table-driven)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from policies.admission import admit
from policies.errors import ValidationFailed
from policies.models.karmada_cluster import Cluster
from policies.models.karmada_policy import (
    ClusterPropagationPolicy,
    OverridePolicy,
    PropagationPolicy,
)

BASE: dict[str, Any] = {
    "apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
    "metadata": {"name": "p", "namespace": "ml"},
    "spec": {"resourceSelectors": [{"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job"}]},
}


def policy(placement: dict[str, Any] | None = None, **spec: Any) -> PropagationPolicy:
    doc = copy.deepcopy(BASE)
    if placement is not None:
        doc["spec"]["placement"] = placement
    doc["spec"].update(spec)
    return PropagationPolicy.model_validate(doc)


def errors_of(obj: Any) -> dict[str, str]:
    with pytest.raises(ValidationFailed) as info:
        admit(obj)
    return {e.path: e.message for e in info.value.errors}


# ---------------------------------------------------------------- defaults
def test_defaults() -> None:
    out = admit(policy({"spreadConstraints": [{"maxGroups": 2}, {"spreadByLabel": "rack"}],
                        "replicaScheduling": {"replicaSchedulingType": "Divided"}},
                       failover={"application": {"decisionConditions": {"tolerationSeconds": 30}}}))
    assert isinstance(out, PropagationPolicy)
    spec = out.spec
    assert spec.resource_selectors[0].namespace == "ml"
    assert spec.scheduler_name == "default-scheduler"
    assert spec.placement is not None
    first, second = spec.placement.spread_constraints or []
    assert (first.spread_by_field, first.min_groups, first.max_groups) == ("cluster", 1, 2)
    assert (second.spread_by_field, second.spread_by_label, second.min_groups) == (None, "rack", 1)
    assert spec.placement.replica_scheduling is not None
    assert spec.placement.replica_scheduling.replica_division_preference == "Weighted"
    assert spec.failover is not None and spec.failover.application is not None
    assert spec.failover.application.purge_mode == "Gracefully"
    assert spec.failover.application.grace_period_seconds == 600


def test_defaults_keep_what_the_user_wrote() -> None:
    out = admit(policy({"replicaScheduling": {"replicaSchedulingType": "Divided",
                                              "replicaDivisionPreference": "Aggregated"}},
                       schedulerName="caldera",
                       resourceSelectors=[{"apiVersion": "v1", "kind": "ConfigMap", "namespace": "other"}],
                       failover={"application": {"purgeMode": "Directly"}}))
    assert isinstance(out, PropagationPolicy)
    assert out.spec.scheduler_name == "caldera"
    assert out.spec.resource_selectors[0].namespace == "other"
    assert out.spec.placement is not None and out.spec.placement.replica_scheduling is not None
    assert out.spec.placement.replica_scheduling.replica_division_preference == "Aggregated"
    assert out.spec.failover is not None and out.spec.failover.application is not None
    assert out.spec.failover.application.grace_period_seconds is None


def test_failover_toleration_defaults_to_300_seconds() -> None:
    for written, expected in (({}, 300), ({"tolerationSeconds": 0}, 0), ({"tolerationSeconds": 45}, 45)):
        out = admit(policy({}, failover={"application": {"decisionConditions": written}}))
        assert isinstance(out, PropagationPolicy) and out.spec.failover and out.spec.failover.application
        conditions = out.spec.failover.application.decision_conditions
        assert conditions is not None and conditions.toleration_seconds == expected


def test_duplicated_gets_no_division_preference() -> None:
    out = admit(policy({"replicaScheduling": {"replicaSchedulingType": "Duplicated"}}))
    assert isinstance(out, PropagationPolicy) and out.spec.placement is not None
    assert out.spec.placement.replica_scheduling is not None
    assert out.spec.placement.replica_scheduling.replica_division_preference is None


def test_admission_does_not_change_the_input() -> None:
    original = policy({"spreadConstraints": [{}]})
    admit(original)
    assert original.spec.placement is not None and original.spec.placement.spread_constraints is not None
    assert original.spec.placement.spread_constraints[0].spread_by_field is None
    assert original.spec.resource_selectors[0].namespace is None


def test_cluster_policy_selectors_keep_no_namespace() -> None:
    doc = copy.deepcopy(BASE)
    doc["kind"] = "ClusterPropagationPolicy"
    doc["metadata"] = {"name": "c"}
    out = admit(ClusterPropagationPolicy.model_validate(doc))
    assert isinstance(out, ClusterPropagationPolicy)
    assert out.spec.resource_selectors[0].namespace is None


# ---------------------------------------------------------------- validation table
W = "spec.placement.replicaScheduling.weightPreference"
CASES: list[tuple[str, dict[str, Any] | None, dict[str, Any], str, str]] = [
    ("zero weight", {"replicaScheduling": {"weightPreference": {"staticWeightList": [
        {"targetCluster": {"clusterNames": ["a"]}, "weight": 0}]}}}, {}, f"{W}.staticWeightList[0].weight", ">= 1"),
    ("dynamic weight", {"replicaScheduling": {"weightPreference": {"dynamicWeight": "Free"}}}, {},
     f"{W}.dynamicWeight", "'AvailableReplicas'"),
    ("division", {"replicaScheduling": {"replicaDivisionPreference": "Even"}}, {},
     "spec.placement.replicaScheduling.replicaDivisionPreference", "'Aggregated', 'Weighted'"),
    ("type", {"replicaScheduling": {"replicaSchedulingType": "Copy"}}, {},
     "spec.placement.replicaScheduling.replicaSchedulingType", "'Duplicated', 'Divided'"),
    ("both affinities", {"clusterAffinity": {}, "clusterAffinities": [{"affinityName": "x"}]}, {},
     "spec.placement.clusterAffinities", "cannot both be set"),
    ("empty affinity name", {"clusterAffinities": [{"affinityName": ""}]}, {},
     "spec.placement.clusterAffinities[0].affinityName", "1 to 32"),
    ("overflow name reuse", {"clusterAffinities": [{"affinityName": "a", "overflowAffinities": [{"affinityName": "a"}]}]},
     {}, "spec.placement.clusterAffinities[0].overflowAffinities[0].affinityName", "already used"),
    ("field selector key", {"clusterAffinity": {"fieldSelector": {"matchExpressions": [
        {"key": "rack", "operator": "In", "values": ["1"]}]}}}, {},
     "spec.placement.clusterAffinity.fieldSelector.matchExpressions[0].key", "'provider', 'region', 'zone'"),
    ("label operator", {"clusterAffinity": {"labelSelector": {"matchExpressions": [
        {"key": "gpu", "operator": "Has"}]}}}, {},
     "spec.placement.clusterAffinity.labelSelector.matchExpressions[0].operator", "'In', 'NotIn', 'Exists'"),
    ("label values for Exists", {"clusterAffinities": [{"affinityName": "a", "labelSelector": {"matchExpressions": [
        {"key": "gpu", "operator": "Exists", "values": ["x"]}]}}]}, {},
     "spec.placement.clusterAffinities[0].labelSelector.matchExpressions[0].values", "must be empty"),
    ("selector labels", None, {"resourceSelectors": [{"apiVersion": "v1", "kind": "ConfigMap", "labelSelector": {
        "matchExpressions": [{"key": "app", "operator": "In"}]}}]},
     "spec.resourceSelectors[0].labelSelector.matchExpressions[0].values", "at least one value"),
    ("cluster name", {"clusterAffinity": {"clusterNames": ["Cluster_A"]}}, {},
     "spec.placement.clusterAffinity.clusterNames[0]", "DNS-1123"),
    ("gt toleration", {"clusterTolerations": [{"key": "k", "operator": "Gt", "value": "1"}]}, {},
     "spec.placement.clusterTolerations[0].operator", "not allowed"),
    ("exists with value", {"clusterTolerations": [{"key": "k", "operator": "Exists", "value": "1"}]}, {},
     "spec.placement.clusterTolerations[0].value", "must be empty"),
    ("toleration effect", {"clusterTolerations": [{"key": "k", "effect": "NoRun"}]}, {},
     "spec.placement.clusterTolerations[0].effect", "'NoSchedule'"),
    ("spread both", {"spreadConstraints": [{"spreadByField": "cluster", "spreadByLabel": "x"}]}, {},
     "spec.placement.spreadConstraints[0]", "cannot both be set"),
    ("spread twice", {"spreadConstraints": [{"spreadByField": "cluster"}, {"spreadByField": "cluster"}]}, {},
     "spec.placement.spreadConstraints[1].spreadByField", "already used"),
    ("spread max < min", {"spreadConstraints": [{"spreadByField": "cluster", "minGroups": 2, "maxGroups": 1}]}, {},
     "spec.placement.spreadConstraints[0].maxGroups", "must be >= minGroups"),
    ("spread zone alone", {"spreadConstraints": [{"spreadByField": "zone"}]}, {},
     "spec.placement.spreadConstraints", "'cluster' must be present"),
    ("no selectors", None, {"resourceSelectors": []}, "spec.resourceSelectors", "at least one"),
    ("selector without apiVersion", None, {"resourceSelectors": [{"apiVersion": "", "kind": "Job"}]},
     "spec.resourceSelectors[0].apiVersion", "required"),
    ("suspension", None, {"suspension": {"dispatching": True, "dispatchingOnClusters": {"clusterNames": ["a"]}}},
     "spec.suspension", "mutually exclusive"),
    ("preemption", None, {"preemption": "Sometimes"}, "spec.preemption", "'Always', 'Never'"),
    ("conflict", None, {"conflictResolution": "Merge"}, "spec.conflictResolution", "'Abort', 'Overwrite'"),
    ("purge mode", None, {"failover": {"application": {"purgeMode": "Graciously"}}},
     "spec.failover.application.purgeMode", "'Gracefully', 'Directly', 'Never'"),
    ("removed purge mode named", None, {"failover": {"application": {"purgeMode": "Immediately"}}},
     "spec.failover.application.purgeMode", "'Immediately' is now 'Directly' (the old name was removed in Karmada v1.19)"),
    ("grace without gracefully", None, {"failover": {"application": {"purgeMode": "Directly", "gracePeriodSeconds": 5}}},
     "spec.failover.application.gracePeriodSeconds", "only allowed"),
    ("cluster purge", None, {"failover": {"cluster": {"purgeMode": "Never"}}},
     "spec.failover.cluster.purgeMode", "'Gracefully', 'Directly'"),
    ("priority source", None, {"schedulePriority": {"priorityClassSource": "Custom", "priorityClassName": "x"}},
     "spec.schedulePriority.priorityClassSource", "'KubePriorityClass', 'PodPriorityClass'"),
    ("priority source missing", None, {"schedulePriority": {"priorityClassName": "x"}},
     "spec.schedulePriority.priorityClassSource", "required"),
    ("kube priority class without name", None, {"schedulePriority": {"priorityClassSource": "KubePriorityClass"}},
     "spec.schedulePriority.priorityClassName", "required when priorityClassSource is KubePriorityClass"),
]


@pytest.mark.parametrize(("placement", "spec", "path", "needle"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_validation(placement: dict[str, Any] | None, spec: dict[str, Any], path: str, needle: str) -> None:
    errors = errors_of(policy(placement, **spec))
    assert path in errors, errors
    assert needle in errors[path]


def test_all_errors_are_reported_together() -> None:
    errors = errors_of(policy({"clusterAffinity": {}, "clusterAffinities": [{"affinityName": "a"}],
                               "replicaScheduling": {"replicaDivisionPreference": "Even"}},
                              preemption="Sometimes"))
    assert set(errors) == {"spec.placement.clusterAffinities",
                           "spec.placement.replicaScheduling.replicaDivisionPreference", "spec.preemption"}


def test_seed_policy_is_valid() -> None:
    out = admit(policy({"clusterAffinity": {"clusterNames": ["cluster-a", "cluster-b"]},
                        "replicaScheduling": {"replicaDivisionPreference": "Weighted", "replicaSchedulingType": "Divided",
                                              "weightPreference": {"staticWeightList": [
                                                  {"targetCluster": {"clusterNames": ["cluster-a"]}, "weight": 1},
                                                  {"targetCluster": {"clusterNames": ["cluster-b"]}, "weight": 2}]}}}))
    assert isinstance(out, PropagationPolicy)


@pytest.mark.parametrize(("namespace", "rejected"), [
    ("karmada-system", True), ("karmada-cluster", True), ("karmada-es-member1", True), ("ml", False), (None, False)])
def test_cluster_policy_reserved_namespaces(namespace: str | None, rejected: bool) -> None:
    selector: dict[str, Any] = {"apiVersion": "v1", "kind": "ConfigMap"}
    if namespace:
        selector["namespace"] = namespace
    obj = ClusterPropagationPolicy.model_validate({"metadata": {"name": "c"}, "spec": {"resourceSelectors": [selector]}})
    if rejected:
        assert "spec.resourceSelectors[0].namespace" in errors_of(obj)
    else:
        admit(obj)


# ---------------------------------------------------------------- override policies
def override(rule_overriders: dict[str, Any], **spec: Any) -> OverridePolicy:
    return OverridePolicy.model_validate({"metadata": {"name": "o", "namespace": "ml"},
                                          "spec": {"overrideRules": [{"overriders": rule_overriders}], **spec}})


def test_override_defaults_selector_namespace_and_allows_no_selectors() -> None:
    out = admit(override({"plaintext": [{"path": "/spec/x", "operator": "remove"}]},
                         resourceSelectors=[{"apiVersion": "v1", "kind": "ConfigMap"}]))
    assert isinstance(out, OverridePolicy) and out.spec.resource_selectors is not None
    assert out.spec.resource_selectors[0].namespace == "ml"
    admit(override({"labelsOverrider": [{"operator": "add", "value": {"a": "b"}}]}))


@pytest.mark.parametrize(("overriders", "path", "needle"), [
    ({"plaintext": [{"path": "/spec/x", "operator": "set", "value": 1}]},
     "spec.overrideRules[0].overriders.plaintext[0].operator", "'add', 'remove', 'replace'"),
    ({"plaintext": [{"path": "/spec/x", "operator": "add"}]},
     "spec.overrideRules[0].overriders.plaintext[0].value", "required"),
    ({"plaintext": [{"path": "spec", "operator": "remove"}]},
     "spec.overrideRules[0].overriders.plaintext[0].path", "JSON pointer"),
    ({"imageOverrider": [{"component": "Digest", "operator": "replace", "value": "x"}]},
     "spec.overrideRules[0].overriders.imageOverrider[0].component", "'Registry'"),
    ({"commandOverrider": [{"containerName": "c", "operator": "replace", "value": ["x"]}]},
     "spec.overrideRules[0].overriders.commandOverrider[0].operator", "'add', 'remove'"),
])
def test_override_validation(overriders: dict[str, Any], path: str, needle: str) -> None:
    errors = errors_of(override(overriders))
    assert needle in errors[path]


def test_override_rules_and_deprecated_form_are_exclusive() -> None:
    obj = override({"plaintext": []}, overriders={"plaintext": []})
    assert "spec.overrideRules" in errors_of(obj)


# ---------------------------------------------------------------- clusters
def cluster(name: str = "cluster-a", **spec: Any) -> Cluster:
    return Cluster.model_validate({"metadata": {"name": name}, "spec": spec})


@pytest.mark.parametrize(("obj", "path"), [
    (cluster("Cluster_A"), "metadata.name"),
    (cluster("c" * 49), "metadata.name"),
    (cluster(syncMode="Both"), "spec.syncMode"),
    (cluster(taints=[{"key": "k", "effect": "NoDispatch"}]), "spec.taints[0].effect"),
    (cluster(taints=[{"key": "k", "effect": "NoSchedule"}, {"key": "k", "effect": "NoSchedule"}]), "spec.taints[1]"),
])
def test_cluster_validation(obj: Cluster, path: str) -> None:
    assert path in errors_of(obj)


def test_cluster_valid_and_sync_mode_immutable() -> None:
    old = admit(cluster(syncMode="Pull", taints=[{"key": "k", "effect": "NoExecute"}]))
    with pytest.raises(ValidationFailed) as info:
        admit(cluster(syncMode="Push"), old=old)
    assert info.value.paths == ["spec.syncMode"]
