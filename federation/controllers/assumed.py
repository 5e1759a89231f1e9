"""Shares placed but not yet confirmed by their cluster, and failed reservations' estimate caps.

Between a placement and the next capacity report of a cluster, the shares just placed there
are invisible in its ``status``. :class:`AssumedShares` remembers them per job and hands the
unconfirmed ones to the core as ``AssumedWorkload`` (deducted before estimating), so a burst
of jobs cannot overcommit a cluster. A share counts as confirmed once its Work reports, for
that generation, a gang phase in :data:`~federation.controllers.common.CONFIRMED_PHASES` or a
running/finished job in its manifest status. Shares are merged per cluster and pod shape, so
the core's cost does not grow with the number of jobs in flight.

:func:`reserve_caps` turns the binding's ``caldera.io/reserve-caps`` (written when a two-phase
start was cancelled) into workloads occupying the failed clusters, for that job only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from federation.controllers import common as c
from federation.placement.adapters import assumed_share, job_demand
from federation.placement.request import AssumedWorkload

Obj = Mapping[str, Any]
Key = tuple[str, str]
#: (namespace, name) of a Work -> the Work, or None
WorkLookup = Callable[[str, str], Obj | None]


def confirmed(work: Obj | None, generation: int) -> bool:
    """Whether the cluster already accounts for this share (so it must not be deducted again)."""
    if work is None:
        return False
    status = work.get("status") or {}
    gang = status.get("gang") or {}
    if int(gang.get("generation") or -1) == generation and gang.get("phase") in c.CONFIRMED_PHASES:
        return True
    placed = int(((work.get("spec") or {}).get("placement") or {}).get("generation") or -1)
    for manifest in status.get("manifestStatuses") or []:
        phase = (((manifest.get("status") or {}).get("state")) or {}).get("phase")
        if phase in c.CONFIRMED_JOB_PHASES and placed == generation:
            return True
    return False


class AssumedShares:
    def __init__(self, works: WorkLookup) -> None:
        self._works = works
        #: job uid -> (generation, (namespace, name), cluster -> share)
        self._jobs: dict[str, tuple[int, Key, dict[str, AssumedWorkload]]] = {}

    def remember(self, job: Obj, generation: int, placement: Mapping[str, Any] | None) -> None:
        """Record the job's shares of ``generation`` (``caldera.io/placement``'s JSON)."""
        meta = job.get("metadata") or {}
        uid = meta.get("uid", "")
        held = self._jobs.get(uid)
        if held is not None and held[0] == generation:
            return
        shares: dict[str, AssumedWorkload] = {}
        if placement:
            demand = job_demand(job)
            for cluster, entry in (placement.get("clusters") or {}).items():
                per_task = {t: int(v.get("replicas") or 0) for t, v in (entry.get("tasks") or {}).items()}
                shares[cluster] = assumed_share(cluster, demand, per_task)
        self._jobs[uid] = (generation, (meta.get("namespace", ""), meta.get("name", "")), shares)

    def forget(self, uid: str) -> None:
        self._jobs.pop(uid, None)

    def forget_job(self, key: Key, uid: str | None = None) -> None:
        """Drop the entries of job ``key`` (only the one with ``uid`` when given)."""
        for known, entry in list(self._jobs.items()):
            if entry[1] == key and (uid is None or known == uid):
                del self._jobs[known]

    def others(self, exclude_uid: str) -> tuple[AssumedWorkload, ...]:
        """Unconfirmed shares of every job but ``exclude_uid``, merged per cluster and pod shape."""
        merged: dict[str, dict[tuple[Any, Any], int]] = {}
        for uid, (generation, (ns, name), shares) in self._jobs.items():
            if uid == exclude_uid:
                continue
            for cluster, work in shares.items():
                if confirmed(self._works(c.execution_ns(cluster), c.work_name(ns, name)), generation):
                    continue
                slot = merged.setdefault(cluster, {})
                selectors = work.node_selectors or tuple(() for _ in work.components)
                for (request, replicas), selector in zip(work.components, selectors, strict=False):
                    slot[(request, selector)] = slot.get((request, selector), 0) + replicas
        return tuple(AssumedWorkload(cluster, tuple((req, n) for (req, _), n in shapes.items()),
                                     tuple(sel for (_, sel) in shapes))
                     for cluster, shapes in sorted(merged.items()))

    def __len__(self) -> int:
        return len(self._jobs)


def reserve_caps(job: Obj, rb: Obj | None, now: float) -> tuple[AssumedWorkload, ...]:
    """The failed reservations' penalty: pods of this job occupying each failed cluster until ``until``."""
    caps = c.json_annotation(rb, c.RESERVE_CAPS) or {}
    if not isinstance(caps, dict) or not caps:
        return ()
    demand = job_demand(job)
    out = []
    for cluster, cap in sorted(caps.items()):
        if not isinstance(cap, dict) or float(cap.get("until") or 0) < now:
            continue
        per_task = {str(t): int(n) for t, n in (cap.get("tasks") or {}).items()}
        if any(per_task.values()):
            out.append(assumed_share(cluster, demand, per_task))
    return tuple(out)
