"""Builders for the reclaim tests: a ledger whose placed gangs hold what they use per cluster."""

from __future__ import annotations

from typing import Any, Mapping

from federation.fleet_queues import FleetJob, FleetQueues
from federation.fleet_queues.adapters import queue_from_object
from federation.fleet_queues.reclaim import Placed, Reclaimer
from policies.resources import ResourceVector
from tests.fleet_queues.builders import vec


def placed(spec: Mapping[str, Any]) -> Placed:
    usage = {cluster: dict(vec(amounts)) for cluster, amounts in spec["usage"].items()}
    request: dict[str, float] = {}
    for amounts in usage.values():
        for name, amount in amounts.items():
            request[name] = request.get(name, 0.0) + amount
    return Placed(("ns", spec["name"]), spec.get("queue", "default"), int(spec.get("priority", 0)), request, usage,
                  bool(spec.get("preemptable", True)), float(spec.get("created", 0)))


def reclaimer(spec: Mapping[str, Any]) -> Reclaimer:
    pods = tuple((dict(vec(request)), int(count)) for request, count in spec["pods"])
    return Reclaimer(("ns", spec["name"]), spec.get("queue", "default"), pods, int(spec.get("priority", 0)))


def ledger(queues: list[Mapping[str, Any]], total: Mapping[str, Any], gangs: list[Placed],
           waiting: Reclaimer) -> FleetQueues:
    """Every gang placed (Allocated) and the reclaimer admitted (Allocated, its placement failed)."""
    fleet = FleetQueues()
    fleet.set_queues(queue_from_object(q) for q in queues)
    fleet.set_capacity(vec(total))
    for gang in gangs:
        fleet.add_job(FleetJob(gang.key, gang.queue, ResourceVector(gang.request), ResourceVector(gang.request),
                               gang.priority))
        fleet.mark_allocated(gang.key)
    fleet.add_job(FleetJob(waiting.key, waiting.queue, ResourceVector(waiting.request), ResourceVector(waiting.request)))
    fleet.mark_allocated(waiting.key)
    return fleet
