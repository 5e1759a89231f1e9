"""Descriptions of the envelope types every kind shares (see :mod:`policies.api_docs`)."""

from __future__ import annotations

TYPES: dict[str, str] = {
    "ObjectMeta": "Metadata every persisted object has: identity, labels and annotations, ownership, and the "
                  "fields the server maintains.",
    "OwnerReference": "Names an object this one belongs to; deleting the owner deletes the dependents.",
    "LabelSelector": "Selects objects by labels: every matchLabels pair and every matchExpressions entry must "
                     "hold. Empty selects everything.",
    "LabelSelectorRequirement": "One label condition: key, operator and values.",
    "Condition": "One aspect of the object's state: its type, whether it holds (True, False, Unknown), why, and "
                 "since when.",
}

FIELDS: dict[str, dict[str, str]] = {
    "ObjectMeta": {
        "name": "Name, unique within the namespace (or the cluster for cluster-scoped kinds). Cannot change.",
        "generateName": "A prefix the server completes with random characters when name is empty.",
        "namespace": "The namespace the object lives in; empty for cluster-scoped kinds.",
        "uid": "Unique id the server assigns on creation. Read-only.",
        "resourceVersion": "Opaque version the server changes on every write; send it back for optimistic "
                           "concurrency and to resume watches. Read-only.",
        "generation": "Counts changes to the desired state (spec). Read-only.",
        "creationTimestamp": "When the object was created (RFC 3339). Read-only.",
        "deletionTimestamp": "When deletion was requested; set while finalizers still hold the object. "
                             "Read-only.",
        "deletionGracePeriodSeconds": "Seconds allowed for graceful termination once deletion was requested.",
        "labels": "Key/value pairs used to select and organise objects.",
        "annotations": "Key/value pairs for tools and controllers; not used for selection.",
        "finalizers": "Controllers that must finish clean-up before the object is removed.",
        "ownerReferences": "Objects this one depends on; garbage collection deletes it with them.",
        "managedFields": "Which manager owns which fields (server-side apply). Maintained by the server.",
        "selfLink": "Deprecated; not set.",
    },
    "OwnerReference": {
        "apiVersion": "API version of the owner.", "kind": "Kind of the owner.", "name": "Name of the owner.",
        "uid": "UID of the owner.", "controller": "true for the owner that manages this object.",
        "blockOwnerDeletion": "true: a foreground deletion of the owner waits for this object.",
    },
    "LabelSelector": {"matchLabels": "Labels that must have exactly these values.",
                      "matchExpressions": "Label conditions; all must hold."},
    "LabelSelectorRequirement": {"key": "The label key.", "operator": "In, NotIn, Exists or DoesNotExist.",
                                 "values": "Values for In and NotIn; empty for Exists and DoesNotExist."},
    "Condition": {
        "type": "The aspect this condition is about, in CamelCase (Ready, Scheduled, Applied...).",
        "status": "True, False or Unknown.",
        "reason": "A one-word CamelCase reason for the last transition.",
        "message": "A human-readable explanation of the last transition.",
        "lastTransitionTime": "When status last changed (RFC 3339).",
        "lastProbeTime": "When the condition was last checked.",
        "lastHeartbeatTime": "When the condition was last reported.",
        "lastUpdateTime": "When the condition was last updated.",
        "observedGeneration": "The metadata.generation the condition was computed from.",
        "transitionID": "Identifies the scheduling session that set the condition (Volcano PodGroups).",
    },
}
