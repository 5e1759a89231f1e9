"""RBAC admission: kube-apiserver's validation of Roles, ClusterRoles and their bindings.

* every rule has verbs; a resource rule names apiGroups and resources; a Role's rules cannot
  name nonResourceURLs, and one rule cannot mix resources and nonResourceURLs;
* a binding's roleRef names a Role or ClusterRole of ``rbac.authorization.k8s.io`` (a
  ClusterRoleBinding only a ClusterRole) and cannot change on update;
* subjects are Users, Groups (apiGroup ``rbac.authorization.k8s.io``) or ServiceAccounts (apiGroup
  ``""``, and a namespace in a ClusterRoleBinding).

A binding to a role that does not exist is allowed, as in kube: it grants nothing.
"""

from __future__ import annotations

from typing import Any

from policies.admission import AdmissionContext
from policies.errors import FieldError
from policies.k8s import label_selector
from policies.models.rbac import AggregationRule, ClusterRoleBinding, PolicyRule, Subject

RBAC_GROUP = "rbac.authorization.k8s.io"


def path_segment_name_error(name: str) -> str | None:
    """RBAC objects may be named anything a URL path segment can hold (``system:masters``)."""
    if name in (".", ".."):
        return f"Invalid value: {name!r}: may not be '.' or '..'"
    for bad in ("/", "%"):
        if bad in name:
            return f"Invalid value: {name!r}: may not contain '{bad}'"
    return None


def validate_rules(rules: list[PolicyRule] | None, namespaced: bool) -> list[FieldError]:
    errors: list[FieldError] = []
    for i, rule in enumerate(rules or []):
        path = f"rules[{i}]"
        if not rule.verbs:
            errors.append(FieldError(f"{path}.verbs", "Required value: verbs must contain at least one value"))
        if rule.non_resource_ur_ls:
            if namespaced:
                errors.append(FieldError(f"{path}.nonResourceURLs", "Invalid value: namespaced rules cannot apply "
                                                                    "to non-resource URLs"))
            if rule.api_groups or rule.resources or rule.resource_names:
                errors.append(FieldError(f"{path}.nonResourceURLs", "Invalid value: rules cannot apply to both "
                                                                    "regular resources and non-resource URLs"))
            continue
        if not rule.api_groups:
            errors.append(FieldError(f"{path}.apiGroups", "Required value: resource rules must supply at least "
                                                          "one api group"))
        if not rule.resources:
            errors.append(FieldError(f"{path}.resources", "Required value: resource rules must supply at least "
                                                          "one resource"))
    return errors


class RoleAdmitter:
    namespaced = True

    def mutate(self, obj: Any, ctx: AdmissionContext, creating: bool) -> Any:
        return obj

    def validate(self, obj: Any, old: Any | None, ctx: AdmissionContext) -> list[FieldError]:
        errors: list[FieldError] = []
        errors += validate_rules(obj.rules, self.namespaced)
        return errors


class ClusterRoleAdmitter(RoleAdmitter):
    namespaced = False

    def validate(self, obj: Any, old: Any | None, ctx: AdmissionContext) -> list[FieldError]:
        return super().validate(obj, old, ctx) + validate_aggregation(obj.aggregation_rule)


def validate_aggregation(rule: AggregationRule | None) -> list[FieldError]:
    """kube: at least one clusterRoleSelector, each a valid label selector (an unknown operator is
    refused here, so authorisation never has to guess what it meant)."""
    if rule is None:
        return []
    path = "aggregationRule.clusterRoleSelectors"
    if not rule.cluster_role_selectors:
        return [FieldError(path, "Required value: at least one clusterRoleSelector required if aggregationRule "
                                 "is non-nil")]
    errors: list[FieldError] = []
    for i, selector in enumerate(rule.cluster_role_selectors):
        errors += label_selector.validate(selector.model_dump(by_alias=True, exclude_none=True), f"{path}[{i}]")
    return errors


def _validate_subject(subject: Subject, path: str, cluster_binding: bool) -> list[FieldError]:
    if subject.kind == "ServiceAccount":
        if subject.api_group:
            return [FieldError(f"{path}.apiGroup", f"Unsupported value: {subject.api_group!r}: supported values: "
                                                   '""')]
        if cluster_binding and not subject.namespace:
            return [FieldError(f"{path}.namespace", "Required value")]
        return []
    if subject.kind in ("User", "Group"):
        if subject.api_group != RBAC_GROUP:
            return [FieldError(f"{path}.apiGroup", f"Unsupported value: {subject.api_group or ''!r}: supported "
                                                   f'values: "{RBAC_GROUP}"')]
        return []
    return [FieldError(f"{path}.kind", f'Unsupported value: {subject.kind!r}: supported values: "ServiceAccount", '
                                       '"User", "Group"')]


class RoleBindingAdmitter:
    def mutate(self, obj: Any, ctx: AdmissionContext, creating: bool) -> Any:
        for subject in obj.subjects or []:  # kube defaults the apiGroup of User and Group subjects
            if subject.kind in ("User", "Group") and subject.api_group is None:
                subject.api_group = RBAC_GROUP
            if subject.kind == "ServiceAccount" and subject.api_group is None:
                subject.api_group = ""
        return obj

    def validate(self, obj: Any, old: Any | None, ctx: AdmissionContext) -> list[FieldError]:
        errors: list[FieldError] = []
        cluster = isinstance(obj, ClusterRoleBinding)
        ref = obj.role_ref
        if ref.api_group != RBAC_GROUP:
            errors.append(FieldError("roleRef.apiGroup", f'Unsupported value: {ref.api_group!r}: supported values: '
                                                         f'"{RBAC_GROUP}"'))
        kinds = ("ClusterRole",) if cluster else ("Role", "ClusterRole")
        if ref.kind not in kinds:
            errors.append(FieldError("roleRef.kind", f"Unsupported value: {ref.kind!r}: supported values: "
                                                     + ", ".join(f'"{k}"' for k in kinds)))
        if not ref.name:
            errors.append(FieldError("roleRef.name", "Required value"))
        for i, subject in enumerate(obj.subjects or []):
            errors += _validate_subject(subject, f"subjects[{i}]", cluster)
        if old is not None and old.role_ref.model_dump() != ref.model_dump():
            errors.append(FieldError("roleRef", "Invalid value: cannot change roleRef"))
        return errors


ADMITTERS = {"Role": RoleAdmitter(), "ClusterRole": ClusterRoleAdmitter(), "RoleBinding": RoleBindingAdmitter(),
             "ClusterRoleBinding": RoleBindingAdmitter()}
