"""Pure pieces of the placement controller: cluster snapshots, reschedule triggers, the binding body.

Nothing here talks to the API; :mod:`federation.controllers.placement` feeds it the cached
objects and writes what it returns.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping
from typing import Any

from federation.controllers.claim import with_marks
from federation.controllers.common import (
    APPLIED_PLACEMENT,
    GENERATION,
    JOB_UID_LABEL,
    PLACED_AT,
    PLACEMENT,
    POLICY,
    RESCHEDULED_FOR,
    annotations_of,
    canonical_json,
    int_annotation,
    json_annotation,
    parse_time,
    rb_name,
    rfc3339,
)
from federation.controllers.matching import policy_ref
from federation.placement.adapters import cluster_state
from federation.placement.decision import PlacementDecision
from federation.placement.request import ClusterState, Taint, Toleration

Obj = Mapping[str, Any]


def cluster_snapshot(cluster: Obj) -> ClusterState:
    """The core's view of a Cluster, its Ready condition taken as written, undamped.

    In the federation that condition is already damped: the cluster health controller says Ready
    again only after the lease has stayed fresh for ``--cluster-success-threshold`` (and keeps the
    unreachable/not-ready taint until then), as Karmada's cluster status controller does before its
    scheduler reads the condition. Damping it again by the core's thresholds (``Options``, for raw
    conditions in ``caldera place``) kept a cluster that reads Ready and untainted out of every new
    placement for another 30 s after each partition healed or agent restarted (the agent restamps
    the condition), whatever the flag said: the next Job went whole to the other clusters."""
    return dataclasses.replace(cluster_state(cluster), ready_since=None)


def placement_fingerprint(policy: Obj) -> str:
    """What a change of the policy is judged by: its identity and its placement."""
    return canonical_json({"policy": policy_ref(policy), "placement": (policy.get("spec") or {}).get("placement")})


def applied_fingerprint(rb: Obj | None) -> str:
    meta = (rb or {}).get("metadata") or {}
    notes = meta.get("annotations") or {}
    placement = notes.get(APPLIED_PLACEMENT)
    if placement is None:
        return ""
    try:
        parsed = json.loads(placement)
    except ValueError:
        return ""
    return canonical_json({"policy": notes.get(POLICY, ""), "placement": parsed})


def lost_clusters(rb: Obj | None, clusters: Mapping[str, Obj], tolerations: Iterable[Mapping[str, Any]],
                  now: float) -> tuple[dict[str, str], float | None]:
    """Clusters of the binding that can no longer hold the job and why (deleted, NoExecute), and
    when a NoExecute taint tolerated for ``tolerationSeconds`` runs out (None: no such taint)."""
    lost: dict[str, str] = {}
    wake: float | None = None
    for target in ((rb or {}).get("spec") or {}).get("clusters") or []:
        name = target.get("name", "")
        if not int(target.get("replicas") or 0):
            continue
        cluster = clusters.get(name)
        if cluster is None:
            lost[name] = "cluster deleted"
            continue
        if (cluster.get("metadata") or {}).get("deletionTimestamp"):
            lost[name] = "cluster being deleted"
            continue
        for taint in (cluster.get("spec") or {}).get("taints") or []:
            if taint.get("effect") != "NoExecute":
                continue
            until = tolerated_until(taint, tolerations)
            if until is None:
                continue
            if until <= now:
                lost[name] = f"untolerated taint {taint.get('key')}:NoExecute"
                break
            wake = until if wake is None else min(wake, until)
    return lost, wake


def tolerated_until(taint: Mapping[str, Any], tolerations: Iterable[Mapping[str, Any]]) -> float | None:
    """Until when the NoExecute ``taint`` is tolerated: None forever, else an epoch time (past: evict)."""
    core = Taint(str(taint.get("key") or ""), str(taint.get("value") or ""), "NoExecute")
    limit: float | None = float("-inf")
    for raw in tolerations:
        toleration = Toleration.from_wire(raw)
        if not toleration.tolerates(core):
            continue
        seconds = raw.get("tolerationSeconds")
        if seconds is None:
            return None
        added = parse_time(taint.get("timeAdded")) or 0.0
        limit = max(limit or float("-inf"), added + max(0, int(seconds)))
    return limit


def reschedule_requested(rb: Obj | None) -> bool:
    """Karmada's WorkloadRebalancer trigger: ``spec.rescheduleTriggeredAt`` after ``lastScheduledTime``."""
    text = ((rb or {}).get("spec") or {}).get("rescheduleTriggeredAt")
    triggered = parse_time(text)
    last = parse_time(((rb or {}).get("status") or {}).get("lastScheduledTime"))
    if triggered is None or (last is not None and triggered <= last):
        return False
    return annotations_of(rb).get(RESCHEDULED_FOR) != str(text)  # a future timestamp is served once


def without_clusters(rb: Obj | None, names: Iterable[str]) -> dict[str, Any] | None:
    """A copy of the binding whose previous layout omits ``names`` (for a steady re-placement)."""
    if rb is None:
        return None
    drop = set(names)
    spec = dict(rb.get("spec") or {})
    spec["clusters"] = [c for c in spec.get("clusters") or [] if c.get("name") not in drop]
    return {**rb, "spec": spec}


def fresh_previous(rb: Obj | None) -> dict[str, Any] | None:
    """The binding minus its layout: the next division starts from scratch."""
    if rb is None:
        return None
    return {**rb, "spec": {**(rb.get("spec") or {}), "clusters": []}}


def placement_json(decision: PlacementDecision, job: Obj, generation: int) -> dict[str, Any]:
    """``caldera place -o json``'s shape plus what dispatch needs (offsets, share minimums, totals)."""
    stable = decision.to_stable_json()
    for name, entry in stable["clusters"].items():
        share = decision.shares[name]
        entry["minAvailable"] = share.min_available
        for task, ts in share.tasks.items():
            entry["tasks"][task]["offset"] = ts.offset
            if ts.indices:
                entry["tasks"][task]["indices"] = [list(r) for r in ts.indices]
    stable["totals"] = {t.get("name", ""): int(t.get("replicas") or 0)
                        for t in (job.get("spec") or {}).get("tasks") or []}
    stable["generation"] = generation
    stable["path"] = decision.path
    return stable


def keeps_from(rb: Obj | None, generation: int, restart: bool) -> int:
    """The oldest placement generation whose running pods the new division keeps (``keepsFrom`` of
    the placement JSON, the Works' ``spec.placement.keepsFromGeneration``): a re-placement (a lost
    cluster, a fenced or failed share, a cancelled start, the first division) restarts the job, so
    only ``generation``'s own pods count; a re-division for a changed spec keeps the running pods
    of the divisions it continues (elastic shares keep their indices), so older pods are stopped
    only by a restart. Generations are fencing tokens: an agent stops every pod older than this."""
    previous = placement_of(rb) or {}
    if restart or not previous:
        return generation
    try:
        return min(generation, int(previous.get("keepsFrom", previous.get("generation", generation))))
    except (TypeError, ValueError):
        return generation


def target_clusters(decision: PlacementDecision) -> list[dict[str, Any]]:
    """``spec.clusters`` of the binding: replicas and per-task components, by name."""
    out = []
    for name, share in sorted(decision.shares.items()):
        if share.replicas <= 0:
            continue
        out.append({"name": name, "replicas": share.replicas,
                    "components": [{"name": t, "replicas": ts.replicas} for t, ts in share.tasks.items()]})
    return out


def same_layout(a: list[dict[str, Any]] | None, b: list[dict[str, Any]] | None) -> bool:
    def norm(items: list[dict[str, Any]] | None) -> list[Any]:
        return sorted((c.get("name"), int(c.get("replicas") or 0),
                       sorted((p.get("name"), int(p.get("replicas") or 0)) for p in c.get("components") or []))
                      for c in items or [])
    return norm(a) == norm(b)


def binding_body(job: Obj, policy: Obj | None, rb: Obj | None, clusters: list[dict[str, Any]] | None,
                 generation: int, placement: dict[str, Any] | None, now: float, placed: bool) -> dict[str, Any]:
    """The binding's desired metadata and spec (status is written separately).

    ``clusters`` None keeps the binding's current layout and annotations; ``placed`` marks a
    new generation (``placed-at`` moves)."""
    meta = job.get("metadata") or {}
    spec = job.get("spec") or {}
    old_meta = (rb or {}).get("metadata") or {}
    notes = dict(old_meta.get("annotations") or {})
    if policy is not None:
        notes[POLICY] = policy_ref(policy)
        notes[APPLIED_PLACEMENT] = canonical_json((policy.get("spec") or {}).get("placement"))
    if clusters is not None:
        notes[GENERATION] = str(generation)
        if placement is not None:
            notes[PLACEMENT] = canonical_json(placement)
        else:
            notes.pop(PLACEMENT, None)
        if placed:
            notes[PLACED_AT] = rfc3339(now)
    body_spec: dict[str, Any] = dict((rb or {}).get("spec") or {})
    body_spec["resource"] = {"apiVersion": job.get("apiVersion"), "kind": job.get("kind"),
                             "namespace": meta.get("namespace"), "name": meta.get("name"), "uid": meta.get("uid"),
                             "resourceVersion": meta.get("resourceVersion")}
    tasks = spec.get("tasks") or []
    body_spec["replicas"] = sum(int(t.get("replicas") or 0) for t in tasks)
    body_spec["components"] = [{"name": t.get("name") or f"task-{i}", "replicas": int(t.get("replicas") or 0)}
                               for i, t in enumerate(tasks)]
    if policy is not None:
        pspec = policy.get("spec") or {}
        for key in ("placement", "suspension", "failover", "conflictResolution", "schedulerName"):
            if pspec.get(key) is not None:
                body_spec[key] = pspec[key]
            else:
                body_spec.pop(key, None)
    if clusters is not None:
        body_spec["clusters"] = clusters
    body_spec.setdefault("clusters", [])
    if body_spec.get("rescheduleTriggeredAt"):  # this attempt serves the request
        notes[RESCHEDULED_FOR] = str(body_spec["rescheduleTriggeredAt"])
    rb_meta: dict[str, Any] = {
        "name": rb_name(meta.get("name", "")),
        "namespace": meta.get("namespace"),
        "labels": {**(old_meta.get("labels") or {}), JOB_UID_LABEL: meta.get("uid", "")},
        "annotations": notes,
        "ownerReferences": [{"apiVersion": job.get("apiVersion"), "kind": job.get("kind"),
                             "name": meta.get("name"), "uid": meta.get("uid"), "controller": True,
                             "blockOwnerDeletion": True}],
    }
    if policy is not None:  # Karmada marks the binding with its policy as it marks the template
        with_marks(rb_meta, policy)
    return {"apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding", "metadata": rb_meta,
            "spec": body_spec}


def generation_of(rb: Obj | None) -> int:
    return int_annotation(rb, GENERATION, 0)


def placement_of(rb: Obj | None) -> dict[str, Any] | None:
    value = json_annotation(rb, PLACEMENT)
    return value if isinstance(value, dict) else None


def diagnosis_message(decision: PlacementDecision, limit: int = 20) -> str:
    """The failure and, per cluster, why it was excluded or why its share did not fit."""
    reason = decision.failure.reason if decision.failure else decision.reason
    parts = []
    for name, diag in sorted(decision.diagnosis.items())[:limit]:
        why = diag.infeasible or diag.reason
        if why and f"{name}: {why}" not in reason and why not in reason:
            parts.append(f"{name}: {why}")
    return f"{reason}" + (f" [{'; '.join(parts)}]" if parts else "")
