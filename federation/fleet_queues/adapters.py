"""API objects (wire dicts, as the informers hold them) -> the fleet queue core's types.

A Queue's ``status.state`` is the state the federation enforces (absent: ``Open``); its weight
defaults to 1 and its priority to 0, as Volcano's webhook and scheduler read them. A Job's minimum
is its PodGroup's ``minResources`` (Volcano's ``calcPGMinResources``, policies/models/pod_resources),
its request every replica's request, and its priority the value of ``spec.priorityClassName``.
"""

from __future__ import annotations

from typing import Any, Mapping

from federation.fleet_queues.admission import job_vectors
from federation.fleet_queues.model import DEFAULT_QUEUE, FleetJob, FleetQueue
from policies.k8s.timestamps import instant
from policies.models.pod_resources import job_min_resources, template_request
from policies.models.volcano_batch import Job
from policies.resources import ResourceVector

Obj = Mapping[str, Any]


def queue_from_object(obj: Obj) -> FleetQueue:
    meta, spec = obj.get("metadata") or {}, obj.get("spec") or {}
    guarantee = spec.get("guarantee") or {}
    if isinstance(guarantee, Mapping) and "resource" in guarantee:
        guarantee = guarantee.get("resource") or {}
    state = (obj.get("status") or {}).get("state") or "Open"
    reclaimable = spec.get("reclaimable")
    return FleetQueue(
        name=str(meta.get("name") or ""),
        weight=int(spec.get("weight") or 1),
        priority=int(spec.get("priority") or 0),
        state=str(state),
        parent=spec.get("parent") or None,
        capability=ResourceVector.from_resource_list(spec.get("capability")),
        guarantee=ResourceVector.from_resource_list(guarantee),
        deserved=ResourceVector.from_resource_list(spec.get("deserved")),
        reclaimable=True if reclaimable is None else bool(reclaimable),
    )


def job_from_object(obj: Obj, priority_classes: Mapping[str, int] | None = None) -> FleetJob:
    """The job's queue, minimum, full request, priority and creation time."""
    job = Job.model_validate(dict(obj))
    classes = priority_classes or {}
    minimum = job_min_resources(job, classes)
    request = ResourceVector()
    for task in job.spec.tasks or []:
        request = request + template_request(task.template).scale(task.replica_count)
    minimum, request = job_vectors(minimum, request)
    meta = obj.get("metadata") or {}
    return FleetJob(
        key=(str(meta.get("namespace") or ""), str(meta.get("name") or "")),
        queue=job.spec.queue or DEFAULT_QUEUE,
        min_resources=minimum,
        request=request,
        priority=classes.get(job.spec.priority_class_name or "", 0),
        created=_timestamp(meta.get("creationTimestamp")),
    )


def _timestamp(text: Any) -> float:
    moment = instant(text)
    return moment.timestamp() if moment is not None else 0.0


def fleet_total(clusters: list[Obj]) -> tuple[dict[str, float], dict[str, float]]:
    """Σ members' ``resourceSummary.allocatable``, and Σ ``allocated + allocating`` (in use); a
    member that reports only node shapes counts their free room."""
    total: dict[str, float] = {}
    used: dict[str, float] = {}
    for cluster in clusters:
        status = cluster.get("status") or {}
        summary = status.get("resourceSummary") or {}
        if not summary.get("allocatable"):  # only node shapes reported: their free room is the total
            for shape in status.get("nodeShapes") or []:
                count = int(shape.get("count") or 0)
                for resource, amount in ResourceVector.from_resource_list(shape.get("free")).items():
                    total[resource] = total.get(resource, 0.0) + amount * count
            continue
        for target, fields in ((total, ("allocatable",)), (used, ("allocated", "allocating"))):
            for name in fields:
                for resource, amount in ResourceVector.from_resource_list(summary.get(name)).items():
                    target[resource] = target.get(resource, 0.0) + amount
    return total, used
