"""API objects -> the placement core's request types.

Accepts the pydantic models (``policies.models``) or their wire dicts (camelCase, as in
YAML), so callers and tests can use either. Defaults are applied the way the Volcano and
Karmada webhooks do when admission has not run: task ``minAvailable`` = its replicas, job
``minAvailable`` = the sum of the tasks', ``replicaScheduling`` absent = Duplicated, Divided
without a preference = Weighted, a spread constraint without a field = ``cluster`` with
``minGroups: 1``. Rules a placement cannot work around (weights below 1, both affinity
forms) raise :class:`~policies.errors.ValidationFailed` naming the field.
"""

from __future__ import annotations

import json
from typing import Any, Iterable, Mapping

from federation.placement.indices import from_ranges
from federation.placement.request import (
    AssumedWorkload,
    ClusterAffinity,
    ClusterState,
    ClusterTopology,
    JobDemand,
    JobTopology,
    NodeShape,
    Options,
    PlacementRequest,
    PlacementSpec,
    PreviousCluster,
    PreviousPlacement,
    Requirement,
    ResourceSummary,
    SpreadConstraint,
    StaticWeight,
    Taint,
    TaskDemand,
    TopologyDomain,
    TopologyTier,
    labels,
    resources,
)
from policies.errors import FieldError, ValidationFailed
from policies.k8s import label_selector
from policies.k8s import tolerations as k8s_tolerations
from policies.k8s.object_view import conditions_of, meta_of
from policies.k8s.timestamps import epoch_seconds
from policies.models.core import PodTemplateSpec
from policies.models.pod_resources import template_request
from policies.resources import ResourceVector
from policies.topology_report import parse_topology

Obj = Mapping[str, Any] | Any


def wire(obj: Obj) -> dict[str, Any]:
    if isinstance(obj, Mapping):
        return dict(obj)
    if hasattr(obj, "to_wire"):
        return dict(obj.to_wire())
    return dict(obj.model_dump(by_alias=True, exclude_none=True, mode="json"))


def _ref(w: Mapping[str, Any]) -> str:
    meta = meta_of(w)
    ns = meta.get("namespace")
    return f"{w.get('kind', '?')} {ns + '/' if ns else ''}{meta.get('name', '<unnamed>')}"


def timestamp(text: str | None) -> float | None:
    """RFC 3339 text -> seconds since the epoch (None stays None)."""
    return epoch_seconds(text) if text else None


def _vector(resource_list: Mapping[str, Any] | None) -> tuple[tuple[str, float], ...]:
    return resources(dict(ResourceVector.from_resource_list(resource_list or {})))


# ---------------------------------------------------------------- job


def job_priority(spec: Mapping[str, Any], priority_classes: Mapping[str, Obj] | None) -> tuple[int | None, bool]:
    """(the job's priority, whether it may preempt) from its PriorityClass: ``spec.priorityClassName``,
    else the first task template's, else the ``globalDefault`` class. Unknown class or no
    classes given: (None, False)."""
    if not priority_classes:
        return None, False
    name = spec.get("priorityClassName") or next(
        (n for t in spec.get("tasks") or [] if (n := ((t.get("template") or {}).get("spec") or {}).get("priorityClassName"))),
        None)
    classes = {k: wire(v) for k, v in priority_classes.items()}
    pc = classes.get(name) if name else next((c for c in classes.values() if c.get("globalDefault")), None)
    if pc is None or not isinstance(pc.get("value"), int):
        return None, False
    return int(pc["value"]), pc.get("preemptionPolicy") != "Never"


def job_demand(job: Obj, priority_classes: Mapping[str, Obj] | None = None) -> JobDemand:
    """The job's demand; with ``priority_classes`` (name -> PriorityClass), also its priority."""
    w = wire(job)
    meta, spec = meta_of(w), w.get("spec") or {}
    tasks = []
    for i, task in enumerate(spec.get("tasks") or []):
        replicas = int(task.get("replicas") or 0)
        minimum = task.get("minAvailable")
        template = task.get("template") or {}
        request = template_request(PodTemplateSpec.model_validate(template)) if template else ResourceVector({"pods": 1})
        tasks.append(TaskDemand(
            name=task.get("name") or f"task-{i}",
            replicas=replicas,
            min_available=replicas if minimum is None else int(minimum),
            request=resources(dict(request)),
            node_selector=labels((template.get("spec") or {}).get("nodeSelector")),
        ))
    job_min = spec.get("minAvailable")
    priority, preempts = job_priority(spec, priority_classes)
    return JobDemand(
        namespace=meta.get("namespace") or "default",
        name=meta.get("name") or "<unnamed>",
        uid=meta.get("uid") or "",
        tasks=tuple(tasks),
        min_available=sum(t.min_available for t in tasks) if job_min is None else int(job_min),
        priority=priority,
        preempts=preempts,
        topology=job_topology(spec.get("networkTopology")),
    )


def job_topology(raw: Mapping[str, Any] | None) -> JobTopology | None:
    """``spec.networkTopology`` as the core reads it (admission has checked its fields)."""
    if not raw:
        return None
    tier = raw.get("highestTierAllowed")
    return JobTopology(mode="soft" if raw.get("mode") == "soft" else "hard",
                       highest_tier=None if tier is None else int(tier),
                       highest_tier_name=str(raw.get("highestTierName") or ""))


def _shapes(raw: Any) -> tuple[NodeShape, ...]:
    return tuple(NodeShape(int(s.get("count") or 0), _vector(s.get("free")), labels(s.get("labels"))) for s in raw or [])


def cluster_topology(raw: Mapping[str, Any] | None, cluster: str) -> ClusterTopology | None:
    """``status.topology`` (docs/protocol.md "Topology"); a malformed one raises naming the field."""
    if raw is None:
        return None
    parsed = parse_topology(raw, cluster)  # checked; read from the wire dict (quantities as written)
    return ClusterTopology(parsed.top_tier, tuple(
        TopologyTier(int(t["tier"]), str(t.get("tierName") or ""),
                     tuple(TopologyDomain(str(d["name"]), _shapes(d.get("shapes"))) for d in t.get("top") or []))
        for t in raw.get("tiers") or []))


# ---------------------------------------------------------------- policy


def cluster_affinity(a: Mapping[str, Any] | None, name: str = "", path: str = "clusterAffinity") -> ClusterAffinity:
    """Karmada's ClusterAffinity; an invalid labelSelector raises InvalidSelector naming ``path``."""
    a = a or {}
    fields = tuple(Requirement(e["key"], e["operator"], tuple(e.get("values") or ()))
                   for e in (a.get("fieldSelector") or {}).get("matchExpressions") or [])
    return ClusterAffinity(tuple(a.get("clusterNames") or ()), tuple(a.get("exclude") or ()),
                           label_selector.parse(a.get("labelSelector"), f"{path}.labelSelector"), fields, name)


def _affinity(a: Mapping[str, Any] | None, name: str, path: str, errors: list[FieldError]) -> ClusterAffinity:
    """cluster_affinity, with a bad labelSelector added to ``errors`` (Karmada refuses the policy)."""
    try:
        return cluster_affinity(a, name, path)
    except label_selector.InvalidSelector as exc:
        errors.extend(exc.errors)
        return ClusterAffinity(name=name)


def placement_spec(policy: Obj) -> PlacementSpec:
    w = wire(policy)
    ref = _ref(w)
    placement = (w.get("spec") or {}).get("placement") or {}
    base = "spec.placement"
    errors: list[FieldError] = []
    if placement.get("clusterAffinity") and placement.get("clusterAffinities"):
        errors.append(FieldError(f"{base}.clusterAffinities", "clusterAffinity and clusterAffinities cannot both be set"))
    terms = placement.get("clusterAffinities")
    if terms:
        affinities = tuple(_affinity(t, t.get("affinityName") or f"#{i}", f"{base}.clusterAffinities[{i}]", errors)
                           for i, t in enumerate(terms))
    else:
        affinities = (_affinity(placement.get("clusterAffinity"), "", f"{base}.clusterAffinity", errors),)
    spread = []
    for i, s in enumerate(placement.get("spreadConstraints") or []):
        by_field, by_label = s.get("spreadByField") or "", s.get("spreadByLabel") or ""
        if by_field and by_label:
            errors.append(FieldError(f"{base}.spreadConstraints[{i}]", "spreadByField and spreadByLabel cannot both be set"))
        spread.append(SpreadConstraint(by_field or ("" if by_label else "cluster"), by_label,
                                       int(s.get("minGroups") if s.get("minGroups") is not None else 1),
                                       int(s.get("maxGroups") or 0)))
    scheduling = placement.get("replicaScheduling")
    weights: list[StaticWeight] = []
    if scheduling is None or (scheduling.get("replicaSchedulingType") or "Divided") == "Duplicated":
        strategy = "Duplicated"
    elif (scheduling.get("replicaDivisionPreference") or "Weighted") == "Aggregated":
        strategy = "Aggregated"
    else:
        pref = scheduling.get("weightPreference") or {}
        dynamic = pref.get("dynamicWeight")
        if dynamic and dynamic != "AvailableReplicas":
            errors.append(FieldError(f"{base}.replicaScheduling.weightPreference.dynamicWeight",
                                     f"unsupported value {dynamic!r}: only AvailableReplicas"))
        strategy = "DynamicWeight" if dynamic else "StaticWeight"
        for i, rule in enumerate(pref.get("staticWeightList") or []):
            weight = rule.get("weight")
            if not isinstance(weight, int) or weight < 1:
                errors.append(FieldError(f"{base}.replicaScheduling.weightPreference.staticWeightList[{i}].weight",
                                         f"must be an integer of at least 1, got {weight!r}"))
                continue
            target = _affinity(rule.get("targetCluster"), "", f"{base}.replicaScheduling.weightPreference."
                                                              f"staticWeightList[{i}].targetCluster", errors)
            weights.append(StaticWeight(target, weight))
    if errors:
        raise ValidationFailed(ref, errors)
    meta = meta_of(w)
    namespace = str(meta.get("namespace") or "")
    return PlacementSpec(affinities, k8s_tolerations.tolerations(placement.get("clusterTolerations")), tuple(spread),
                         strategy, tuple(weights),  # type: ignore[arg-type]
                         f"{namespace + '/' if namespace else ''}{meta.get('name', '')}")


# ---------------------------------------------------------------- clusters


def cluster_state(cluster: Obj, lease_renewed: float | None = None, lease_duration: float = 40.0) -> ClusterState:
    w = wire(cluster)
    meta, spec, status = meta_of(w), w.get("spec") or {}, w.get("status") or {}
    ready = next((c for c in conditions_of(status) if c.get("type") == "Ready"), None)
    ready_status = str(ready.get("status")) if ready else "Unknown"
    if ready_status not in ("True", "False", "Unknown"):
        ready_status = "Unknown"
    shapes = status.get("nodeShapes")
    summary = status.get("resourceSummary")
    zones = tuple(spec.get("zones") or ([spec["zone"]] if spec.get("zone") else []))
    return ClusterState(
        name=meta.get("name") or "<unnamed>",
        labels=labels(meta.get("labels")),
        provider=spec.get("provider") or "",
        region=spec.get("region") or "",
        zones=zones,
        taints=tuple(Taint.from_wire(t) for t in spec.get("taints") or []),
        ready=ready_status,  # type: ignore[arg-type]
        ready_since=timestamp(ready.get("lastTransitionTime")) if ready else None,
        lease_renewed=lease_renewed,
        lease_duration=lease_duration,
        node_shapes=None if shapes is None else tuple(
            NodeShape(int(s.get("count") or 0), _vector(s.get("free")), labels(s.get("labels"))) for s in shapes
        ),
        summary=None if summary is None else ResourceSummary(
            _vector(summary.get("allocatable")), _vector(summary.get("allocated")), _vector(summary.get("allocating"))
        ),
        deleting=bool(meta.get("deletionTimestamp")),
        preemptible=tuple(sorted(
            (int(entry["belowPriority"]), tuple(NodeShape(int(s.get("count") or 0), _vector(s.get("free")),
                                                          labels(s.get("labels"))) for s in entry.get("shapes") or []))
            for entry in status.get("preemptibleShapes") or [])),
        topology=cluster_topology(status.get("topology"), meta.get("name") or "<unnamed>"),
    )


# ---------------------------------------------------------------- history


def previous_placement(binding: Obj | None) -> PreviousPlacement:
    """From a ResourceBinding: spec.clusters (with per-task ``components``), Fresh mode, affinity term."""
    if binding is None:
        return PreviousPlacement()
    w = wire(binding)
    spec, status = w.get("spec") or {}, w.get("status") or {}
    held = _held_indices((meta_of(w).get("annotations") or {}).get(PLACEMENT_RECORD))
    clusters = tuple(
        PreviousCluster(c["name"], int(c.get("replicas") or 0),
                        tuple((p["name"], int(p.get("replicas") or 0)) for p in c.get("components") or []),
                        tuple(sorted(held.get(c["name"], {}).items())))
        for c in spec.get("clusters") or []
    )
    triggered, last = timestamp(spec.get("rescheduleTriggeredAt")), timestamp(status.get("lastScheduledTime"))
    fresh = triggered is not None and (last is None or triggered > last)
    return PreviousPlacement(clusters, fresh, status.get("schedulerObservingAffinityName") or "")


#: the binding annotation where the federation records its last division (offsets, indices)
PLACEMENT_RECORD = "caldera.io/placement"


def _held_indices(record: object) -> dict[str, dict[str, tuple[int, ...]]]:
    """cluster -> task -> global indices, from the binding's placement record (JSON text)."""
    try:
        data = json.loads(record) if isinstance(record, str) else None
    except ValueError:
        return {}
    out: dict[str, dict[str, tuple[int, ...]]] = {}
    clusters = data.get("clusters") if isinstance(data, dict) else None
    for name, entry in (clusters or {}).items() if isinstance(clusters, dict) else ():
        for task, share in ((entry or {}).get("tasks") or {}).items():
            if not isinstance(share, dict) or "offset" not in share:
                continue
            if share.get("indices"):
                indices = tuple(from_ranges(share["indices"]))
            else:
                start = int(share["offset"])
                indices = tuple(range(start, start + int(share.get("replicas") or 0)))
            out.setdefault(name, {})[task] = indices
    return out


def assumed_share(cluster: str, job: JobDemand, per_task: Mapping[str, int]) -> AssumedWorkload:
    """A share dispatched but not yet confirmed, to deduct from ``cluster`` in later placements."""
    tasks = [t for t in job.tasks if per_task.get(t.name, 0) > 0]
    return AssumedWorkload(cluster, tuple((t.request, per_task[t.name]) for t in tasks),
                           tuple(t.node_selector for t in tasks))


def build_request(job: Obj, policy: Obj, clusters: Iterable[Obj], previous: Obj | None = None,
                  now: float = 0.0, assumed: tuple[AssumedWorkload, ...] = (),
                  options: Options | None = None,
                  priority_classes: Mapping[str, Obj] | None = None) -> PlacementRequest:
    """The core's request; ``priority_classes`` (name -> PriorityClass) resolve the job's priority,
    without which placement never counts on preemption."""
    return PlacementRequest(
        job=job_demand(job, priority_classes),
        spec=placement_spec(policy),
        clusters=tuple(c if isinstance(c, ClusterState) else cluster_state(c) for c in clusters),
        now=now,
        previous=previous_placement(previous),
        assumed=assumed,
        options=options or Options(),
    )
