"""The agent's view of a fleet queue: capped at what the federation admitted to this cluster.

Queues are the federation's (one set for the fleet); copied as they are, a Queue with
``capability: {nvidia.com/gpu: 16}`` would allow 16 GPUs in *every* member cluster. Each share the
federation dispatches carries its allotment (annotation ``caldera.io/queue-allotment`` on the
Work's Job: the share's replicas' requests). The session scheduler sees, per queue, a derived
Queue whose ``capability`` is, on every dimension an allotment names, the smaller of the spec's
capability and the sum of the allotments of the cluster's live Works in that queue (its guarantee
and deserved clipped to it), so local enqueue and allocate never go past what the federation
admitted here. Local proportion or capacity still order the jobs inside the cluster, and local
reclaim works within these allotments. A queue with no allotment here is left as it is (a Work
from a federation without fleet queues carries none).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping
from typing import Any

from policies.models.karmada_work import QUEUE_ALLOTMENT
from policies.resources import ResourceVector, to_quantity_text

Obj = Mapping[str, Any]


def allotments(jobs: Iterable[Obj | None]) -> dict[str, ResourceVector]:
    """Σ allotment per queue over the cluster's live shares."""
    out: dict[str, ResourceVector] = {}
    for job in jobs:
        if not job:
            continue
        raw = ((job.get("metadata") or {}).get("annotations") or {}).get(QUEUE_ALLOTMENT)
        if raw is None:
            continue
        try:
            amounts = ResourceVector.from_resource_list(json.loads(raw))
        except (ValueError, TypeError, AttributeError):
            continue  # a malformed annotation caps nothing (the federation writes it; admission checks the Job)
        queue = (job.get("spec") or {}).get("queue") or "default"
        out[queue] = out.get(queue, ResourceVector()) + amounts
    return out


def allotted_queues(queues: Iterable[Obj], jobs: Iterable[Obj | None]) -> list[Obj]:
    """The queues as this cluster's scheduler should see them (new objects; the inputs are not changed)."""
    allotted = allotments(jobs)
    out: list[Obj] = []
    for queue in queues:
        name = (queue.get("metadata") or {}).get("name") or ""
        queue = _without_fleet_status(queue)
        if name not in allotted:
            out.append(queue)
            continue
        view = copy.deepcopy(dict(queue))
        spec = view.setdefault("spec", {})
        capability = ResourceVector.from_resource_list(spec.get("capability"))
        capped = dict(spec.get("capability") or {})
        for resource, amount in allotted[name].items():
            limit = min(amount, capability[resource]) if resource in capability else amount
            capped[resource] = to_quantity_text(resource, limit)
        spec["capability"] = capped
        limits = ResourceVector.from_resource_list(capped)
        for field in ("deserved",):
            if spec.get(field):
                spec[field] = _clip(spec[field], limits)
        guarantee = spec.get("guarantee") or {}
        if isinstance(guarantee, Mapping) and guarantee.get("resource"):
            spec["guarantee"] = {**guarantee, "resource": _clip(guarantee["resource"], limits)}
        out.append(view)
    return out


def _without_fleet_status(queue: Obj) -> Obj:
    """The scheduler reads only ``status.state``; the fleet numbers the federation writes there change
    with every report and would make the session cache re-derive every job."""
    status = queue.get("status")
    if not status or set(status) <= {"state"}:
        return queue
    return {**queue, "status": {"state": status["state"]} if status.get("state") else {}}


def _clip(resources: Mapping[str, Any], limits: ResourceVector) -> dict[str, Any]:
    values = ResourceVector.from_resource_list(resources)
    return {name: (to_quantity_text(name, min(values[name], limits[name])) if name in limits else quantity)
            for name, quantity in resources.items()}
