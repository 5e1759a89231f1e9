"""The JSON documents the dashboard reads (pure: store objects in, plain dicts out).

``overview``: the ``GET /status`` document (clusters, jobs, placement latency; docs/status.md)
plus, per cluster, fragmented GPUs; queues for the fleet (deserved / allocated / capability per
resource, the Queue's fleet numbers) with each cluster's report under them; each job's two-phase state; and the
most recent events. ``job_page``: one job's entry, its shares, the pods its shares report (counts
by task and phase, per cluster: pods live in the member clusters) and the job's events.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from policies.resource_labels import natural_amount

Obj = dict[str, Any]
RECENT_EVENTS = 50
JOB_EVENTS = 100


def _meta(obj: Obj) -> Obj:
    return obj.get("metadata") or {}


def event_row(event: Obj) -> Obj:
    involved = event.get("involvedObject") or {}
    return {
        "time": event.get("lastTimestamp") or event.get("eventTime") or event.get("firstTimestamp") or "",
        "type": event.get("type") or "Normal", "reason": event.get("reason") or "",
        "object": f"{involved.get('kind', '')}/{involved.get('name', '')}",
        "namespace": involved.get("namespace") or "", "message": event.get("message") or "",
        "count": int(event.get("count") or 1),
        "source": (event.get("source") or {}).get("component") or event.get("reportingComponent") or "",
    }


def recent_events(events: Iterable[Obj], limit: int = RECENT_EVENTS) -> list[Obj]:
    rows = [event_row(e) for e in events]
    rows.sort(key=lambda r: r["time"], reverse=True)
    return rows[:limit]


def event_groups(events: Iterable[Obj], limit: int = RECENT_EVENTS) -> list[Obj]:
    """Events grouped per involved object, newest group first: the page shows one collapsed row per
    object (its latest event, how many, whether any is a Warning) and opens it on demand."""
    groups: dict[tuple[str, str], Obj] = {}
    for row in sorted((event_row(e) for e in events), key=lambda r: r["time"], reverse=True):
        key = (row["namespace"], row["object"])
        group = groups.get(key)
        if group is None:
            group = groups[key] = {"namespace": row["namespace"], "object": row["object"], "latest": row,
                                   "count": 0, "warnings": 0, "events": []}
        group["count"] += row["count"]
        group["warnings"] += row["count"] if row["type"] == "Warning" else 0
        group["events"].append(row)
    return list(groups.values())[:limit]


#: share phases after which the gang's last reported phase (often Running) is history
SHARE_DONE = ("Completing", "Completed", "Failed", "Aborting", "Aborted", "Terminating", "Terminated")


def gang_phase_shown(share: Obj) -> str:
    """What the GANG column says: the Work's gang phase while the share runs; once the share is
    completing or over, its own phase (a finished share's gang is not Running any more)."""
    phase = str(share.get("phase") or "")
    return phase if phase in SHARE_DONE else str(share.get("gangPhase") or "")


def _amounts(values: Mapping[str, Any] | None) -> dict[str, float]:
    out = {}
    for resource, quantity in (values or {}).items():
        try:
            out[str(resource)] = natural_amount(str(resource), quantity)
        except (ValueError, TypeError):
            continue
    return out


def queue_rows(clusters: Iterable[Obj], queues: Iterable[Obj] = ()) -> list[Obj]:
    """One row per queue for the fleet, with its clusters under it (docs/queues.md).

    A Queue holds for the whole fleet: its ``capability`` is the Queue's (never a sum of the
    clusters' copies), ``allocated`` and ``deserved`` the fleet's as the federation writes them in the
    Queue's status (``allocated`` falls back to the sum of the clusters' reports). ``perCluster``
    holds what each agent reports for the queue there (allocated, deserved, capability);
    ``clusters`` lists them."""
    merged: dict[str, Obj] = {}

    def row(name: str) -> Obj:
        return merged.setdefault(name, {"name": name, "clusters": [], "perCluster": [], "allocated": {},
                                        "deserved": {}, "capability": {}})

    for cluster in clusters:
        cname = str(_meta(cluster).get("name"))
        for entry in (cluster.get("status") or {}).get("queues") or []:
            r = row(str(entry.get("name")))
            r["clusters"].append(cname)
            here = {field: _amounts(entry.get(field)) for field in ("allocated", "deserved", "capability")}
            r["perCluster"].append({"cluster": cname, **here})
            for resource, amount in here["allocated"].items():
                r["allocated"][resource] = r["allocated"].get(resource, 0.0) + amount
            for resource, amount in here["capability"].items():  # each cluster reports the same Queue's
                r["capability"][resource] = max(r["capability"].get(resource, 0.0), amount)
    for queue in queues:
        r = row(str(_meta(queue).get("name")))
        status, spec = queue.get("status") or {}, queue.get("spec") or {}
        r["capability"] = _amounts(spec.get("capability"))
        r["weight"] = int(spec.get("weight") or 1)
        r["state"] = str(status.get("state") or "Open")
        if status.get("allocatedByCluster") is not None:
            r["allocated"] = _amounts(status.get("allocated"))
        if status.get("deserved") is not None:
            r["deserved"] = _amounts(status.get("deserved"))
    return [merged[k] for k in sorted(merged)]


def two_phase_state(works: Iterable[Obj]) -> str:
    """``Held`` (some share still reserving), ``Released``, ``Cancelled``, or ``""`` for one-cluster jobs."""
    placements = [((w.get("spec") or {}).get("placement") or {}) for w in works]
    multi = [p for p in placements if int(p.get("clusters") or 1) > 1]
    if not multi:
        return ""
    newest = max(int(p.get("generation") or 0) for p in multi)
    current = [p for p in multi if int(p.get("generation") or 0) == newest]
    if any(p.get("cancelled") for p in current):
        return "Cancelled"
    return "Held" if any(p.get("hold") for p in current) else "Released"


def works_by_job(works: Iterable[Obj]) -> dict[str, list[Obj]]:
    out: dict[str, list[Obj]] = {}
    for work in works:
        key = (_meta(work).get("labels") or {}).get("caldera.io/job")
        if key:
            out.setdefault(str(key), []).append(work)
    return out


def overview(status_doc: Obj, clusters: Iterable[Obj], works: Iterable[Obj], events: Iterable[Obj],
             queues: Iterable[Obj] = ()) -> Obj:
    clusters = list(clusters)
    fragmented = {str(_meta(c).get("name")): sum(int(g.get("fragmented") or 0)
                                                 for g in (c.get("status") or {}).get("gpus") or [] if isinstance(g, dict))
                  for c in clusters}
    for row in status_doc["clusters"]:
        row["gpus"]["fragmented"] = fragmented.get(str(row["name"]), 0)
    grouped = works_by_job(works)
    for job in status_doc["jobs"]:
        job["twoPhase"] = two_phase_state(grouped.get(f"{job['namespace']}.{job['name']}", []))
    events = list(events)
    return {**status_doc, "queues": queue_rows(clusters, queues), "events": recent_events(events),
            "eventGroups": event_groups(events)}


def pods_of(works: Iterable[Obj]) -> list[Obj]:
    """Per cluster and task: pod counts by phase, from the shares' reported Job status."""
    rows = []
    for work in works:
        cluster = str(_meta(work).get("namespace") or "").removeprefix("karmada-es-")
        for manifest in (work.get("status") or {}).get("manifestStatuses") or []:
            counts = ((manifest.get("status") or {}).get("taskStatusCount") or {})
            for task, entry in sorted(counts.items()):
                phases = {str(k): int(v) for k, v in ((entry or {}).get("phase") or {}).items()}
                rows.append({"cluster": cluster, "task": task, "phases": phases, "total": sum(phases.values())})
    return sorted(rows, key=lambda r: (r["cluster"], r["task"]))


def _rank(pod: Obj) -> str:
    """The rank a pod's process is told: env ``RANK``, else ``VC_TASK_INDEX``, else the task index."""
    containers = (pod.get("spec") or {}).get("containers") or [{}]
    env = {e.get("name"): e.get("value") for e in (containers[0].get("env") or []) if isinstance(e, dict)}
    labels = _meta(pod).get("labels") or {}
    return str(env.get("RANK") or env.get("VC_TASK_INDEX") or labels.get("volcano.sh/task-index") or "")


def pod_rows(pods: Iterable[Obj]) -> list[Obj]:
    """One row per reported pod (every copy, docs/protocol.md "Member pods"): where it runs, its rank
    and phase, and the path of its log."""
    rows = []
    for pod in pods:
        meta = _meta(pod)
        labels = meta.get("labels") or {}
        index = str(labels.get("volcano.sh/task-index", ""))
        rows.append({"name": meta.get("name"), "namespace": meta.get("namespace"),
                     "cluster": (meta.get("annotations") or {}).get("resource.karmada.io/cached-from-cluster", ""),
                     "node": (pod.get("spec") or {}).get("nodeName") or "", "task": labels.get("volcano.sh/task-spec", ""),
                     "index": int(index) if index.isdigit() else None, "rank": _rank(pod),
                     "phase": (pod.get("status") or {}).get("phase") or "Pending",
                     "log": f"/api/v1/namespaces/{meta.get('namespace')}/pods/{meta.get('name')}/log"})
    return sorted(rows, key=lambda r: (r["task"], r["index"] if r["index"] is not None else -1, r["name"], r["cluster"]))


def job_page(entry: Obj, works: Iterable[Obj], events: Iterable[Obj], pods: Iterable[Obj] = ()) -> Obj:
    works = list(works)
    placement = [{"cluster": str(_meta(w).get("namespace") or "").removeprefix("karmada-es-"),
                  **{k: ((w.get("spec") or {}).get("placement") or {}).get(k)
                     for k in ("generation", "hold", "cancelled", "clusters")},
                  "gang": (w.get("status") or {}).get("gang") or {}} for w in works]
    events = list(events)
    shares = [{**s, "gangPhaseReported": s.get("gangPhase"), "gangPhase": gang_phase_shown(s)}
              for s in entry.get("clusters") or []]
    return {**entry, "clusters": shares, "twoPhase": two_phase_state(works),
            "works": sorted(placement, key=lambda p: p["cluster"]), "pods": pods_of(works),
            "podList": pod_rows(pods),
            "events": recent_events(events, JOB_EVENTS), "eventGroups": event_groups(events, JOB_EVENTS)}
