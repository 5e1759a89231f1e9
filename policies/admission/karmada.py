"""Karmada's webhook rules for propagation and override policies (reference/karmada.md §1.1-1.3).

Mutating (on create and update, as Karmada's webhook does): a resource selector without a
namespace gets the policy's namespace; a spread constraint without field or label gets
``spreadByField: cluster``, without ``minGroups`` gets 1; ``Divided`` without a division
preference gets ``Weighted``; a graceful application failover gets ``gracePeriodSeconds:
600``; an empty ``schedulerName`` becomes ``default-scheduler``.

Validating: every broken rule is listed with its path; enum errors name the allowed values.
Clusters, ResourceBindings and Works: :mod:`policies.admission.karmada_objects`.
"""

from __future__ import annotations

import re
from typing import Any, Optional, Sequence

from policies.admission import AdmissionContext, require
from policies.errors import FieldError
from policies.k8s import label_selector
from policies.k8s import tolerations as k8s_tolerations
from policies.models.karmada_common import Toleration
from policies.models.karmada_policy import (
    APPLICATION_PURGE_MODES,
    CLUSTER_PURGE_MODES,
    COMMAND_OPERATORS,
    CONFLICT_RESOLUTIONS,
    DEFAULT_SCHEDULER_NAME,
    DIVISION_PREFERENCES,
    DYNAMIC_WEIGHT_FACTORS,
    FIELD_SELECTOR_KEYS,
    FIELD_SELECTOR_OPERATORS,
    IMAGE_COMPONENTS,
    PLAINTEXT_OPERATORS,
    PREEMPTION_POLICIES,
    PRIORITY_CLASS_SOURCES,
    REPLICA_SCHEDULING_TYPES,
    SPREAD_FIELDS,
    ClusterAffinity,
    ClusterPropagationPolicy,
    OverrideSpec,
    Placement,
    PropagationSpec,
    ResourceSelector,
    SpreadConstraint,
)
from policies.models.meta import LabelSelector

DEFAULT_FAILOVER_GRACE_PERIOD_SECONDS = 600
DEFAULT_FAILOVER_TOLERATION_SECONDS = 300
#: Application purge modes Karmada deprecated and removed in v1.19, with their current names.
REMOVED_PURGE_MODES = {"Immediately": "Directly", "Graciously": "Gracefully"}
RESERVED_NAMESPACES = ("karmada-system", "karmada-cluster")
RESERVED_NAMESPACE_PREFIX = "karmada-es-"
_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
MAX_AFFINITY_NAME = 32


def one_of(errors: list[FieldError], value: Optional[str], allowed: Sequence[str], path: str) -> None:
    """Reject ``value`` (when set) unless it is one of ``allowed``, naming them."""
    if value is not None and value not in allowed:
        errors.append(FieldError(path, f"unsupported value {value!r}: supported values: "
                                       f"{', '.join(repr(a) for a in allowed)}"))


# ---------------------------------------------------------------- defaults
def default_propagation(spec: PropagationSpec, namespace: Optional[str]) -> None:
    _default_selectors(spec.resource_selectors, namespace)
    if not spec.scheduler_name:
        spec.scheduler_name = DEFAULT_SCHEDULER_NAME
    placement = spec.placement
    if placement is not None:
        for constraint in placement.spread_constraints or []:
            if not constraint.spread_by_field and not constraint.spread_by_label:
                constraint.spread_by_field = "cluster"
            if constraint.min_groups is None:
                constraint.min_groups = 1
        strategy = placement.replica_scheduling
        if strategy is not None:
            if not strategy.replica_scheduling_type:
                strategy.replica_scheduling_type = "Divided"  # the CRD default when the block exists
            if strategy.replica_scheduling_type == "Divided" and not strategy.replica_division_preference:
                strategy.replica_division_preference = "Weighted"
    app = spec.failover.application if spec.failover else None
    if app is not None:
        if not app.purge_mode:
            app.purge_mode = "Gracefully"
        if app.purge_mode == "Gracefully" and app.grace_period_seconds is None:
            app.grace_period_seconds = DEFAULT_FAILOVER_GRACE_PERIOD_SECONDS
        if app.decision_conditions is not None and app.decision_conditions.toleration_seconds is None:
            app.decision_conditions.toleration_seconds = DEFAULT_FAILOVER_TOLERATION_SECONDS  # the CRD default


def _default_selectors(selectors: Optional[list[ResourceSelector]], namespace: Optional[str]) -> None:
    if namespace:
        for selector in selectors or []:
            if not selector.namespace:
                selector.namespace = namespace


# ---------------------------------------------------------------- validation: propagation
def validate_selectors(selectors: Optional[list[ResourceSelector]], path: str, required: bool,
                       cluster_scoped: bool) -> list[FieldError]:
    errors: list[FieldError] = []
    if required and not selectors:
        errors.append(FieldError(path, "must select at least one resource (an empty list does not mean everything)"))
    for i, sel in enumerate(selectors or []):
        at = f"{path}[{i}]"
        require(errors, bool(sel.api_version), f"{at}.apiVersion", "required field is missing")
        require(errors, bool(sel.kind), f"{at}.kind", "required field is missing")
        errors += validate_label_selector(sel.label_selector, f"{at}.labelSelector")
        ns = sel.namespace or ""
        if cluster_scoped and (ns in RESERVED_NAMESPACES or ns.startswith(RESERVED_NAMESPACE_PREFIX)):
            errors.append(FieldError(f"{at}.namespace", f"a ClusterPropagationPolicy may not select resources "
                                                        f"in the reserved namespace {ns!r}"))
    return errors


def validate_label_selector(selector: Optional[LabelSelector], path: str) -> list[FieldError]:
    """metav1.LabelSelector rules (policies.k8s.label_selector): known operators; values only and
    always for In/NotIn."""
    if selector is None:
        return []
    return label_selector.validate(selector.model_dump(by_alias=True, exclude_none=True), path)


def validate_affinity(affinity: ClusterAffinity, path: str) -> list[FieldError]:
    errors = validate_label_selector(affinity.label_selector, f"{path}.labelSelector")
    field_selector = affinity.field_selector
    for i, req in enumerate((field_selector.match_expressions if field_selector else None) or []):
        at = f"{path}.fieldSelector.matchExpressions[{i}]"
        one_of(errors, req.key, FIELD_SELECTOR_KEYS, f"{at}.key")
        one_of(errors, req.operator, FIELD_SELECTOR_OPERATORS, f"{at}.operator")
        require(errors, bool(req.values), f"{at}.values", "must list at least one value for In/NotIn")
    for i, name in enumerate(affinity.cluster_names or []):
        require(errors, bool(_DNS1123_SUBDOMAIN.match(name)), f"{path}.clusterNames[{i}]",
                f"{name!r} is not a valid cluster name (DNS-1123 subdomain)")
    return errors


def validate_tolerations(tolerations: Sequence[Toleration], path: str) -> list[FieldError]:
    """kube's toleration rules (policies.k8s.tolerations), and Karmada's refusal of Lt/Gt."""
    errors: list[FieldError] = []
    for i, tol in enumerate(tolerations):
        at = f"{path}[{i}]"
        raw = tol.model_dump(by_alias=True, exclude_none=True)
        if tol.operator in ("Lt", "Gt"):
            errors.append(FieldError(f"{at}.operator", f"operator {tol.operator!r} is not allowed in cluster "
                                                       f"tolerations: supported values: 'Exists', 'Equal'"))
            raw.pop("operator")
        errors += k8s_tolerations.validate(raw, at)
    return errors


def validate_spread(constraints: Sequence[SpreadConstraint], path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    seen: dict[str, int] = {}
    for i, c in enumerate(constraints):
        at = f"{path}[{i}]"
        if c.spread_by_field and c.spread_by_label:
            errors.append(FieldError(at, "spreadByField and spreadByLabel cannot both be set"))
        one_of(errors, c.spread_by_field, SPREAD_FIELDS, f"{at}.spreadByField")
        if c.spread_by_field:
            if c.spread_by_field in seen:
                errors.append(FieldError(f"{at}.spreadByField", f"{c.spread_by_field!r} already used by "
                                                                f"{path}[{seen[c.spread_by_field]}]"))
            seen.setdefault(c.spread_by_field, i)
        if c.min_groups is not None and c.min_groups < 0:
            errors.append(FieldError(f"{at}.minGroups", "must be >= 0"))
        if c.max_groups is not None and c.max_groups < 0:
            errors.append(FieldError(f"{at}.maxGroups", "must be >= 0"))
        if c.max_groups is not None and c.min_groups is not None and c.max_groups < c.min_groups:
            errors.append(FieldError(f"{at}.maxGroups", f"maxGroups ({c.max_groups}) must be >= "
                                                        f"minGroups ({c.min_groups})"))
    if seen and "cluster" not in seen:
        errors.append(FieldError(path, "when spreadByField is used, a constraint with spreadByField 'cluster' "
                                       "must be present too"))
    return errors


def validate_placement(placement: Placement, path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    if placement.cluster_affinity is not None and placement.cluster_affinities:
        errors.append(FieldError(f"{path}.clusterAffinities", "clusterAffinity and clusterAffinities cannot both be set"))
    if placement.cluster_affinity is not None:
        errors += validate_affinity(placement.cluster_affinity, f"{path}.clusterAffinity")
    names: dict[str, str] = {}
    for i, term in enumerate(placement.cluster_affinities or []):
        at = f"{path}.clusterAffinities[{i}]"
        errors += _affinity_name(term.affinity_name, f"{at}.affinityName", names)
        errors += validate_affinity(term, at)
        for j, overflow in enumerate(term.overflow_affinities or []):
            o_at = f"{at}.overflowAffinities[{j}]"
            errors += _affinity_name(overflow.affinity_name, f"{o_at}.affinityName", names)
            errors += validate_affinity(overflow, o_at)
    errors += validate_tolerations(placement.cluster_tolerations or [], f"{path}.clusterTolerations")
    errors += validate_spread(placement.spread_constraints or [], f"{path}.spreadConstraints")
    strategy = placement.replica_scheduling
    if strategy is not None:
        at = f"{path}.replicaScheduling"
        one_of(errors, strategy.replica_scheduling_type, REPLICA_SCHEDULING_TYPES, f"{at}.replicaSchedulingType")
        one_of(errors, strategy.replica_division_preference, DIVISION_PREFERENCES, f"{at}.replicaDivisionPreference")
        prefs = strategy.weight_preference
        if prefs is not None:
            one_of(errors, prefs.dynamic_weight, DYNAMIC_WEIGHT_FACTORS, f"{at}.weightPreference.dynamicWeight")
            for i, entry in enumerate(prefs.static_weight_list or []):
                w_at = f"{at}.weightPreference.staticWeightList[{i}]"
                require(errors, entry.weight >= 1, f"{w_at}.weight",
                        f"weight must be >= 1, got {entry.weight} (leave a cluster out to give it nothing)")
                errors += validate_affinity(entry.target_cluster, f"{w_at}.targetCluster")
    return errors


def _affinity_name(name: str, path: str, seen: dict[str, str]) -> list[FieldError]:
    errors: list[FieldError] = []
    if not 1 <= len(name) <= MAX_AFFINITY_NAME:
        errors.append(FieldError(path, f"must be 1 to {MAX_AFFINITY_NAME} characters, got {len(name)}"))
    if name in seen:
        errors.append(FieldError(path, f"affinityName {name!r} is already used at {seen[name]}"))
    seen.setdefault(name, path)
    return errors


def validate_propagation(spec: PropagationSpec, cluster_scoped: bool) -> list[FieldError]:
    errors = validate_selectors(spec.resource_selectors, "spec.resourceSelectors", True, cluster_scoped)
    if spec.placement is not None:
        errors += validate_placement(spec.placement, "spec.placement")
    one_of(errors, spec.preemption, PREEMPTION_POLICIES, "spec.preemption")
    one_of(errors, spec.conflict_resolution, CONFLICT_RESOLUTIONS, "spec.conflictResolution")
    one_of(errors, spec.activation_preference, ("Lazy",), "spec.activationPreference")
    if spec.failover is not None:
        app, cluster = spec.failover.application, spec.failover.cluster
        if app is not None:
            one_of(errors, app.purge_mode, APPLICATION_PURGE_MODES, "spec.failover.application.purgeMode")
            renamed = REMOVED_PURGE_MODES.get(app.purge_mode or "")
            if renamed:  # say what the old name became
                errors[-1] = FieldError(errors[-1].path, f"{errors[-1].message}; {app.purge_mode!r} is now "
                                        f"{renamed!r} (the old name was removed in Karmada v1.19)")
            seconds = app.decision_conditions.toleration_seconds if app.decision_conditions else None
            require(errors, seconds is None or seconds >= 0,
                    "spec.failover.application.decisionConditions.tolerationSeconds", "must be >= 0")
            require(errors, app.grace_period_seconds is None or app.grace_period_seconds > 0,
                    "spec.failover.application.gracePeriodSeconds", "must be > 0")
            if app.purge_mode != "Gracefully" and app.grace_period_seconds is not None:
                errors.append(FieldError("spec.failover.application.gracePeriodSeconds",
                                         "only allowed when purgeMode is 'Gracefully'"))
        if cluster is not None:
            one_of(errors, cluster.purge_mode, CLUSTER_PURGE_MODES, "spec.failover.cluster.purgeMode")
    suspension = spec.suspension
    if suspension is not None and suspension.dispatching and suspension.dispatching_on_clusters is not None:
        errors.append(FieldError("spec.suspension", "dispatching and dispatchingOnClusters are mutually exclusive"))
    if spec.schedule_priority is not None:
        source = spec.schedule_priority.priority_class_source
        require(errors, bool(source), "spec.schedulePriority.priorityClassSource",
                "required when schedulePriority is set")
        one_of(errors, source or None, PRIORITY_CLASS_SOURCES, "spec.schedulePriority.priorityClassSource")
        # PodPriorityClass reads the name from the resource template's pod spec
        require(errors, source == "PodPriorityClass" or bool(spec.schedule_priority.priority_class_name),
                "spec.schedulePriority.priorityClassName", "required when priorityClassSource is KubePriorityClass")
    return errors


# ---------------------------------------------------------------- validation: override
def validate_override(spec: OverrideSpec, cluster_scoped: bool) -> list[FieldError]:
    errors = validate_selectors(spec.resource_selectors, "spec.resourceSelectors", False, cluster_scoped)
    if spec.override_rules and (spec.overriders is not None or spec.target_cluster is not None):
        errors.append(FieldError("spec.overrideRules", "overrideRules and the deprecated "
                                                       "targetCluster/overriders cannot both be set"))
    rules = [(f"spec.overrideRules[{i}]", r.target_cluster, r.overriders) for i, r in enumerate(spec.override_rules or [])]
    if spec.overriders is not None:
        rules.append(("spec", spec.target_cluster, spec.overriders))
    for at, target, overriders in rules:
        if target is not None:
            errors += validate_affinity(target, f"{at}.targetCluster")
        o_at = f"{at}.overriders"
        for i, p in enumerate(overriders.plaintext or []):
            one_of(errors, p.operator, PLAINTEXT_OPERATORS, f"{o_at}.plaintext[{i}].operator")
            require(errors, p.path.startswith("/"), f"{o_at}.plaintext[{i}].path",
                    f"must be a JSON pointer starting with '/', got {p.path!r}")
            if p.operator in ("add", "replace") and p.value is None:
                errors.append(FieldError(f"{o_at}.plaintext[{i}].value", f"required for operator {p.operator!r}"))
        for i, img in enumerate(overriders.image_overrider or []):
            one_of(errors, img.component, IMAGE_COMPONENTS, f"{o_at}.imageOverrider[{i}].component")
            one_of(errors, img.operator, PLAINTEXT_OPERATORS, f"{o_at}.imageOverrider[{i}].operator")
        for name, items in (("commandOverrider", overriders.command_overrider), ("argsOverrider", overriders.args_overrider)):
            for i, c in enumerate(items or []):
                one_of(errors, c.operator, COMMAND_OPERATORS, f"{o_at}.{name}[{i}].operator")
        for name, kv in (("labelsOverrider", overriders.labels_overrider), ("annotationsOverrider", overriders.annotations_overrider)):
            for i, entry in enumerate(kv or []):
                one_of(errors, entry.operator, PLAINTEXT_OPERATORS, f"{o_at}.{name}[{i}].operator")
    return errors


# ---------------------------------------------------------------- admitters
class PropagationAdmitter:
    def mutate(self, obj: Any, ctx: AdmissionContext, creating: bool) -> Any:
        namespace = None if isinstance(obj, ClusterPropagationPolicy) else obj.metadata.namespace
        default_propagation(obj.spec, namespace)
        return obj

    def validate(self, obj: Any, old: Any | None, ctx: AdmissionContext) -> list[FieldError]:
        return validate_propagation(obj.spec, isinstance(obj, ClusterPropagationPolicy))


class OverrideAdmitter:
    def __init__(self, cluster_scoped: bool) -> None:
        self.cluster_scoped = cluster_scoped

    def mutate(self, obj: Any, ctx: AdmissionContext, creating: bool) -> Any:
        if not self.cluster_scoped:
            _default_selectors(obj.spec.resource_selectors, obj.metadata.namespace)
        return obj

    def validate(self, obj: Any, old: Any | None, ctx: AdmissionContext) -> list[FieldError]:
        return validate_override(obj.spec, self.cluster_scoped)


ADMITTERS: dict[str, Any] = {
    "PropagationPolicy": PropagationAdmitter(),
    "ClusterPropagationPolicy": PropagationAdmitter(),
    "OverridePolicy": OverrideAdmitter(cluster_scoped=False),
    "ClusterOverridePolicy": OverrideAdmitter(cluster_scoped=True),
}
