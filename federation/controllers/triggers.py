"""Why a job must be placed now: the placement controller's decision, kept free of I/O.

:func:`placement_trigger` reads the Job, its ResourceBinding, the governing policy, the
Clusters and the job's last failed attempt, and answers with the reason to place (``None``: leave
the job where it is; a :class:`~federation.controllers.failover.Failover`: a lost cluster ended
the job under its policies), the previous binding the division should start from, how long to
wait first, and when to look again even if nothing changes (a ``tolerationSeconds`` running out).
The order of the checks is the order of precedence: a finished job is never moved, a spec or
policy change comes before a lost cluster, and a cancelled reservation before a plain retry.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from federation.controllers import app_failover, failover
from federation.controllers import binding as b
from federation.controllers import common as c
from federation.controllers.post_release import TORN_DOWN

Obj = dict[str, Any]


@dataclass
class Attempt:
    """A failed placement: when to retry, and which cluster snapshot it failed on."""

    failures: int
    not_before: float
    cluster_version: int
    message: str
    #: retry then even if no Cluster changed (a cluster's exclusion for this job lapses)
    wake: float | None = None


#: the trigger's prefix when an unhealthy share outlived its tolerationSeconds
APPLICATION_FAILURE = "application failure"

Trigger = tuple[str | failover.Failover | None, Obj | None, float, float | None]


def finished(job: Obj) -> bool:
    phase = (((job.get("status") or {}).get("state")) or {}).get("phase")
    return phase in c.FINISHED_JOB_PHASES


def placement_trigger(job: Obj, rb: Obj | None, policy: Obj, clusters: Mapping[str, Obj],
                      attempt: Attempt | None, cluster_version: int, now: float, queued: bool = False,
                      works: Mapping[str, Obj] | None = None) -> Trigger:
    """``(reason, previous binding, delay, wake)``; see the module docstring. ``queued``: the job was
    just popped from the scheduling queue (an unschedulable job is tried again only then); ``works``:
    the job's Works by cluster (application failover reads their member Job state)."""
    generation = b.generation_of(rb)
    status = (rb or {}).get("status") or {}
    job_gen = int(job["metadata"].get("generation") or 1)
    scheduled = c.condition(rb, "Scheduled")
    if rb is None or (generation == 0 and scheduled is None):
        return "initial placement", rb, 0.0, None
    if finished(job) or c.annotations_of(rb).get(c.ENDED):
        return None, rb, 0.0, None  # a finished job (or one a lost cluster ended) is never moved
    if scheduled is not None and scheduled.get("reason") == "NoPolicy":
        return "policy bound", rb, 0.0, None
    if status.get("schedulerObservedGeneration") != job_gen:
        return "job spec changed", rb, 0.0, None
    if b.applied_fingerprint(rb) != b.placement_fingerprint(policy):
        return "policy changed", rb, 0.0, None
    if b.reschedule_requested(rb):
        return "reschedule requested (rescheduleTriggeredAt)", rb, 0.0, None
    tolerations = ((policy.get("spec") or {}).get("placement") or {}).get("clusterTolerations") or []
    lost, wake = b.lost_clusters(rb, clusters, tolerations, now)
    if lost:
        decision = failover.decide(job, rb, lost)
        if decision.ends_job:
            return decision, rb, 0.0, wake
        why = "; ".join(f"{n}: {w}" for n, w in sorted(lost.items()))
        return f"cluster lost ({why})", b.without_clusters(rb, lost), 0.0, wake
    fenced = fenced_shares(works or {}, generation)
    if fenced:  # a cut-off agent stopped its share: the job starts again under a new generation
        decision = failover.decide(job, rb, fenced)
        if decision.ends_job:
            return decision, rb, 0.0, wake
        return f"{SHARE_FENCED} ({'; '.join(f'{n}: {w}' for n, w in sorted(fenced.items()))})", rb, 0.0, wake
    unhealthy, app_wake = app_failover.unhealthy_shares(rb, works or {}, now)
    if app_wake is not None:
        wake = app_wake if wake is None else min(wake, app_wake)
    if unhealthy:
        why = "; ".join(f"{n}: {w}" for n, w in sorted(unhealthy.items()))
        previous = b.without_clusters(rb, unhealthy)
        assert previous is not None
        previous["spec"]["gracefulEvictionTasks"] = app_failover.eviction_tasks(rb, unhealthy, now)
        return f"{APPLICATION_FAILURE} ({why})", previous, 0.0, wake
    if generation > 0 and c.int_annotation(rb, c.CANCELLED_GENERATION, -1) == generation:
        ended = torn_down_ending(job, rb, generation)  # a gang torn down after its release: its PodEvicted policy
        if ended is not None:
            return ended, rb, 0.0, wake
        retry_at = c.parse_time(c.annotations_of(rb).get(c.RETRY_AFTER)) or now
        return "reservation cancelled", b.fresh_previous(rb), max(0.0, retry_at - now), wake
    if scheduled is not None and scheduled.get("status") != "True":
        # the scheduling queue owns unschedulable jobs: they are tried again when popped from it
        # (an event that could make them fit moved them to its activeQ), never on a timer here
        if queued:
            return "retry from the scheduling queue", rb, 0.0, wake
        if attempt is None:
            return "retry (no attempt on record)", rb, 0.0, wake
        if attempt.wake is not None and now >= attempt.wake:
            return "retry (a cluster exclusion lapsed)", rb, 0.0, wake
        return None, rb, 0.0, wake
    return None, rb, 0.0, wake


SHARE_FENCED = "share fenced"


def fenced_shares(works: Mapping[str, Obj], generation: int) -> dict[str, str]:
    """Clusters whose Work of ``generation`` reports ``Fenced=True`` (its agent stopped the share)."""
    out: dict[str, str] = {}
    for cluster, work in works.items():
        placed = ((work.get("spec") or {}).get("placement") or {}).get("generation")
        if placed != generation:
            continue
        for cond in (work.get("status") or {}).get("conditions") or []:
            if (isinstance(cond, Mapping) and cond.get("type") == "Fenced" and cond.get("status") == "True"
                    and cond.get("observedGeneration") == generation):
                out[cluster] = str(cond.get("message") or "fenced")
    return out


def torn_down_ending(job: Obj, rb: Obj | None, generation: int) -> failover.Failover | None:
    """The ending action when a gang of ``generation`` was torn down after its release and its
    ``PodEvicted`` policy ends the job (None: restart it, or no teardown)."""
    raw = c.annotations_of(rb).get(TORN_DOWN)
    try:
        note = json.loads(raw) if raw else None
    except ValueError:
        return None
    if not isinstance(note, dict) or note.get("generation") != generation:
        return None
    lost = {str(name): str(note.get("reason") or "torn down") for name in note.get("clusters") or []}
    decision = failover.decide(job, rb, lost) if lost else None
    return decision if decision is not None and decision.ends_job else None
