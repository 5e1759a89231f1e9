"""Cluster selection by spreadConstraints, as Karmada's scheduler actually does it.

Only two selections exist upstream: by ``region`` (when a region constraint is present) and
otherwise by ``cluster``. ``zone`` and ``provider`` constraints only require the field to be
set (the filter step checks that); a ``spreadByLabel`` constraint without a cluster or region
constraint fails with Karmada's "just support cluster and region" error. ``maxGroups`` has no
default upstream, so a cluster constraint without it keeps no cluster; we fail with a message
saying so instead of placing nothing silently.
"""

from __future__ import annotations

from typing import Mapping

from federation.placement.request import ClusterState, SpreadConstraint


class SelectionError(Exception):
    pass


def _by(spread: tuple[SpreadConstraint, ...], field: str) -> SpreadConstraint | None:
    return next((c for c in spread if c.spread_by_field == field), None)


def _fill_capacity(kept: list[str], ordered: list[str], available: Mapping[str, int], need: int) -> list[str]:
    """Karmada's swap: from the last kept cluster back, replace it with the richest unselected one."""
    kept = list(kept)
    total = sum(available[n] for n in kept)
    for i in range(len(kept) - 1, -1, -1):
        if total >= need:
            break
        rest = [n for n in ordered if n not in kept]
        if not rest:
            break
        best = max(rest, key=lambda n: available[n])  # max keeps the first of equals
        if available[best] > available[kept[i]]:
            total += available[best] - available[kept[i]]
            kept[i] = best
    if total < need:
        raise SelectionError(f"selected clusters have {total} available replicas, {need} needed")
    return kept


def _zero_max(constraint: SpreadConstraint, field: str) -> None:
    if constraint.max_groups <= 0:
        raise SelectionError(
            f"spreadConstraint {field} has maxGroups 0 and so selects no cluster (Karmada keeps "
            f"min(candidates, maxGroups)); set maxGroups"
        )


def select_clusters(ordered: list[str], clusters: Mapping[str, ClusterState],
                    available: Mapping[str, int], spread: tuple[SpreadConstraint, ...],
                    need: int | None) -> list[str]:
    """The selected candidates in their sort order. ``need`` None skips the capacity check."""
    if not spread:
        return ordered
    by_cluster, by_region = _by(spread, "cluster"), _by(spread, "region")
    if by_region is not None:
        return _select_by_region(ordered, clusters, available, by_region, by_cluster, need)
    if by_cluster is None:
        raise SelectionError("just support cluster and region spread constraint")
    if len(ordered) < by_cluster.min_groups:
        raise SelectionError(
            f"{len(ordered)} feasible clusters, fewer than spreadConstraint cluster minGroups {by_cluster.min_groups}"
        )
    _zero_max(by_cluster, "cluster")
    kept = ordered[: by_cluster.max_groups]
    return kept if need is None else _fill_capacity(kept, ordered, available, need)


def _select_by_region(ordered: list[str], clusters: Mapping[str, ClusterState], available: Mapping[str, int],
                      by_region: SpreadConstraint, by_cluster: SpreadConstraint | None,
                      need: int | None) -> list[str]:
    regions: dict[str, list[str]] = {}
    for name in ordered:  # region order: that of each region's best cluster
        regions.setdefault(clusters[name].region, []).append(name)
    if len(regions) < by_region.min_groups:
        raise SelectionError(f"{len(regions)} regions, fewer than spreadConstraint region minGroups {by_region.min_groups}")
    _zero_max(by_region, "region")
    chosen = list(regions)[: by_region.max_groups]
    kept = [regions[r][0] for r in chosen]
    limit = len(ordered)
    if by_cluster is not None:
        _zero_max(by_cluster, "cluster")
        limit = by_cluster.max_groups
    for name in ordered:
        if len(kept) >= limit:
            break
        if name not in kept and clusters[name].region in chosen:
            kept.append(name)
    if by_cluster is not None and len(kept) < by_cluster.min_groups:
        raise SelectionError(f"{len(kept)} clusters in the chosen regions, fewer than cluster minGroups {by_cluster.min_groups}")
    kept.sort(key=ordered.index)
    if need is not None and sum(available[n] for n in kept) < need:
        raise SelectionError(f"selected clusters have {sum(available[n] for n in kept)} available replicas, {need} needed")
    return kept
