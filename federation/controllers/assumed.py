"""Shares placed but not yet confirmed by their cluster, and failed reservations' estimate caps.

Between a placement and the next capacity report of a cluster, the shares just placed there
are invisible in its ``status``. :class:`AssumedShares` remembers them per job and hands the
unconfirmed ones to the core as ``AssumedWorkload`` (deducted before estimating), so a burst
of jobs cannot overcommit a cluster. A share counts as confirmed once its Work reports, for
that generation, a gang phase in :data:`~federation.controllers.common.CONFIRMED_PHASES` or a
running/finished job in its manifest status. Shares are merged per cluster and pod shape, so
the core's cost does not grow with the number of jobs in flight.

A share whose Work says its pods *hold* resources (gang ``Released``/``Running``, job
``Running``/``Completing``) stays deducted until its cluster's capacity report is newer than that
Work status (a larger resourceVersion), as kube-scheduler keeps an assumed pod until the informer
that feeds its capacity shows it. The agent writes the Work status and the Cluster status on two
loops (the Cluster one debounced), so the Work can say ``Running`` a status period before the
Cluster's ``nodeShapes`` count the pods; releasing the share on the Work alone let the next job be
placed on capacity already taken (a 12-pod whole-cluster job sent onto a cluster whose 4 nodes had
just been bound, where it then waited forever).

:func:`reserve_caps` turns the binding's ``caldera.io/reserve-caps`` (written when a two-phase
start was cancelled) into workloads occupying the failed clusters, for that job only;
:func:`excluded_clusters` names the clusters that failed too often in a row and are left out.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from federation.controllers import common as c
from federation.controllers.runner import resource_version
from federation.placement.adapters import assumed_share, job_demand
from federation.placement.request import AssumedWorkload
from policies.models.karmada_work import EXECUTION_NAMESPACE_PREFIX, status_is_current

Obj = Mapping[str, Any]
Key = tuple[str, str]
#: (one pod's request, its node selector)
Shape = tuple[Any, Any]
#: (namespace, name) of a Work -> the Work, or None
WorkLookup = Callable[[str, str], Obj | None]
#: cluster name -> the Cluster as the informer holds it, or None
ClusterLookup = Callable[[str], Obj | None]


#: confirming phases whose pods hold the share's resources: the cluster's report must show them
HELD_GANG_PHASES = ("Released", "Running")
HELD_JOB_PHASES = ("Running", "Completing")


def confirmation(work: Obj | None, generation: int) -> str | None:
    """How the Work confirms the share of ``generation``: ``"held"`` (its pods hold resources the
    cluster's capacity report must show), ``"settled"`` (it holds nothing, or has ended), None (not yet)."""
    if work is None:
        return None
    status = work.get("status") or {}
    gang = status.get("gang") or {}
    if int(gang.get("generation") or -1) == generation and gang.get("phase") in c.CONFIRMED_PHASES:
        return "held" if gang.get("phase") in HELD_GANG_PHASES else "settled"
    placed = int(((work.get("spec") or {}).get("placement") or {}).get("generation") or -1)
    if not status_is_current(work):  # the job phase below is an older generation's
        return None
    for manifest in status.get("manifestStatuses") or []:
        phase = (((manifest.get("status") or {}).get("state")) or {}).get("phase")
        if phase in c.CONFIRMED_JOB_PHASES and placed == generation:
            return "held" if phase in HELD_JOB_PHASES else "settled"
    return None


def confirmed(work: Obj | None, generation: int) -> bool:
    """Whether the Work confirms this share (see :func:`confirmation`)."""
    return confirmation(work, generation) is not None


class AssumedShares:
    """Unconfirmed shares per job, with running totals per cluster and pod shape.

    ``others`` is called once per placement, so it must not walk every job in flight: the
    totals are kept up to date as jobs are remembered or forgotten and as their Works report
    (:meth:`observe`, fed by the Work informer; :meth:`on_cluster_event`, fed by the Cluster
    informer). Confirmation is sticky for a generation: a new placement of the job is remembered
    afresh. Without ``clusters`` a share is released on its Work's confirmation alone.
    """

    def __init__(self, works: WorkLookup, clusters: ClusterLookup | None = None) -> None:
        self._works = works
        self._clusters = clusters
        #: cluster -> job uid -> resourceVersion of the Work status that confirmed the share as held:
        #: still deducted until the cluster reports capacity written after it
        self._awaiting: dict[str, dict[str, int]] = {}
        #: job uid -> (generation, (namespace, name), cluster -> share)
        self._jobs: dict[str, tuple[int, Key, dict[str, AssumedWorkload]]] = {}
        #: job uid -> clusters whose share is still deducted
        self._pending: dict[str, set[str]] = {}
        #: cluster -> (pod request, node selector) -> replicas of unconfirmed shares
        self._totals: dict[str, dict[Shape, int]] = {}

    def remember(self, job: Obj, generation: int, placement: Mapping[str, Any] | None) -> None:
        """Record the job's shares of ``generation`` (``caldera.io/placement``'s JSON)."""
        meta = job.get("metadata") or {}
        uid = meta.get("uid", "")
        held = self._jobs.get(uid)
        if held is not None and held[0] == generation:
            return
        self.forget(uid)
        key = (meta.get("namespace", ""), meta.get("name", ""))
        shares: dict[str, AssumedWorkload] = {}
        if placement:
            demand = job_demand(job)
            for cluster, entry in (placement.get("clusters") or {}).items():
                per_task = {t: int(v.get("replicas") or 0) for t, v in (entry.get("tasks") or {}).items()}
                shares[cluster] = assumed_share(cluster, demand, per_task)
        self._jobs[uid] = (generation, key, shares)
        pending = self._pending.setdefault(uid, set())
        for cluster, share in shares.items():
            pending.add(cluster)
            self._add(cluster, share, +1)
            self._confirm(uid, cluster, self._works(c.execution_ns(cluster), c.work_name(*key)), generation)

    def observe(self, work: Obj | None) -> None:
        """A Work changed: stop deducting its share once it confirms the current generation."""
        meta = (work or {}).get("metadata") or {}
        uid = (meta.get("labels") or {}).get(c.JOB_UID_LABEL, "")
        namespace = meta.get("namespace", "")
        entry = self._jobs.get(uid)
        if entry is None or not namespace.startswith(EXECUTION_NAMESPACE_PREFIX):
            return
        cluster = namespace[len(EXECUTION_NAMESPACE_PREFIX):]
        if cluster in self._pending.get(uid, set()):
            self._confirm(uid, cluster, work, entry[0])

    def on_work_event(self, _type: str, work: Obj, _old: Obj | None) -> None:
        self.observe(work)

    def on_cluster_event(self, kind: str, cluster: Obj, _old: Obj | None) -> int:
        """A Cluster changed: release the shares it now reports (a status newer than the Work's
        confirmation, or the cluster is gone). Returns how many were released."""
        name = (cluster.get("metadata") or {}).get("name", "")
        waiting = self._awaiting.get(name)
        if not waiting:
            return 0
        reported = resource_version(cluster)
        done = [uid for uid, confirmed_at in waiting.items() if kind == "DELETED" or reported > confirmed_at]
        for uid in done:
            self._release(uid, name)
        return len(done)

    def _confirm(self, uid: str, cluster: str, work: Obj | None, generation: int) -> None:
        """The share is confirmed by ``work``: released now, or once its cluster reports it."""
        how = confirmation(work, generation)
        if how is None:
            return
        confirmed_at = resource_version(work)
        if how == "settled" or self._clusters is None or \
                resource_version(self._clusters(cluster)) > confirmed_at:
            self._release(uid, cluster)
        else:
            self._awaiting.setdefault(cluster, {}).setdefault(uid, confirmed_at)

    def _release(self, uid: str, cluster: str) -> None:
        pending, entry = self._pending.get(uid, set()), self._jobs.get(uid)
        self._stop_waiting(uid, cluster)
        if cluster in pending and entry is not None:
            pending.discard(cluster)
            self._add(cluster, entry[2][cluster], -1)

    def _stop_waiting(self, uid: str, cluster: str) -> None:
        waiting = self._awaiting.get(cluster)
        if waiting is not None:
            waiting.pop(uid, None)
            if not waiting:
                del self._awaiting[cluster]

    def forget(self, uid: str) -> None:
        entry = self._jobs.pop(uid, None)
        for cluster in self._pending.pop(uid, set()):
            self._stop_waiting(uid, cluster)
            if entry is not None:
                self._add(cluster, entry[2][cluster], -1)

    def forget_job(self, key: Key, uid: str | None = None) -> None:
        """Drop the entries of job ``key`` (only the one with ``uid`` when given)."""
        for known, entry in list(self._jobs.items()):
            if entry[1] == key and (uid is None or known == uid):
                self.forget(known)

    def others(self, exclude_uid: str) -> tuple[AssumedWorkload, ...]:
        """Unconfirmed shares of every job but ``exclude_uid``, merged per cluster and pod shape."""
        own: dict[str, dict[Shape, int]] = {}
        entry = self._jobs.get(exclude_uid)
        for cluster in self._pending.get(exclude_uid, set()):
            if entry is not None:
                for shape, replicas in _shapes(entry[2][cluster]):
                    slot = own.setdefault(cluster, {})
                    slot[shape] = slot.get(shape, 0) + replicas
        out = []
        for cluster, totals in sorted(self._totals.items()):
            mine = own.get(cluster, {})
            # sorted, so the deduction order never depends on the order jobs arrived in
            shapes = sorted((shape, n - mine.get(shape, 0)) for shape, n in totals.items())
            shapes = [(shape, n) for shape, n in shapes if n > 0]
            if shapes:
                out.append(AssumedWorkload(cluster, tuple((req, n) for (req, _), n in shapes),
                                           tuple(sel for (_, sel), _ in shapes)))
        return tuple(out)

    def _add(self, cluster: str, share: AssumedWorkload, sign: int) -> None:
        slot = self._totals.setdefault(cluster, {})
        for shape, replicas in _shapes(share):
            left = slot.get(shape, 0) + sign * replicas
            if left > 0:
                slot[shape] = left
            else:
                slot.pop(shape, None)
        if not slot:
            del self._totals[cluster]

    def __len__(self) -> int:
        return len(self._jobs)


def _shapes(share: AssumedWorkload) -> list[tuple[Shape, int]]:
    selectors = share.node_selectors or tuple(() for _ in share.components)
    return [((request, selector), replicas)
            for (request, replicas), selector in zip(share.components, selectors, strict=False)]


def reserve_caps(job: Obj, rb: Obj | None, now: float) -> tuple[AssumedWorkload, ...]:
    """The failed reservations' penalty: pods of this job occupying each failed cluster until ``until``."""
    caps = c.json_annotation(rb, c.RESERVE_CAPS) or {}
    if not isinstance(caps, dict) or not caps:
        return ()
    demand = job_demand(job)
    out = []
    for cluster, cap in sorted(caps.items()):
        if not isinstance(cap, dict) or float(cap.get("until") or 0) < now or cap.get("excluded"):
            continue  # an excluded cluster is left out of the snapshot instead (excluded_clusters)
        per_task = {str(t): int(n) for t, n in (cap.get("tasks") or {}).items()}
        if any(per_task.values()):
            out.append(assumed_share(cluster, demand, per_task))
    return tuple(out)


def excluded_clusters(rb: Obj | None, now: float) -> dict[str, dict[str, Any]]:
    """Clusters that failed to reserve this job's share too often in a row, with their cap entry:
    placement leaves them out of this job's snapshot until the entry's ``until``."""
    caps = c.json_annotation(rb, c.RESERVE_CAPS) or {}
    if not isinstance(caps, dict):
        return {}
    return {cluster: cap for cluster, cap in sorted(caps.items())
            if isinstance(cap, dict) and cap.get("excluded") and float(cap.get("until") or 0) >= now}
