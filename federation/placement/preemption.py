"""Preemption-aware placement: when a job fits nowhere on free capacity, count on preemption.

A member's agent reports ``status.preemptibleShapes`` (docs/protocol.md): per threshold
``belowPriority``, the node shapes were every preemptable pod of lower priority evicted. A job
whose PriorityClass lets it preempt (``preemptionPolicy`` not ``Never``) and that is
Unschedulable on free capacity is placed again on a *preemption view* of the clusters: each
cluster's node shapes replaced by its entry with the largest ``belowPriority <= priority``
(victims must have strictly lower priority, as in Kubernetes and Volcano); clusters without
such an entry keep their free shapes. The member's scheduler then does the preempting; the
federation only stops hiding the job from it. Views are cached per snapshot and thresholds,
so the tables and estimates built on them are reused from job to job.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable

from federation.placement.decision import PlacementDecision
from federation.placement.request import ClusterState, PlacementRequest
from policies.lru import LRU

View = tuple[tuple[ClusterState, ...], dict[str, int]]


def best_threshold(cluster: ClusterState, priority: int) -> int | None:
    """The largest ``belowPriority <= priority`` the cluster reports (None: none)."""
    usable = [t for t, _ in cluster.preemptible if t <= priority]
    return max(usable) if usable else None


class PreemptionViews:
    """Preemption views of cluster snapshots, by snapshot identity and chosen thresholds."""

    def __init__(self, size: int = 16) -> None:
        self._views: LRU[tuple[int, tuple[int | None, ...]], tuple[tuple[ClusterState, ...], View]] = LRU(size)

    def view(self, clusters: tuple[ClusterState, ...], priority: int) -> View | None:
        chosen = tuple(best_threshold(c, priority) for c in clusters)
        if all(t is None for t in chosen):
            return None
        key = (id(clusters), chosen)
        hit = self._views.get(key)
        if hit is not None and hit[0] is clusters:
            return hit[1]
        states, used = [], {}
        for cluster, threshold in zip(clusters, chosen, strict=True):
            if threshold is None:
                states.append(cluster)
                continue
            shapes = dict(cluster.preemptible)[threshold]
            states.append(replace(cluster, node_shapes=shapes))
            used[cluster.name] = threshold
        view = (tuple(states), used)
        self._views.put(key, (clusters, view))
        return view


def place_with_preemption(request: PlacementRequest, decision: PlacementDecision, views: PreemptionViews,
                          place: Callable[[PlacementRequest], PlacementDecision]) -> PlacementDecision:
    """``decision`` (made on free capacity) if it placed the job or the job cannot preempt;
    otherwise the placement on the preemption view, its reason saying what it counts on."""
    job = request.job
    if decision.ok or not job.preempts or job.priority is None:
        return decision
    view = views.view(request.clusters, job.priority)
    if view is None:
        return decision
    clusters, thresholds = view
    retry = place(replace(request, clusters=clusters))
    if not retry.ok:
        decision.reason += (f" (counting on preemption of pods below priority {job.priority} does not help "
                            f"either: {retry.reason})")
        return decision
    retry.preemption = {n: t for n, t in sorted(thresholds.items()) if n in retry.shares}
    where = ", ".join(f"{n} (evicting pods of priority < {t})" for n, t in retry.preemption.items())
    retry.reason = (f"placed counting on preemption: the job (priority {job.priority}) fits on no cluster's "
                    f"free capacity ({decision.reason}); the member scheduler must preempt on {where or 'none'}; "
                    + retry.reason)
    return retry
