"""What a pod asks for, in scheduler units, aggregated the way Volcano does (volcano.md §1.2).

* a container's request is its ``requests``; a resource with a limit but no request is
  requested at its limit (Kubernetes defaults requests from limits);
* the pod's request is the per-resource maximum of
  (regular containers + sidecars) and (each non-sidecar init container + the sidecars
  started before it), plus ``pods: 1``, plus ``spec.overhead``.

Sidecars are init containers with ``restartPolicy: Always``: they keep running, so they
add to the regular containers' sum and to every later init container.
"""

from __future__ import annotations

from typing import Iterable, Optional

from policies.models.core import Container, Pod, PodSpec, PodTemplateSpec
from policies.models.fields import resource_vector
from policies.resources import PODS, ResourceVector


def container_request(container: Container) -> ResourceVector:
    """The container's effective request: ``requests``, defaulted from ``limits`` per resource."""
    resources = container.resources
    if resources is None:
        return ResourceVector()
    effective: dict[str, object] = dict(resources.limits or {})
    effective.update(resources.requests or {})
    return resource_vector(effective)  # type: ignore[arg-type]


def container_limit(container: Container) -> ResourceVector:
    resources = container.resources
    return resource_vector(resources.limits if resources else None)


def _sum(containers: Iterable[Container]) -> ResourceVector:
    total = ResourceVector()
    for container in containers:
        total = total + container_request(container)
    return total


def pod_spec_request(spec: Optional[PodSpec]) -> ResourceVector:
    """A pod spec's request with ``pods: 1`` (Volcano's ``Resreq``)."""
    if spec is None:
        return ResourceVector({PODS: 1.0})
    containers_total = _sum(spec.containers or [])
    init_peak = ResourceVector()
    sidecars = ResourceVector()
    for init in spec.init_containers or []:
        request = container_request(init)
        if init.restart_policy == "Always":
            sidecars = sidecars + request
            containers_total = containers_total + request
        else:
            init_peak = init_peak.max_with(request + sidecars)
    total = containers_total.max_with(init_peak)
    total = total + ResourceVector({PODS: 1.0})
    if spec.overhead:
        total = total + resource_vector(spec.overhead)
    return total


def template_request(template: Optional[PodTemplateSpec]) -> ResourceVector:
    return pod_spec_request(template.spec if template else None)


def pod_request(pod: Pod) -> ResourceVector:
    return pod_spec_request(pod.spec)


def is_best_effort(request: ResourceVector) -> bool:
    """Nothing but ``pods`` requested (Volcano's BestEffort)."""
    return request.is_empty()
