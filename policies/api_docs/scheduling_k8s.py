"""Descriptions for ``scheduling.k8s.io/v1`` PriorityClass (see :mod:`policies.api_docs`)."""

from __future__ import annotations

TYPES: dict[str, str] = {
    "PriorityClass": "Maps a priority class name to an integer priority. Pods and Volcano jobs naming the class "
                     "get its value: higher values are scheduled first and may preempt lower ones. "
                     "Cluster-scoped.",
}

FIELDS: dict[str, dict[str, str]] = {
    "PriorityClass": {
        "value": "The priority. User classes may use up to 1000000000; larger values are for system classes.",
        "globalDefault": "true: pods without a priorityClassName get this class. At most one class may be the "
                         "global default.",
        "description": "Free text saying when to use this class.",
        "preemptionPolicy": "PreemptLowerPriority (the default) lets pods of this class evict lower ones; Never "
                            "only queues them ahead.",
    },
}
