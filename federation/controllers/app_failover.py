"""Karmada's application failover for a share whose member Job is unhealthy (pure, clock injected).

A share is unhealthy while its Work's ``manifestStatuses[0].health`` is ``Unhealthy`` (Karmada's
signal; the agent derives it from the member Job: Failed, Aborted or Terminated), or, with no
``health``, while the member Job's ``status.state.phase`` is one of those; it is unhealthy since
that state's ``lastTransitionTime``. After
``failover.application.decisionConditions.tolerationSeconds`` (300 by default) the binding is
placed again without that cluster, and the cluster is recorded as a ``gracefulEvictionTasks``
entry on the binding spec (as Karmada's application failover controller records it). The entry
keeps the cluster out of the new placement and tells dispatch when the old Work may go:

* ``Directly``: at once;
* ``Gracefully``: once every share of the new generation runs, or ``gracePeriodSeconds`` after
  the task's ``creationTimestamp``, whichever comes first;
* ``Never``: Karmada sets ``suppressDeletion: true``: the old Work stays (no timeout) until a user
  sets ``suppressDeletion: false`` on the task.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from federation.controllers import common as c
from policies.models.karmada_work import status_is_current

Obj = dict[str, Any]

PRODUCER = "resource-binding-application-failover-controller"
REASON = "ApplicationFailure"
UNHEALTHY_PHASES = frozenset({"Failed", "Aborted", "Terminated"})
DEFAULT_TOLERATION = 300
DEFAULT_GRACE = 600


def application(rb: Obj | None) -> Obj | None:
    """The binding's ``failover.application`` with Karmada's defaults, or None."""
    app = (((rb or {}).get("spec") or {}).get("failover") or {}).get("application")
    if not isinstance(app, dict):
        return None
    mode = app.get("purgeMode") or "Gracefully"
    seconds = (app.get("decisionConditions") or {}).get("tolerationSeconds")
    grace = app.get("gracePeriodSeconds")
    return {"purgeMode": mode, "tolerationSeconds": DEFAULT_TOLERATION if seconds is None else int(seconds),
            "gracePeriodSeconds": (int(grace) if grace is not None else DEFAULT_GRACE) if mode == "Gracefully"
            else None}


def tasks_of(rb: Obj | None) -> list[Obj]:
    return list(((rb or {}).get("spec") or {}).get("gracefulEvictionTasks") or [])


def evicted_clusters(rb: Obj | None) -> set[str]:
    return {str(t.get("fromCluster")) for t in tasks_of(rb)}


def works_of(rb: Obj | None, key: tuple[str, str], uid: str,
             work: Callable[[str, str], Obj | None]) -> dict[str, Obj]:
    """The job's Works on the binding's clusters, by cluster (looked up by name, as the assumed-shares
    cache does); empty unless the binding has application failover."""
    if application(rb) is None:
        return {}
    out: dict[str, Obj] = {}
    for target in ((rb or {}).get("spec") or {}).get("clusters") or []:
        cluster = target.get("name", "")
        found = work(c.execution_ns(cluster), c.work_name(*key))
        if found is not None and ((found.get("metadata") or {}).get("labels") or {}).get(c.JOB_UID_LABEL) == uid:
            out[cluster] = found
    return out


def _manifest(work: Obj | None) -> Obj:
    if work is not None and not status_is_current(work):
        return {}  # reported for an older placement generation: says nothing about this one
    for item in ((work or {}).get("status") or {}).get("manifestStatuses") or []:
        if isinstance(item, dict):
            return item
    return {}


def share_state(work: Obj | None) -> Obj:
    status = _manifest(work).get("status")
    return (status.get("state") or {}) if isinstance(status, dict) else {}


def unhealthy(work: Obj | None) -> bool:
    health = _manifest(work).get("health")
    if health:
        return bool(health == "Unhealthy")
    return share_state(work).get("phase") in UNHEALTHY_PHASES


def unhealthy_shares(rb: Obj | None, works: Mapping[str, Obj], now: float) -> tuple[dict[str, str], float | None]:
    """Clusters of the binding whose share has been unhealthy for ``tolerationSeconds`` and why, and
    when a share unhealthy for less runs out of tolerance (None: none is)."""
    app = application(rb)
    if app is None:
        return {}, None
    generation = int(c.annotations_of(rb).get(c.GENERATION) or 0)
    out: dict[str, str] = {}
    wake: float | None = None
    for target in ((rb or {}).get("spec") or {}).get("clusters") or []:
        name = target.get("name", "")
        work = works.get(name)
        if work is None or int(((work.get("spec") or {}).get("placement") or {}).get("generation") or 0) != generation:
            continue  # a share of an older generation says nothing about this one
        if not unhealthy(work):
            continue
        state = share_state(work)
        since = c.parse_time(state.get("lastTransitionTime")) or now
        until = since + app["tolerationSeconds"]
        if until <= now:
            out[name] = f"application {state.get('phase')} for {int(now - since)}s"
        else:
            wake = until if wake is None else min(wake, until)
    return out, wake


def eviction_tasks(rb: Obj | None, clusters: Mapping[str, str], now: float) -> list[Obj]:
    """The binding's eviction tasks plus one per newly evicted cluster (Karmada's field names)."""
    app = application(rb) or {"purgeMode": "Gracefully", "gracePeriodSeconds": DEFAULT_GRACE}
    tasks = [t for t in tasks_of(rb) if t.get("fromCluster") not in clusters]
    replicas = {t.get("name"): int(t.get("replicas") or 0) for t in ((rb or {}).get("spec") or {}).get("clusters") or []}
    for name, why in sorted(clusters.items()):
        task: Obj = {"fromCluster": name, "purgeMode": app["purgeMode"], "replicas": replicas.get(name, 0),
                     "reason": REASON, "message": why, "producer": PRODUCER, "creationTimestamp": c.rfc3339(now)}
        if app["purgeMode"] == "Gracefully":
            task["gracePeriodSeconds"] = app["gracePeriodSeconds"]
        if app["purgeMode"] == "Never":
            task["suppressDeletion"] = True
        tasks.append(task)
    return tasks


def share_running(work: Obj | None, generation: int) -> bool:
    placement = ((work or {}).get("spec") or {}).get("placement") or {}
    if int(placement.get("generation") or 0) != generation:
        return False
    gang = ((work or {}).get("status") or {}).get("gang") or {}
    if gang.get("phase") == "Running" and int(gang.get("generation") or 0) == generation:
        return True
    return share_state(work).get("phase") in ("Running", "Completed")


def settle(tasks: list[Obj], new_shares: Mapping[str, Obj | None], generation: int,
           now: float) -> tuple[list[Obj], float | None]:
    """The eviction tasks whose old Work must still stay, and when the next grace period ends.
    ``new_shares``: the current generation's Work per cluster (None: not written yet)."""
    all_running = bool(new_shares) and all(share_running(w, generation) for w in new_shares.values())
    keep: list[Obj] = []
    wake: float | None = None
    for task in tasks:
        mode = task.get("purgeMode") or "Gracefully"
        if mode == "Never":
            if task.get("suppressDeletion") is not False:
                keep.append(task)
            continue
        if mode != "Gracefully" or all_running:
            continue
        created = c.parse_time(task.get("creationTimestamp")) or now
        until = created + int(task.get("gracePeriodSeconds") or DEFAULT_GRACE)
        if until > now:
            keep.append(task)
            wake = until if wake is None else min(wake, until)
    return keep, wake
