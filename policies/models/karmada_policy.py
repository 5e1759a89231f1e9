"""Karmada policies (``policy.karmada.io/v1alpha1``): propagation and override.

PropagationPolicy (namespaced) and ClusterPropagationPolicy (cluster-scoped) share
:class:`PropagationSpec`; OverridePolicy and ClusterOverridePolicy share
:class:`OverrideSpec`. Field names and enums follow Karmada's API (reference/karmada.md
§1.1-1.3). Models check shapes and types; the rules between fields (weights >= 1, one
affinity form, spread rules...) are admission's job (:mod:`policies.admission.karmada`),
so that every broken rule is reported together with its path.
"""

from __future__ import annotations

from typing import Any, ClassVar, Optional

from pydantic import Field

from policies.models.fields import KindObject
from policies.models.karmada_common import Toleration
from policies.models.meta import K8sModel, LabelSelector

GROUP_VERSION = "policy.karmada.io/v1alpha1"

# Enumerations (checked by admission so the error lists the allowed values).
REPLICA_SCHEDULING_TYPES = ("Duplicated", "Divided")
DIVISION_PREFERENCES = ("Aggregated", "Weighted")
DYNAMIC_WEIGHT_FACTORS = ("AvailableReplicas",)
SPREAD_FIELDS = ("cluster", "region", "zone", "provider")
PREEMPTION_POLICIES = ("Always", "Never")
CONFLICT_RESOLUTIONS = ("Abort", "Overwrite")
ACTIVATION_PREFERENCES = ("Lazy",)
APPLICATION_PURGE_MODES = ("Gracefully", "Directly", "Never")
CLUSTER_PURGE_MODES = ("Gracefully", "Directly")
PRIORITY_CLASS_SOURCES = ("KubePriorityClass", "PodPriorityClass")
FIELD_SELECTOR_KEYS = ("provider", "region", "zone")
FIELD_SELECTOR_OPERATORS = ("In", "NotIn")
DEFAULT_SCHEDULER_NAME = "default-scheduler"


# ---------------------------------------------------------------- selection
class ResourceSelector(K8sModel):
    api_version: str
    kind: str
    namespace: Optional[str] = None
    name: Optional[str] = None
    label_selector: Optional[LabelSelector] = None


class FieldSelectorRequirement(K8sModel):
    key: str
    operator: str
    values: Optional[list[str]] = None


class FieldSelector(K8sModel):
    match_expressions: Optional[list[FieldSelectorRequirement]] = None


class ClusterAffinity(K8sModel):
    """Which clusters qualify: by label, by provider/region/zone, by name, minus exclusions."""

    label_selector: Optional[LabelSelector] = None
    field_selector: Optional[FieldSelector] = None
    cluster_names: Optional[list[str]] = None
    exclude: Optional[list[str]] = None


class OverflowAffinityTerm(ClusterAffinity):
    affinity_name: str


class ClusterAffinityTerm(ClusterAffinity):
    """One entry of the ordered ``clusterAffinities`` list."""

    affinity_name: str
    overflow_affinities: Optional[list[OverflowAffinityTerm]] = None


class SpreadConstraint(K8sModel):
    spread_by_field: Optional[str] = None
    spread_by_label: Optional[str] = None
    max_groups: Optional[int] = None
    min_groups: Optional[int] = None


class StaticClusterWeight(K8sModel):
    target_cluster: ClusterAffinity
    weight: int


class ClusterPreferences(K8sModel):
    static_weight_list: Optional[list[StaticClusterWeight]] = None
    dynamic_weight: Optional[str] = None


class ReplicaSchedulingStrategy(K8sModel):
    replica_scheduling_type: Optional[str] = None
    replica_division_preference: Optional[str] = None
    weight_preference: Optional[ClusterPreferences] = None


class WorkloadAffinityTerm(K8sModel):
    group_by_label_key: str


class WorkloadAffinity(K8sModel):
    affinity: Optional[WorkloadAffinityTerm] = None
    anti_affinity: Optional[WorkloadAffinityTerm] = None


class Placement(K8sModel):
    cluster_affinity: Optional[ClusterAffinity] = None
    cluster_affinities: Optional[list[ClusterAffinityTerm]] = None
    cluster_tolerations: Optional[list[Toleration]] = None
    spread_constraints: Optional[list[SpreadConstraint]] = None
    replica_scheduling: Optional[ReplicaSchedulingStrategy] = None
    workload_affinity: Optional[WorkloadAffinity] = None


# ---------------------------------------------------------------- failover, suspension
class DecisionConditions(K8sModel):
    toleration_seconds: Optional[int] = None


class StatePreservationRule(K8sModel):
    alias_label_name: str
    json_path: str


class StatePreservation(K8sModel):
    rules: list[StatePreservationRule]


class ApplicationFailoverBehavior(K8sModel):
    decision_conditions: Optional[DecisionConditions] = None
    purge_mode: Optional[str] = None
    grace_period_seconds: Optional[int] = None
    state_preservation: Optional[StatePreservation] = None


class ClusterFailoverBehavior(K8sModel):
    purge_mode: Optional[str] = None
    state_preservation: Optional[StatePreservation] = None


class FailoverBehavior(K8sModel):
    application: Optional[ApplicationFailoverBehavior] = None
    cluster: Optional[ClusterFailoverBehavior] = None


class SuspendClusters(K8sModel):
    cluster_names: Optional[list[str]] = None


class Suspension(K8sModel):
    dispatching: Optional[bool] = None
    dispatching_on_clusters: Optional[SuspendClusters] = None


class SchedulePriority(K8sModel):
    priority_class_source: Optional[str] = None
    priority_class_name: Optional[str] = None


# ---------------------------------------------------------------- propagation policies
class PropagationSpec(K8sModel):
    resource_selectors: list[ResourceSelector]
    propagate_deps: Optional[bool] = None
    #: Deprecated alias of ``propagateDeps``.
    association: Optional[bool] = None
    placement: Optional[Placement] = None
    priority: Optional[int] = None
    preemption: Optional[str] = None
    dependent_overrides: Optional[list[str]] = None
    scheduler_name: Optional[str] = None
    failover: Optional[FailoverBehavior] = None
    conflict_resolution: Optional[str] = None
    activation_preference: Optional[str] = None
    suspension: Optional[Suspension] = None
    preserve_resources_on_deletion: Optional[bool] = None
    schedule_priority: Optional[SchedulePriority] = None


class PropagationPolicy(KindObject):
    API_VERSION: ClassVar[str] = GROUP_VERSION
    KIND: ClassVar[str] = "PropagationPolicy"
    api_version: str = GROUP_VERSION
    kind: str = "PropagationPolicy"
    spec: PropagationSpec


class ClusterPropagationPolicy(KindObject):
    API_VERSION: ClassVar[str] = GROUP_VERSION
    KIND: ClassVar[str] = "ClusterPropagationPolicy"
    api_version: str = GROUP_VERSION
    kind: str = "ClusterPropagationPolicy"
    spec: PropagationSpec


# ---------------------------------------------------------------- override policies
PLAINTEXT_OPERATORS = ("add", "remove", "replace")
IMAGE_COMPONENTS = ("Registry", "Repository", "Tag")
COMMAND_OPERATORS = ("add", "remove")


class PlaintextOverrider(K8sModel):
    path: str
    operator: str
    value: Optional[Any] = None


class ImagePredicate(K8sModel):
    path: str


class ImageOverrider(K8sModel):
    predicate: Optional[ImagePredicate] = None
    component: str
    operator: str
    value: Optional[str] = None


class CommandArgsOverrider(K8sModel):
    container_name: str
    operator: str
    value: Optional[list[str]] = None


class LabelAnnotationOverrider(K8sModel):
    operator: str
    value: Optional[dict[str, str]] = None


class SubPatch(K8sModel):
    sub_path: str
    operator: str
    value: Optional[Any] = None


class FieldOverrider(K8sModel):
    field_path: str
    json_: Optional[list[SubPatch]] = Field(default=None, alias="json")
    yaml_: Optional[list[SubPatch]] = Field(default=None, alias="yaml")


class Overriders(K8sModel):
    plaintext: Optional[list[PlaintextOverrider]] = None
    image_overrider: Optional[list[ImageOverrider]] = None
    command_overrider: Optional[list[CommandArgsOverrider]] = None
    args_overrider: Optional[list[CommandArgsOverrider]] = None
    labels_overrider: Optional[list[LabelAnnotationOverrider]] = None
    annotations_overrider: Optional[list[LabelAnnotationOverrider]] = None
    field_overrider: Optional[list[FieldOverrider]] = None


class RuleWithCluster(K8sModel):
    target_cluster: Optional[ClusterAffinity] = None
    overriders: Overriders


class OverrideSpec(K8sModel):
    #: Empty means every resource in the policy's namespace (unlike propagation).
    resource_selectors: Optional[list[ResourceSelector]] = None
    override_rules: Optional[list[RuleWithCluster]] = None
    #: Deprecated single-rule form.
    target_cluster: Optional[ClusterAffinity] = None
    overriders: Optional[Overriders] = None


class OverridePolicy(KindObject):
    API_VERSION: ClassVar[str] = GROUP_VERSION
    KIND: ClassVar[str] = "OverridePolicy"
    api_version: str = GROUP_VERSION
    kind: str = "OverridePolicy"
    spec: OverrideSpec


class ClusterOverridePolicy(KindObject):
    API_VERSION: ClassVar[str] = GROUP_VERSION
    KIND: ClassVar[str] = "ClusterOverridePolicy"
    api_version: str = GROUP_VERSION
    kind: str = "ClusterOverridePolicy"
    spec: OverrideSpec
