"""Descriptions for the RBAC kinds and ServiceAccount (see :mod:`policies.api_docs`)."""

from __future__ import annotations

_RULES = "The permissions granted; each rule allows verbs on resources of API groups."
_SUBJECTS = "The users, groups and service accounts the role is granted to."
_ROLE_REF = "The Role or ClusterRole granted. Cannot change once set."

TYPES: dict[str, str] = {
    "Role": "A set of permissions within one namespace. Caldera's API server enforces it.",
    "ClusterRole": "A set of permissions across the cluster (or reused per namespace through RoleBindings).",
    "RoleBinding": "Grants a Role or ClusterRole to subjects within one namespace.",
    "ClusterRoleBinding": "Grants a ClusterRole to subjects across the cluster.",
    "PolicyRule": "Verbs allowed on resources (or on non-resource URLs).",
    "AggregationRule": "Builds a ClusterRole's rules from the ClusterRoles matching its selectors.",
    "Subject": "A user, group or service account.",
    "RoleRef": "The role a binding grants.",
    "ServiceAccount": "An identity for processes (such as Caldera's agents) talking to the API server.",
    "ServiceAccountSecretRef": "A Secret holding a token of the service account.",
    "LocalObjectReference": "An object in the same namespace, by name.",
}

FIELDS: dict[str, dict[str, str]] = {
    "Role": {"rules": _RULES},
    "ClusterRole": {"rules": _RULES, "aggregationRule": "Selects ClusterRoles whose rules are aggregated into "
                                                        "this one; the server then fills rules."},
    "RoleBinding": {"subjects": _SUBJECTS, "roleRef": _ROLE_REF},
    "ClusterRoleBinding": {"subjects": _SUBJECTS, "roleRef": _ROLE_REF},
    "PolicyRule": {
        "verbs": "The verbs allowed (get, list, watch, create, update, patch, delete, deletecollection, or *).",
        "apiGroups": "The API groups of the resources; \"\" is the core group, * any group.",
        "resources": "The resources (plural, optionally with /subresource); * any.",
        "resourceNames": "Restricts the rule to these object names.",
        "nonResourceURLs": "URL paths (such as /healthz) the verbs apply to; only in ClusterRoles.",
    },
    "AggregationRule": {"clusterRoleSelectors": "Label selectors of the ClusterRoles to aggregate."},
    "Subject": {"kind": "User, Group or ServiceAccount.", "name": "Name of the subject.",
                "apiGroup": "rbac.authorization.k8s.io for users and groups, empty for service accounts.",
                "namespace": "Namespace of a service account."},
    "RoleRef": {"apiGroup": "rbac.authorization.k8s.io.", "kind": "Role or ClusterRole.",
                "name": "Name of the role."},
    "ServiceAccount": {
        "secrets": "Secrets holding the account's tokens (legacy).",
        "imagePullSecrets": "Secrets pods running as this account use to pull images.",
        "automountServiceAccountToken": "Whether pods running as this account get its token mounted.",
    },
    "ServiceAccountSecretRef": {
        "apiVersion": "API version of the Secret.", "kind": "Secret.", "name": "Name of the Secret.",
        "namespace": "Namespace of the Secret.", "uid": "UID of the Secret.",
        "resourceVersion": "resourceVersion of the Secret.", "fieldPath": "Not used.",
    },
    "LocalObjectReference": {"name": "Name of the object."},
}
