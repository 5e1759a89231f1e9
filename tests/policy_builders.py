"""PropagationPolicies the tests build: the same manifest written out in several test files."""

from __future__ import annotations

from typing import Any, Sequence

JOB_API = "batch.volcano.sh/v1alpha1"


def one_to_one_policy(clusters: Sequence[str], *, namespace: str | None = None,
                      affinity: bool = True) -> dict[str, Any]:
    """``one-to-one``: every Volcano Job divided over ``clusters`` by equal static weights (1 each),
    with ``clusterAffinity`` naming them unless ``affinity`` is False."""
    metadata: dict[str, Any] = {"name": "one-to-one"}
    if namespace is not None:
        metadata["namespace"] = namespace
    placement: dict[str, Any] = {}
    if affinity:
        placement["clusterAffinity"] = {"clusterNames": list(clusters)}
    placement["replicaScheduling"] = {
        "replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
        "weightPreference": {"staticWeightList": [{"targetCluster": {"clusterNames": [name]}, "weight": 1}
                                                  for name in clusters]}}
    return {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy", "metadata": metadata,
            "spec": {"resourceSelectors": [{"apiVersion": JOB_API, "kind": "Job"}], "placement": placement}}
