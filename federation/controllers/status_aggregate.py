"""Aggregate a federated Job's status from its ResourceBinding and its Works (pure, synchronous).

``aggregate(job, binding, works, now)`` returns the Volcano-shaped ``status`` the status
controller writes to the Job, plus the phase change (for an Event). The result depends only
on its inputs and the Job's previous status: timestamps move only when something changes,
so feeding the same inputs twice gives the same status and the controller never writes in a
loop. The shape is documented in docs/status.md.

Phase rules (shares are the Works of the binding's current placement generation):

* no placement yet, or a share not dispatched/reported yet -> ``Pending``;
* any share ``Failed`` -> ``Failed`` (a gang split across clusters is broken if one part fails);
* any share aborting/aborted, terminating/terminated or restarting -> that phase
  (the ``-ing`` form until every share is terminal);
* every share ``Completed`` -> ``Completed``; every share completing or completed -> ``Completing``;
* every share running, completing or completed -> ``Running``; otherwise ``Pending``;
* the binding's ``caldera.io/ended`` (a lost cluster ended the job under its ``PodEvicted``
  policy: AbortJob, TerminateJob, CompleteJob) -> its phase, reason ``ClusterLost``, whatever the shares say.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from federation.controllers.share_views import (
    ShareView,
    condition,
    ended_by_placement,
    share_views,
    whole_or,
    work_generation,
)
from policies.k8s import durations
from policies.k8s.timestamps import instant

Obj = dict[str, Any]

COUNT_FIELDS = ("pending", "running", "succeeded", "failed", "terminating", "unknown")
RUNNING_LIKE = frozenset({"Running", "Completing", "Completed"})
TERMINAL = frozenset({"Completed", "Failed", "Aborted", "Terminated"})
#: gang phases meaning "this share holds its resources" (two-phase start, docs/protocol.md)
RESERVED_LIKE = frozenset({"Reserved", "Released", "Running"})
#: phase-transition entries kept in ``status.conditions`` (Volcano keeps all; we bound the list)
MAX_PHASE_HISTORY = 20


def stamp(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_stamp(text: str | None) -> datetime | None:
    return instant(text)


def go_duration(seconds: float) -> str:
    """metav1.Duration text of whole ``seconds`` (never negative): ``1h2m3s``, ``45s``, ``0s``."""
    return durations.format_seconds(max(0, int(seconds)))


def aggregate_phase(phases: Sequence[str]) -> str:
    """The federated Job's phase from its shares' phases (module docstring)."""
    if not phases:
        return "Pending"
    present = set(phases)
    all_terminal = present <= TERMINAL
    if "Failed" in present:
        return "Failed"
    if present & {"Aborting", "Aborted"}:
        return "Aborted" if all_terminal else "Aborting"
    if present & {"Terminating", "Terminated"}:
        return "Terminated" if all_terminal else "Terminating"
    if "Restarting" in present:
        return "Restarting"
    if present == {"Completed"}:
        return "Completed"
    if present <= {"Completed", "Completing"}:
        return "Completing"
    if present <= RUNNING_LIKE:
        return "Running"
    return "Pending"


def _explain(phase: str, binding: Obj | None, views: list[ShareView]) -> tuple[str, str]:
    """(reason, message) for ``status.state``: "why pending across clusters" lives here."""
    if not views:
        scheduled = condition(binding, "Scheduled")
        if binding is None:
            return "WaitingForPlacement", "no ResourceBinding yet: waiting for the placement controller"
        if scheduled is not None and scheduled.get("status") == "False":
            return str(scheduled.get("reason") or "Unschedulable"), str(scheduled.get("message") or "")
        return "WaitingForPlacement", "the ResourceBinding has no clusters yet"
    names = ", ".join(v.plan.cluster for v in views)
    if phase == "Running":
        return "AllSharesRunning", f"{len(views)} share(s) running on {names}"
    if phase == "Completed":
        return "AllSharesCompleted", f"{len(views)} share(s) completed on {names}"
    if phase in ("Failed", "Aborted", "Aborting", "Terminated", "Terminating", "Restarting"):
        culprits = [v for v in views if v.phase == phase or (phase.endswith("ing") and v.phase not in TERMINAL)]
        detail = "; ".join(f"{v.plan.cluster}: {v.phase} ({v.why})" for v in culprits or views)
        return f"Share{phase}", detail
    waiting = [v for v in views if v.phase not in RUNNING_LIKE]
    detail = "; ".join(f"{v.plan.cluster}: {v.why}" for v in waiting)
    if phase == "Completing":
        return "SharesCompleting", detail
    held = [v for v in views if v.gang.get("phase")]
    if held and any(v.gang.get("phase") not in RESERVED_LIKE for v in held):
        return "WaitingForReservation", detail
    if any(v.work is None or v.stale for v in views):
        return "WaitingForDispatch", detail
    return "WaitingForShares", detail


def _typed(type_: str, status: str, reason: str, message: str, previous: Mapping[str, Obj], now: str,
           since: str | None = None) -> Obj:
    old = previous.get(type_)
    if old is not None and old.get("status") == status:
        when = old.get("lastTransitionTime") or since or now
    else:
        when = since or now
    return {"type": type_, "status": status, "reason": reason, "message": message, "lastTransitionTime": when}


def typed_conditions(binding: Obj | None, views: list[ShareView], previous: Mapping[str, Obj],
                     now: str) -> list[Obj]:
    """Caldera's conditions: Scheduled (from the binding), Dispatched, and Reserved for held gangs."""
    out: list[Obj] = []
    scheduled = condition(binding, "Scheduled")
    if scheduled is not None:
        out.append(_typed("Scheduled", str(scheduled.get("status") or "Unknown"),
                          str(scheduled.get("reason") or ""), str(scheduled.get("message") or ""), previous, now,
                          scheduled.get("lastTransitionTime")))
    elif binding is None:
        out.append(_typed("Scheduled", "False", "WaitingForPlacement", "no ResourceBinding yet", previous, now))
    elif views:
        out.append(_typed("Scheduled", "True", "Scheduled", "placed on " + ", ".join(v.plan.cluster for v in views),
                          previous, now))
    if not views:
        return out
    missing = [v.plan.cluster for v in views if v.work is None or v.stale]
    if missing:
        out.append(_typed("Dispatched", "False", "WaitingForWorks", "no current Work yet for " + ", ".join(missing),
                          previous, now))
    else:
        out.append(_typed("Dispatched", "True", "WorksCreated", f"{len(views)} Work(s) dispatched", previous, now))
    held = [v for v in views if v.work is not None and not v.stale
            and int(((v.work.get("spec") or {}).get("placement") or {}).get("clusters") or 1) > 1]
    if held:
        waiting = [v for v in views if v.gang.get("phase") not in RESERVED_LIKE and v.phase not in RUNNING_LIKE]
        if waiting:
            message = "; ".join(f"{v.plan.cluster}: {v.gang.get('phase') or 'no answer'} ({v.why})" for v in waiting)
            out.append(_typed("Reserved", "False", "WaitingForReservation", message, previous, now))
        else:
            out.append(_typed("Reserved", "True", "AllSharesReserved",
                              f"all {len(views)} shares hold their resources", previous, now))
        out.extend(gang_started_condition(held, previous, now))
    return out


def gang_started_condition(held: list[ShareView], previous: Mapping[str, Obj], now: str) -> list[Obj]:
    """``GangStarted`` of a released gang spanning clusters: False with reason ``RunningByHalves``
    while some shares run and others have not started (or were fenced), True once all run
    (the post-release deadline tears a gang down that stays by halves: federation/controllers/post_release.py)."""
    released = [v for v in held if not ((v.work or {}).get("spec") or {}).get("placement", {}).get("hold")
                and not ((v.work or {}).get("spec") or {}).get("placement", {}).get("cancelled")]
    if not released or len(released) != len(held):
        return []
    started = [v for v in released if v.gang.get("phase") == "Running" and condition(v.work, "Fenced") is None]
    if len(started) == len(released):
        return [_typed("GangStarted", "True", "AllSharesStarted", f"all {len(released)} shares started",
                       previous, now)]
    waiting = "; ".join(f"{v.plan.cluster}: {v.gang.get('phase') or 'no answer'} ({v.why})"
                        for v in released if v not in started)
    reason = "RunningByHalves" if started else "Starting"  # released, no share runs yet
    return [_typed("GangStarted", "False", reason, f"{len(started)}/{len(released)} shares started; {waiting}",
                   previous, now)]


def cluster_entries(views: list[ShareView]) -> list[Obj]:
    entries = []
    for view in views:
        js = view.job_status
        entry: Obj = {"name": view.plan.cluster, "replicas": view.plan.replicas,
                      "minAvailable": view.plan.min_available, "tasks": view.plan.tasks or None,
                      "phase": view.phase, "generation": work_generation(view.work) if view.work else None,
                      "gangPhase": view.gang.get("phase"), "reason": None if view.phase in RUNNING_LIKE else view.why}
        for key in ("pending", "running", "succeeded", "failed"):
            entry[key] = whole_or(js.get(key), 0)
        entries.append({k: v for k, v in entry.items() if v is not None})
    return entries


def _sum_counts(views: list[ShareView]) -> Obj:
    totals: Obj = dict.fromkeys(COUNT_FIELDS, 0)
    tasks: dict[str, dict[str, int]] = {}
    retries = 0
    for view in views:
        js = view.job_status
        for key in COUNT_FIELDS:
            totals[key] += whole_or(js.get(key), 0) or 0
        for task, counts in (js.get("taskStatusCount") or {}).items():
            merged = tasks.setdefault(task, {})
            for pod_phase, n in ((counts or {}).get("phase") or {}).items():
                merged[pod_phase] = merged.get(pod_phase, 0) + (whole_or(n, 0) or 0)
        retries = max(retries, whole_or(js.get("retryCount"), 0) or 0)
    if tasks:
        totals["taskStatusCount"] = {t: {"phase": dict(sorted(p.items()))} for t, p in sorted(tasks.items())}
    if retries:
        totals["retryCount"] = retries
    return totals


@dataclass(frozen=True)
class Aggregate:
    status: Obj
    old_phase: str | None
    new_phase: str

    @property
    def phase_changed(self) -> bool:
        return self.old_phase != self.new_phase


def aggregate(job: Obj, binding: Obj | None, works: Iterable[Obj], now: datetime) -> Aggregate:
    """The Job's new ``status`` from its binding and Works (see the module docstring)."""
    previous: Obj = dict(job.get("status") or {})
    old_state = previous.get("state") or {}
    old_phase = old_state.get("phase")
    _generation, views = share_views(binding, works)
    phase = aggregate_phase([v.phase for v in views])
    reason, message = _explain(phase, binding, views)
    ended = ended_by_placement(binding)
    if ended is not None:
        phase, reason, message = ended
    now_text = stamp(now)
    changed = old_phase != phase
    old_conditions = [c for c in previous.get("conditions") or [] if isinstance(c, dict)]
    history = [c for c in old_conditions if not c.get("type")]
    if changed:
        history = [*history, {"status": phase, "lastTransitionTime": now_text}][-MAX_PHASE_HISTORY:]
    typed_previous = {c["type"]: c for c in old_conditions if c.get("type")}
    status: Obj = {"state": {"phase": phase, "reason": reason, "message": message,
                             "lastTransitionTime": now_text if changed else old_state.get("lastTransitionTime",
                                                                                          now_text)}}
    spec_min = whole_or((job.get("spec") or {}).get("minAvailable"))
    planned_min = [v.plan.min_available for v in views if v.plan.min_available is not None]
    min_available = spec_min if spec_min is not None else (sum(planned_min) if planned_min else None)
    if min_available is not None:
        status["minAvailable"] = min_available
    status.update(_sum_counts(views))
    created = parse_stamp((job.get("metadata") or {}).get("creationTimestamp"))
    if changed and created is not None:
        status["runningDuration"] = go_duration((now - created).total_seconds())
    elif previous.get("runningDuration"):
        status["runningDuration"] = previous["runningDuration"]
    status["conditions"] = history + typed_conditions(binding, views, typed_previous, now_text)
    status["clusters"] = cluster_entries(views)
    return Aggregate(status, old_phase, phase)
