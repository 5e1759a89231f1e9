"""The protobuf messages of the built-in kinds Caldera serves, as the Kubernetes API defines them.

Field numbers are part of the wire protocol: each one below is the number the Kubernetes API
reference gives the field (``protobuf:"bytes,N,..."`` in the Go types). A field is written
``(json_name, number, type)``; types are

- scalars: ``string``, ``bytes``, ``bool``, ``int32``, ``int64``;
- another message of this table by name (``meta.ObjectMeta``);
- ``[T]`` for a repeated field, ``{T}`` for a map from string to ``T``;
- the wrapper messages whose JSON form is a plain value (:data:`VALUE_TYPES`): ``time`` and
  ``microtime`` (RFC 3339 strings), ``quantity`` (``"500m"``), ``intorstring``, ``rawextension``
  and ``fieldsv1`` (embedded JSON), ``extravalue`` (a list of strings).

Custom kinds (Volcano, Karmada, Kubeflow) have no entry: kube-apiserver serves CRDs as JSON
only, and so does Caldera.
"""

from __future__ import annotations

Field = tuple[str, int, str]

#: wrapper messages -> their fields on the wire; their JSON form is a single value
VALUE_TYPES: dict[str, list[Field]] = {
    "time": [("seconds", 1, "int64"), ("nanos", 2, "int32")],
    "microtime": [("seconds", 1, "int64"), ("nanos", 2, "int32")],
    "quantity": [("string", 1, "string")],
    "intorstring": [("type", 1, "int64"), ("intVal", 2, "int32"), ("strVal", 3, "string")],
    "rawextension": [("raw", 1, "bytes")],
    "fieldsv1": [("Raw", 1, "bytes")],
    "extravalue": [("items", 1, "[string]")],
}

_META = "meta.ObjectMeta"

MESSAGES: dict[str, list[Field]] = {
    # --- k8s.io/apimachinery/pkg/runtime
    "runtime.TypeMeta": [("apiVersion", 1, "string"), ("kind", 2, "string")],
    "runtime.Unknown": [("typeMeta", 1, "runtime.TypeMeta"), ("raw", 2, "bytes"),
                        ("contentEncoding", 3, "string"), ("contentType", 4, "string")],
    # --- k8s.io/apimachinery/pkg/apis/meta/v1
    "meta.ObjectMeta": [
        ("name", 1, "string"), ("generateName", 2, "string"), ("namespace", 3, "string"),
        ("selfLink", 4, "string"), ("uid", 5, "string"), ("resourceVersion", 6, "string"),
        ("generation", 7, "int64"), ("creationTimestamp", 8, "time"), ("deletionTimestamp", 9, "time"),
        ("deletionGracePeriodSeconds", 10, "int64"), ("labels", 11, "{string}"),
        ("annotations", 12, "{string}"), ("ownerReferences", 13, "[meta.OwnerReference]"),
        ("finalizers", 14, "[string]"), ("managedFields", 17, "[meta.ManagedFieldsEntry]"),
    ],
    "meta.OwnerReference": [("kind", 1, "string"), ("name", 3, "string"), ("uid", 4, "string"),
                            ("apiVersion", 5, "string"), ("controller", 6, "bool"),
                            ("blockOwnerDeletion", 7, "bool")],
    "meta.ManagedFieldsEntry": [("manager", 1, "string"), ("operation", 2, "string"),
                                ("apiVersion", 3, "string"), ("time", 4, "time"), ("fieldsType", 6, "string"),
                                ("fieldsV1", 7, "fieldsv1"), ("subresource", 8, "string")],
    "meta.ListMeta": [("selfLink", 1, "string"), ("resourceVersion", 2, "string"), ("continue", 3, "string"),
                      ("remainingItemCount", 4, "int64")],
    "meta.LabelSelector": [("matchLabels", 1, "{string}"),
                           ("matchExpressions", 2, "[meta.LabelSelectorRequirement]")],
    "meta.LabelSelectorRequirement": [("key", 1, "string"), ("operator", 2, "string"), ("values", 3, "[string]")],
    "meta.Status": [("metadata", 1, "meta.ListMeta"), ("status", 2, "string"), ("message", 3, "string"),
                    ("reason", 4, "string"), ("details", 5, "meta.StatusDetails"), ("code", 6, "int32")],
    "meta.StatusDetails": [("name", 1, "string"), ("group", 2, "string"), ("kind", 3, "string"),
                           ("causes", 4, "[meta.StatusCause]"), ("retryAfterSeconds", 5, "int32"),
                           ("uid", 6, "string")],
    "meta.StatusCause": [("reason", 1, "string"), ("message", 2, "string"), ("field", 3, "string")],
    "meta.DeleteOptions": [("gracePeriodSeconds", 1, "int64"), ("preconditions", 2, "meta.Preconditions"),
                           ("orphanDependents", 3, "bool"), ("propagationPolicy", 4, "string"),
                           ("dryRun", 5, "[string]"),
                           ("ignoreStoreReadErrorWithClusterBreakingPotential", 6, "bool")],
    "meta.Preconditions": [("uid", 1, "string"), ("resourceVersion", 2, "string")],
    "meta.WatchEvent": [("type", 1, "string"), ("object", 2, "rawextension")],
    # --- core/v1
    "core.Namespace": [("metadata", 1, _META), ("spec", 2, "core.NamespaceSpec"),
                       ("status", 3, "core.NamespaceStatus")],
    "core.NamespaceSpec": [("finalizers", 1, "[string]")],
    "core.NamespaceStatus": [("phase", 1, "string"), ("conditions", 2, "[core.NamespaceCondition]")],
    "core.NamespaceCondition": [("type", 1, "string"), ("status", 2, "string"), ("lastTransitionTime", 4, "time"),
                                ("reason", 5, "string"), ("message", 6, "string")],
    "core.ConfigMap": [("metadata", 1, _META), ("data", 2, "{string}"), ("binaryData", 3, "{bytes}"),
                       ("immutable", 4, "bool")],
    "core.ServiceAccount": [("metadata", 1, _META), ("secrets", 2, "[core.ObjectReference]"),
                            ("imagePullSecrets", 3, "[core.LocalObjectReference]"),
                            ("automountServiceAccountToken", 4, "bool")],
    "core.ObjectReference": [("kind", 1, "string"), ("namespace", 2, "string"), ("name", 3, "string"),
                             ("uid", 4, "string"), ("apiVersion", 5, "string"), ("resourceVersion", 6, "string"),
                             ("fieldPath", 7, "string")],
    "core.LocalObjectReference": [("name", 1, "string")],
    "core.Event": [
        ("metadata", 1, _META), ("involvedObject", 2, "core.ObjectReference"), ("reason", 3, "string"),
        ("message", 4, "string"), ("source", 5, "core.EventSource"), ("firstTimestamp", 6, "time"),
        ("lastTimestamp", 7, "time"), ("count", 8, "int32"), ("type", 9, "string"),
        ("eventTime", 10, "microtime"), ("series", 11, "core.EventSeries"), ("action", 12, "string"),
        ("related", 13, "core.ObjectReference"), ("reportingComponent", 14, "string"),
        ("reportingInstance", 15, "string"),
    ],
    "core.EventSource": [("component", 1, "string"), ("host", 2, "string")],
    "core.EventSeries": [("count", 1, "int32"), ("lastObservedTime", 2, "microtime")],
    # --- coordination.k8s.io/v1
    "coordination.Lease": [("metadata", 1, _META), ("spec", 2, "coordination.LeaseSpec")],
    "coordination.LeaseSpec": [("holderIdentity", 1, "string"), ("leaseDurationSeconds", 2, "int32"),
                               ("acquireTime", 3, "microtime"), ("renewTime", 4, "microtime"),
                               ("leaseTransitions", 5, "int32"), ("strategy", 6, "string"),
                               ("preferredHolder", 7, "string")],
    # --- scheduling.k8s.io/v1
    "scheduling.PriorityClass": [("metadata", 1, _META), ("value", 2, "int32"), ("globalDefault", 3, "bool"),
                                 ("description", 4, "string"), ("preemptionPolicy", 5, "string")],
    # --- rbac.authorization.k8s.io/v1
    "rbac.Role": [("metadata", 1, _META), ("rules", 2, "[rbac.PolicyRule]")],
    "rbac.ClusterRole": [("metadata", 1, _META), ("rules", 2, "[rbac.PolicyRule]"),
                         ("aggregationRule", 3, "rbac.AggregationRule")],
    "rbac.AggregationRule": [("clusterRoleSelectors", 1, "[meta.LabelSelector]")],
    "rbac.PolicyRule": [("verbs", 1, "[string]"), ("apiGroups", 2, "[string]"), ("resources", 3, "[string]"),
                        ("resourceNames", 4, "[string]"), ("nonResourceURLs", 5, "[string]")],
    "rbac.RoleBinding": [("metadata", 1, _META), ("subjects", 2, "[rbac.Subject]"), ("roleRef", 3, "rbac.RoleRef")],
    "rbac.ClusterRoleBinding": [("metadata", 1, _META), ("subjects", 2, "[rbac.Subject]"),
                                ("roleRef", 3, "rbac.RoleRef")],
    "rbac.Subject": [("kind", 1, "string"), ("apiGroup", 2, "string"), ("name", 3, "string"),
                     ("namespace", 4, "string")],
    "rbac.RoleRef": [("apiGroup", 1, "string"), ("kind", 2, "string"), ("name", 3, "string")],
    # --- authentication.k8s.io/v1
    "authn.TokenRequest": [("metadata", 1, _META), ("spec", 2, "authn.TokenRequestSpec"),
                           ("status", 3, "authn.TokenRequestStatus")],
    "authn.TokenRequestSpec": [("audiences", 1, "[string]"), ("boundObjectRef", 3, "authn.BoundObjectReference"),
                               ("expirationSeconds", 4, "int64")],
    "authn.BoundObjectReference": [("kind", 1, "string"), ("apiVersion", 2, "string"), ("name", 3, "string"),
                                   ("uid", 4, "string")],
    "authn.TokenRequestStatus": [("token", 1, "string"), ("expirationTimestamp", 2, "time")],
    "authn.SelfSubjectReview": [("metadata", 1, _META), ("status", 2, "authn.SelfSubjectReviewStatus")],
    "authn.SelfSubjectReviewStatus": [("userInfo", 1, "authn.UserInfo")],
    "authn.UserInfo": [("username", 1, "string"), ("uid", 2, "string"), ("groups", 3, "[string]"),
                       ("extra", 4, "{extravalue}")],
    # --- authorization.k8s.io/v1
    "authz.SelfSubjectAccessReview": [("metadata", 1, _META), ("spec", 2, "authz.SelfSubjectAccessReviewSpec"),
                                      ("status", 3, "authz.SubjectAccessReviewStatus")],
    "authz.SelfSubjectAccessReviewSpec": [("resourceAttributes", 1, "authz.ResourceAttributes"),
                                          ("nonResourceAttributes", 2, "authz.NonResourceAttributes")],
    "authz.SubjectAccessReview": [("metadata", 1, _META), ("spec", 2, "authz.SubjectAccessReviewSpec"),
                                  ("status", 3, "authz.SubjectAccessReviewStatus")],
    "authz.SubjectAccessReviewSpec": [("resourceAttributes", 1, "authz.ResourceAttributes"),
                                      ("nonResourceAttributes", 2, "authz.NonResourceAttributes"),
                                      ("user", 3, "string"), ("groups", 4, "[string]"),
                                      ("extra", 5, "{extravalue}"), ("uid", 6, "string")],
    "authz.ResourceAttributes": [("namespace", 1, "string"), ("verb", 2, "string"), ("group", 3, "string"),
                                 ("version", 4, "string"), ("resource", 5, "string"), ("subresource", 6, "string"),
                                 ("name", 7, "string"), ("fieldSelector", 8, "authz.FieldSelectorAttributes"),
                                 ("labelSelector", 9, "authz.LabelSelectorAttributes")],
    "authz.FieldSelectorAttributes": [("rawSelector", 1, "string"),
                                      ("requirements", 2, "[authz.FieldSelectorRequirement]")],
    "authz.FieldSelectorRequirement": [("key", 1, "string"), ("operator", 2, "string"), ("values", 3, "[string]")],
    "authz.LabelSelectorAttributes": [("rawSelector", 1, "string"),
                                      ("requirements", 2, "[meta.LabelSelectorRequirement]")],
    "authz.NonResourceAttributes": [("path", 1, "string"), ("verb", 2, "string")],
    "authz.SubjectAccessReviewStatus": [("allowed", 1, "bool"), ("denied", 4, "bool"), ("reason", 2, "string"),
                                        ("evaluationError", 3, "string")],
    "authz.SelfSubjectRulesReview": [("metadata", 1, _META), ("spec", 2, "authz.SelfSubjectRulesReviewSpec"),
                                     ("status", 3, "authz.SubjectRulesReviewStatus")],
    "authz.SelfSubjectRulesReviewSpec": [("namespace", 1, "string")],
    "authz.SubjectRulesReviewStatus": [("resourceRules", 1, "[authz.ResourceRule]"),
                                       ("nonResourceRules", 2, "[authz.NonResourceRule]"),
                                       ("incomplete", 3, "bool"), ("evaluationError", 4, "string")],
    "authz.ResourceRule": [("verbs", 1, "[string]"), ("apiGroups", 2, "[string]"), ("resources", 3, "[string]"),
                           ("resourceNames", 4, "[string]")],
    "authz.NonResourceRule": [("verbs", 1, "[string]"), ("nonResourceURLs", 2, "[string]")],
}

#: (apiVersion, kind) of every top-level object -> its message; each also gets a ``<Kind>List``
#: message (ListMeta = 1, items = 2), as the Kubernetes API defines every list.
KINDS: dict[tuple[str, str], str] = {
    ("v1", "Status"): "meta.Status",
    ("v1", "DeleteOptions"): "meta.DeleteOptions",
    ("meta.k8s.io/v1", "DeleteOptions"): "meta.DeleteOptions",
    ("v1", "WatchEvent"): "meta.WatchEvent",
    ("v1", "Namespace"): "core.Namespace",
    ("v1", "ConfigMap"): "core.ConfigMap",
    ("v1", "ServiceAccount"): "core.ServiceAccount",
    ("v1", "Event"): "core.Event",
    ("v1", "Pod"): "core.Pod",  # messages in .schema_workloads
    ("v1", "Node"): "core.Node",
    ("coordination.k8s.io/v1", "Lease"): "coordination.Lease",
    ("scheduling.k8s.io/v1", "PriorityClass"): "scheduling.PriorityClass",
    ("rbac.authorization.k8s.io/v1", "Role"): "rbac.Role",
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): "rbac.ClusterRole",
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): "rbac.RoleBinding",
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): "rbac.ClusterRoleBinding",
    ("authentication.k8s.io/v1", "TokenRequest"): "authn.TokenRequest",
    ("authentication.k8s.io/v1", "SelfSubjectReview"): "authn.SelfSubjectReview",
    ("authorization.k8s.io/v1", "SelfSubjectAccessReview"): "authz.SelfSubjectAccessReview",
    ("authorization.k8s.io/v1", "SubjectAccessReview"): "authz.SubjectAccessReview",
    ("authorization.k8s.io/v1", "SelfSubjectRulesReview"): "authz.SelfSubjectRulesReview",
}

#: kinds that have no list form
UNLISTED = {"Status", "DeleteOptions", "WatchEvent", "TokenRequest", "SelfSubjectReview",
            "SelfSubjectAccessReview", "SubjectAccessReview", "SelfSubjectRulesReview"}
