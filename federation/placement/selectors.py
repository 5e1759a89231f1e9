"""Cluster matching: label selectors, Karmada field selectors, ClusterAffinity, tolerations."""

from __future__ import annotations

from federation.placement.request import (
    ClusterAffinity,
    ClusterState,
    Requirement,
)

FIELD_KEYS = ("provider", "region", "zone")


def _field_matches(req: Requirement, cluster: ClusterState) -> bool:
    if req.key == "zone":
        # Karmada matches zones as a set: In needs every zone of the cluster among the
        # values (and at least one zone); NotIn needs none of them there.
        zones = cluster.zones
        if req.operator == "In":
            return bool(zones) and all(z in req.values for z in zones)
        return not any(z in req.values for z in zones)
    value = cluster.provider if req.key == "provider" else cluster.region
    if req.operator == "In":
        return value in req.values
    return value not in req.values


def affinity_mismatch(affinity: ClusterAffinity, cluster: ClusterState) -> str:
    """Why ``cluster`` does not match ``affinity`` ("" when it matches)."""
    if cluster.name in affinity.exclude:
        return "listed in clusterAffinity.exclude"
    if affinity.cluster_names and cluster.name not in affinity.cluster_names:
        return "not in clusterAffinity.clusterNames"
    if affinity.label_selector is not None and not affinity.label_selector.matches(dict(cluster.labels)):
        return "labels do not match clusterAffinity.labelSelector"
    for req in affinity.field_expressions:
        if not _field_matches(req, cluster):
            have = ",".join(cluster.zones) if req.key == "zone" else getattr(cluster, req.key)
            return f"{req.key} {have or '(unset)'!r} fails fieldSelector {req.operator} {list(req.values)}"
    return ""


def affinity_matches(affinity: ClusterAffinity, cluster: ClusterState) -> bool:
    return not affinity_mismatch(affinity, cluster)
