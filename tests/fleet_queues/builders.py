"""Small builders for the fleet queue tests (quantities as manifests write them)."""

from __future__ import annotations

from typing import Any, Mapping

from federation.fleet_queues import FleetConf, FleetJob, FleetQueues
from federation.fleet_queues.adapters import queue_from_object
from policies.resources import ResourceVector


def vec(resources: Mapping[str, Any] | None) -> ResourceVector:
    return ResourceVector.from_resource_list(resources or {})


def job(spec: Mapping[str, Any]) -> FleetJob:
    minimum = vec(spec.get("min"))
    return FleetJob(key=("ns", spec["name"]), queue=spec.get("queue", "default"), min_resources=minimum,
                    request=vec(spec["request"]) if "request" in spec else minimum,
                    priority=int(spec.get("priority", 0)), created=float(spec.get("created", 0)))


def fleet(case: Mapping[str, Any]) -> FleetQueues:
    conf = FleetConf(**case["conf"]) if "conf" in case else FleetConf()
    queues = FleetQueues(conf)
    queues.set_queues(queue_from_object(q) for q in case.get("queues") or [])
    queues.set_capacity(vec(case.get("total")))
    for spec in case.get("jobs") or []:
        queues.add_job(job(spec))
    return queues
