"""Gang terms: turn per-cluster replica totals into per-task sub-jobs, and check they fit.

* **Per-task split.** Clusters are filled in order of share (largest first, then name), task by
  task in the job's order, each cluster taking a contiguous range of the job's pods. A task
  with one replica is therefore never split, and the master of a ``[master, workers]`` job
  lands with the largest share. Replicas a cluster held before are given back to it first.
* **Minimums.** Each task's ``minAvailable`` is divided over the clusters by Webster with the
  task's per-cluster replicas as votes (so no share's minimum exceeds its replicas); the rest
  of the job's ``minAvailable`` goes the same way over each share's slack. The shares'
  minimums add up to the job's.
* **Offsets.** Per task, a cluster's offset is the number of replicas of that task placed in
  clusters before it in fill order: ``VC_TASK_INDEX = offset + i`` is unique across clusters.
  After a re-placement a surviving share keeps its pods' indices (:mod:`.indices`).
* **Verify.** Each share must fit as one whole component set on its cluster (first-fit on
  the node shapes, after assumed placements), not just by summed totals.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from federation.placement.decision import ClusterShare, TaskShare
from federation.placement.estimate import Component
from federation.placement.indices import Ranges, to_ranges
from federation.placement.indices import assign as assign_indices
from federation.placement.request import AssumedWorkload, JobDemand
from federation.placement.table import ClusterTable
from federation.placement.webster import allocate_by_weight

TaskSplit = dict[str, dict[str, int]]  # cluster -> task -> replicas


def fill_order(totals: Mapping[str, int]) -> list[str]:
    return sorted((c for c, n in totals.items() if n > 0), key=lambda c: (-totals[c], c))


def split_tasks(job: JobDemand, totals: Mapping[str, int],
                previous: Mapping[str, Mapping[str, int]] | None = None) -> TaskSplit:
    order = fill_order(totals)
    quota = {c: totals[c] for c in order}
    split: TaskSplit = {c: {} for c in order}
    for task in job.tasks:
        left = task.replicas
        for c in order if previous else ():
            give = min(left, quota[c], (previous or {}).get(c, {}).get(task.name, 0))
            if give:
                split[c][task.name] = give
                quota[c] -= give
                left -= give
        for c in order:
            give = min(left, quota[c])
            if give:
                split[c][task.name] = split[c].get(task.name, 0) + give
                quota[c] -= give
                left -= give
    return split


def shares_from_split(job: JobDemand, split: TaskSplit, duplicated: bool = False,
                      previous: Mapping[str, Mapping[str, Sequence[int]]] | None = None) -> dict[str, ClusterShare]:
    """Per-cluster sub-jobs with minimums and global indices (kept from ``previous`` where
    they still hold: cluster -> task -> the indices its running pods have)."""
    clusters = [c for c in fill_order({c: sum(t.values()) for c, t in split.items()})]
    if duplicated:
        return {
            c: ClusterShare(c, job.replicas, job.min_available,
                            {t.name: TaskShare(t.replicas, t.min_available, 0) for t in job.tasks})
            for c in clusters
        }
    task_min: dict[str, dict[str, int]] = {}
    for task in job.tasks:
        votes = {c: split[c].get(task.name, 0) for c in clusters if split[c].get(task.name, 0)}
        task_min[task.name] = allocate_by_weight(min(task.min_available, task.replicas), votes, job.uid)
    base = {c: sum(task_min[t.name].get(c, 0) for t in job.tasks) for c in clusters}
    extra = job.min_available - sum(base.values())
    if extra >= 0:
        slack = {c: sum(split[c].values()) - base[c] for c in clusters}
        more = allocate_by_weight(extra, {c: s for c, s in slack.items() if s > 0}, job.uid)
        job_min = {c: base[c] + more.get(c, 0) for c in clusters}
    else:  # the job asks for fewer pods than its tasks' minimums: shrink in proportion
        job_min = {c: allocate_by_weight(job.min_available, base, job.uid).get(c, 0) for c in clusters}
    ranges: dict[str, dict[str, Ranges]] = {c: {} for c in clusters}
    for task in job.tasks:
        counts = {c: split[c].get(task.name, 0) for c in clusters}
        held = {c: (previous or {}).get(c, {}).get(task.name, ()) for c in clusters}
        for c, indices in assign_indices(clusters, counts, task.replicas, held).items():
            if indices:
                ranges[c][task.name] = to_ranges(indices)
    return {
        c: ClusterShare(
            c,
            sum(split[c].values()),
            job_min[c],
            {
                t.name: _task_share(split[c][t.name], task_min[t.name].get(c, 0), ranges[c][t.name])
                for t in job.tasks
                if split[c].get(t.name, 0)
            },
        )
        for c in clusters
    }


def _task_share(replicas: int, min_available: int, ranges: Ranges) -> TaskShare:
    return TaskShare(replicas, min_available, ranges[0][0], ranges if len(ranges) > 1 else ())


def components(job: JobDemand, per_task: Mapping[str, int]) -> list[Component]:
    return [
        Component(t.request, t.node_selector, per_task[t.name])
        for t in job.tasks
        if per_task.get(t.name, 0) > 0
    ]


def verify_share(table: ClusterTable, job: JobDemand, cluster: str, per_task: Mapping[str, int],
                 assumed: Sequence[AssumedWorkload]) -> tuple[bool, int, str]:
    """(fits, pods placed by first-fit, explanation) for one share on one cluster.

    Identical pods first-fit exactly as many as the per-node fits add up to, so a share of
    one task shape is checked against the (cached) single-shape estimate. Several shapes
    fit for sure when as many pods of their per-resource maximum fit; otherwise the
    share is simulated.
    """
    comps = components(job, per_task)
    total = sum(c.replicas for c in comps)
    busy = any(a.cluster == cluster for a in assumed)
    if len(comps) == 1 or len({c.node_selector for c in comps}) == 1:
        shape = comps[0].request if len(comps) == 1 else _elementwise_max([c.request for c in comps])
        selector = comps[0].node_selector
        room = (table.estimate_on(cluster, shape, selector, assumed) if busy
                else int(table.task_estimates(shape, selector)[table.position[cluster]]))
        if room >= total:
            return True, total, ""
        if len(comps) == 1 and table.by_name[cluster].node_shapes is not None:
            what = f"{next(k for k, v in per_task.items() if v)}×{total}"
            return False, max(room, 0), f"only {max(room, 0)} of {total} pods ({what}) first-fit on the node shapes"
    sets, placed, kind = table.sets_on(cluster, comps, assumed, upper=1)
    if sets >= 1:
        return True, total, ""
    if kind == "none":
        return False, 0, "no nodeShapes and no resourceSummary reported"
    if kind == "general":
        return False, 0, f"share of {total} pods exceeds free resources in resourceSummary"
    what = ", ".join(f"{t}×{n}" for t, n in per_task.items() if n)
    return False, placed, f"only {placed} of {total} pods ({what}) first-fit on the node shapes"


def _elementwise_max(requests: list[tuple[tuple[str, float], ...]]) -> tuple[tuple[str, float], ...]:
    out: dict[str, float] = {}
    for request in requests:
        for name, amount in request:
            out[name] = max(out.get(name, 0.0), amount)
    return tuple(sorted(out.items()))
