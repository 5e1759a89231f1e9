"""A pod's resource request as Volcano's scheduler counts it, from its spec (wire dict).

Volcano's ``InitResreq`` (reference/volcano.md §1.2): the containers' requests summed, restartable
init containers (sidecars) added, each other init container with the sidecars started before it taken
as a step, the request the maximum of the sum and the largest step, plus ``pods: 1`` and the pod's
overhead. A container's unset request defaults to its limit. Beside it, kube-scheduler's non-zero
cpu and memory (a container without a request counts 100m cpu and 200 MiB) for its scores.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from policies.resources import to_internal

NONZERO_CPU = 100.0  # milli, kube-scheduler's default for a container without a request
NONZERO_MEMORY = 200.0 * 1024 * 1024


@lru_cache(maxsize=4096)
def _amount(name: str, text: str | int | float) -> float:
    return to_internal(name, text)


def resource_list(values: Mapping[str, Any] | None) -> dict[str, float]:
    out: dict[str, float] = {}
    for name, text in (values or {}).items():
        if str(name).startswith("count/"):
            continue
        out[str(name)] = _amount(str(name), text if isinstance(text, (int, float)) else str(text))
    return out


def _container_request(container: Mapping[str, Any]) -> dict[str, float]:
    resources = container.get("resources") or {}
    # Kubernetes defaults an unset request to the limit of the same resource.
    merged = dict(resource_list(resources.get("limits")))
    merged.update(resource_list(resources.get("requests")))
    return merged


def _add(into: dict[str, float], other: Mapping[str, float]) -> None:
    for k, v in other.items():
        into[k] = into.get(k, 0.0) + v


def _max(left: Mapping[str, float], right: Mapping[str, float]) -> dict[str, float]:
    return {k: max(left.get(k, 0.0), right.get(k, 0.0)) for k in set(left) | set(right)}


def pod_request(spec: Mapping[str, Any]) -> tuple[dict[str, float], tuple[float, float]]:
    """Volcano's ``InitResreq`` (volcano.md §1.2) and the kube-scheduler non-zero cpu/memory."""
    total: dict[str, float] = {}
    nz_cpu = nz_mem = 0.0
    for container in spec.get("containers") or []:
        req = _container_request(container)
        _add(total, req)
        nz_cpu += req.get("cpu") or NONZERO_CPU
        nz_mem += req.get("memory") or NONZERO_MEMORY
    sidecars: dict[str, float] = {}
    max_init: dict[str, float] = {}
    for container in spec.get("initContainers") or []:
        req = _container_request(container)
        if container.get("restartPolicy") == "Always":
            _add(sidecars, req)
            _add(total, req)
        else:
            step = dict(req)
            _add(step, sidecars)
            max_init = _max(max_init, step)
    result = _max(total, max_init)
    result["pods"] = result.get("pods", 0.0) + 1
    _add(result, resource_list(spec.get("overhead")))
    return result, (max(nz_cpu, max_init.get("cpu", 0.0)), max(nz_mem, max_init.get("memory", 0.0)))
