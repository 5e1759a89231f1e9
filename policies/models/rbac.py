"""``rbac.authorization.k8s.io/v1`` Role, ClusterRole, RoleBinding, ClusterRoleBinding and ``v1``
ServiceAccount, as Kubernetes defines them (field names and required fields from the API reference)."""

from __future__ import annotations

from typing import ClassVar, Optional

from pydantic import Field

from policies.models.fields import KindObject
from policies.models.meta import K8sModel, LabelSelector

RBAC_API_VERSION = "rbac.authorization.k8s.io/v1"


class PolicyRule(K8sModel):
    verbs: list[str]
    api_groups: Optional[list[str]] = None
    resources: Optional[list[str]] = None
    resource_names: Optional[list[str]] = None
    non_resource_ur_ls: Optional[list[str]] = Field(default=None, alias="nonResourceURLs")


class AggregationRule(K8sModel):
    cluster_role_selectors: Optional[list[LabelSelector]] = None


class Role(KindObject):
    API_VERSION: ClassVar[str] = RBAC_API_VERSION
    KIND: ClassVar[str] = "Role"

    rules: Optional[list[PolicyRule]] = None


class ClusterRole(KindObject):
    API_VERSION: ClassVar[str] = RBAC_API_VERSION
    KIND: ClassVar[str] = "ClusterRole"

    rules: Optional[list[PolicyRule]] = None
    aggregation_rule: Optional[AggregationRule] = None


class Subject(K8sModel):
    kind: str
    name: str
    api_group: Optional[str] = None
    namespace: Optional[str] = None


class RoleRef(K8sModel):
    api_group: str
    kind: str
    name: str


class RoleBinding(KindObject):
    API_VERSION: ClassVar[str] = RBAC_API_VERSION
    KIND: ClassVar[str] = "RoleBinding"

    subjects: Optional[list[Subject]] = None
    role_ref: RoleRef


class ClusterRoleBinding(KindObject):
    API_VERSION: ClassVar[str] = RBAC_API_VERSION
    KIND: ClassVar[str] = "ClusterRoleBinding"

    subjects: Optional[list[Subject]] = None
    role_ref: RoleRef


class LocalObjectReference(K8sModel):
    name: Optional[str] = None


class ServiceAccountSecretRef(K8sModel):
    api_version: Optional[str] = None
    kind: Optional[str] = None
    name: Optional[str] = None
    namespace: Optional[str] = None
    uid: Optional[str] = None
    resource_version: Optional[str] = None
    field_path: Optional[str] = None


class ServiceAccount(KindObject):
    API_VERSION: ClassVar[str] = "v1"
    KIND: ClassVar[str] = "ServiceAccount"

    secrets: Optional[list[ServiceAccountSecretRef]] = None
    image_pull_secrets: Optional[list[LocalObjectReference]] = None
    automount_service_account_token: Optional[bool] = None
