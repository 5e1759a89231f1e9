"""A federated Job's shares as its ResourceBinding plans them and its Works report them (pure).

:func:`planned_shares` reads the binding's placement (``caldera.io/placement``: cluster, replicas and
minAvailable per share, and the placement generation); :func:`share_views` pairs each planned share
with its cluster's Work, marking a Work stale when it was written or reported for an older placement
generation. :mod:`federation.controllers.status_aggregate` builds the Job's status from these views.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from policies.models.karmada_work import PLACEMENT_GENERATION, status_is_current

Obj = dict[str, Any]

PLACEMENT_ANNOTATION = "caldera.io/placement"
GENERATION_ANNOTATION = PLACEMENT_GENERATION
EXECUTION_PREFIX = "karmada-es-"
ENDED_ANNOTATION = "caldera.io/ended"
ENDED_PHASES = frozenset({"Aborted", "Terminated", "Completed"})


def whole_or(value: Any, default: int | None = None) -> int | None:
    """``value`` as an int, or ``default`` when it is none (a status field absent or malformed)."""
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


@dataclass(frozen=True)
class PlannedShare:
    """What the placement decided for one cluster."""

    cluster: str
    replicas: int | None
    min_available: int | None
    tasks: dict[str, int]


def planned_shares(binding: Obj | None) -> tuple[int | None, list[PlannedShare]]:
    """(placement generation, shares) from the binding's annotations, else ``spec.clusters``."""
    if binding is None:
        return None, []
    annotations = (binding.get("metadata") or {}).get("annotations") or {}
    generation = whole_or(annotations.get(GENERATION_ANNOTATION))
    shares: list[PlannedShare] = []
    try:
        placement = json.loads(annotations.get(PLACEMENT_ANNOTATION) or "null")
    except ValueError:
        placement = None
    clusters = placement.get("clusters") if isinstance(placement, dict) else None
    if isinstance(clusters, dict) and clusters:
        for name in sorted(clusters):
            entry = clusters[name] if isinstance(clusters[name], dict) else {}
            raw_tasks = entry.get("tasks")
            tasks: dict[str, Any] = raw_tasks if isinstance(raw_tasks, dict) else {}
            task_replicas = {t: whole_or((v or {}).get("replicas"), 0) or 0 for t, v in tasks.items()}
            mins = [whole_or((v or {}).get("minAvailable")) for v in tasks.values()]
            min_available = sum(m for m in mins if m is not None) if any(m is not None for m in mins) else None
            replicas = whole_or(entry.get("replicas"))
            shares.append(PlannedShare(name, replicas if replicas is not None else sum(task_replicas.values()),
                                       min_available, task_replicas))
        return generation, shares
    for target in (binding.get("spec") or {}).get("clusters") or []:
        if isinstance(target, dict) and target.get("name"):
            components = {c["name"]: whole_or(c.get("replicas"), 0) or 0
                          for c in target.get("components") or [] if isinstance(c, dict) and c.get("name")}
            shares.append(PlannedShare(target["name"], whole_or(target.get("replicas")), None, components))
    return generation, sorted(shares, key=lambda s: s.cluster)


def work_cluster(work: Obj) -> str:
    return str((work.get("metadata") or {}).get("namespace") or "").removeprefix(EXECUTION_PREFIX)


def work_generation(work: Obj) -> int | None:
    placement = (work.get("spec") or {}).get("placement") or {}
    generation = whole_or(placement.get("generation"))
    if generation is not None:
        return generation
    for manifest in ((work.get("spec") or {}).get("workload") or {}).get("manifests") or []:
        annotations = (manifest.get("metadata") or {}).get("annotations") or {}
        if GENERATION_ANNOTATION in annotations:
            return whole_or(annotations[GENERATION_ANNOTATION])
    return None


def share_job_status(work: Obj) -> Obj:
    """The share's Volcano Job status the agent reported (``manifestStatuses[0].status``)."""
    for item in (work.get("status") or {}).get("manifestStatuses") or []:
        status = item.get("status") if isinstance(item, dict) else None
        if isinstance(status, dict):
            return status
    return {}


def condition(obj: Obj | None, type_: str) -> Obj | None:
    for cond in ((obj or {}).get("status") or {}).get("conditions") or []:
        if isinstance(cond, dict) and cond.get("type") == type_:
            return cond
    return None


@dataclass(frozen=True)
class ShareView:
    """One cluster's share as the agent reports it (or as missing)."""

    plan: PlannedShare
    work: Obj | None
    stale: bool

    @property
    def job_status(self) -> Obj:
        return share_job_status(self.work) if self.work is not None and not self.stale else {}

    @property
    def phase(self) -> str:
        return str((self.job_status.get("state") or {}).get("phase") or "Pending")

    @property
    def gang(self) -> Obj:
        if self.work is None or self.stale:
            return {}
        gang = (self.work.get("status") or {}).get("gang") or {}
        generation = whole_or(gang.get("generation"))
        own = work_generation(self.work)
        return gang if generation is None or own is None or generation == own else {}

    @property
    def why(self) -> str:
        """A short explanation of where this share stands."""
        if self.work is None:
            return "not dispatched yet"
        if self.stale and not status_is_current(self.work):
            return (f"the agent has not reported on placement generation {work_generation(self.work)} yet "
                    f"(its status is of an older one)")
        if self.stale:
            return f"Work is from placement generation {work_generation(self.work)}, waiting for the new one"
        if ((self.work.get("spec") or {}).get("placement") or {}).get("cancelled"):
            return "reservation cancelled by the federation; the job is being placed again"
        applied = condition(self.work, "Applied")
        if applied is not None and applied.get("status") == "False":
            return f"not applied: {applied.get('message') or applied.get('reason') or 'unknown error'}"
        state = self.job_status.get("state") or {}
        gang = self.gang
        for text in (gang.get("reason"), state.get("message"), state.get("reason")):
            if text:
                return str(text)
        if gang.get("phase"):
            return f"gang {gang['phase']}"
        if not self.job_status:
            return "no status reported yet"
        running = whole_or(self.job_status.get("running"), 0)
        return f"{self.phase} ({running}/{self.plan.replicas if self.plan.replicas is not None else '?'} running)"


def share_views(binding: Obj | None, works: Iterable[Obj]) -> tuple[int | None, list[ShareView]]:
    generation, plans = planned_shares(binding)
    by_cluster = {work_cluster(w): w for w in works if not (w.get("metadata") or {}).get("deletionTimestamp")}
    views = []
    for plan in plans:
        work = by_cluster.get(plan.cluster)
        own = work_generation(work) if work is not None else None
        stale = work is not None and generation is not None and own is not None and own < generation
        stale = stale or (work is not None and not status_is_current(work))  # reported for an older generation
        views.append(ShareView(plan, work, stale))
    return generation, views


def ended_by_placement(binding: Obj | None) -> tuple[str, str, str] | None:
    """(phase, reason, message) when placement ended the job (``caldera.io/ended``), else None."""
    annotations = ((binding or {}).get("metadata") or {}).get("annotations") or {}
    try:
        ended = json.loads(annotations.get(ENDED_ANNOTATION) or "null")
    except ValueError:
        return None
    if not isinstance(ended, dict) or ended.get("phase") not in ENDED_PHASES:
        return None
    return str(ended["phase"]), "ClusterLost", str(ended.get("message") or ended.get("action") or "")
