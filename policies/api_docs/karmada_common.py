"""Descriptions of the types Karmada's kinds share (see :mod:`policies.api_docs`)."""

from __future__ import annotations

TYPES: dict[str, str] = {
    "Taint": "A taint on a member cluster: workloads that do not tolerate it are kept off (NoSchedule) or "
             "moved away (NoExecute).",
    "Toleration": "Lets a workload be placed on (or stay on) clusters with a matching taint.",
    "ObjectReference": "Identifies the resource template a binding is about.",
    "LocalSecretReference": "A Secret in the Karmada control plane, by namespace and name.",
}

FIELDS: dict[str, dict[str, str]] = {
    "Taint": {
        "key": "The taint's key.",
        "value": "The taint's value.",
        "effect": "NoSchedule (no new placements), PreferNoSchedule or NoExecute (existing placements are "
                  "evicted).",
        "timeAdded": "When a NoExecute taint was added (RFC 3339).",
    },
    "Toleration": {
        "key": "The taint key this toleration matches; empty with operator Exists matches every taint.",
        "operator": "Exists (any value) or Equal (the value must match). Defaults to Equal.",
        "value": "The taint value to match with operator Equal.",
        "effect": "The taint effect to match; empty matches every effect.",
        "tolerationSeconds": "For NoExecute taints: how long the placement stays after the taint appears. "
                             "Unset: forever.",
    },
    "ObjectReference": {
        "apiVersion": "API version of the referenced resource.",
        "kind": "Kind of the referenced resource.",
        "namespace": "Namespace of the referenced resource (empty for cluster-scoped ones).",
        "name": "Name of the referenced resource.",
        "uid": "UID of the referenced resource.",
        "resourceVersion": "The resourceVersion of the referenced resource the binding was made from.",
    },
    "LocalSecretReference": {"namespace": "Namespace of the Secret.", "name": "Name of the Secret."},
}
