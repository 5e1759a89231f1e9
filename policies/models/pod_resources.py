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

from typing import Iterable, Mapping, Optional

from policies.models.core import Container, Pod, PodSpec, PodTemplateSpec
from policies.models.fields import resource_vector
from policies.models.volcano_batch import Job, TaskSpec
from policies.resources import PODS, ResourceVector


def container_request(container: Container) -> ResourceVector:
    """The container's effective request: ``requests``, defaulted from ``limits`` per resource."""
    resources = container.resources
    if resources is None:
        return ResourceVector()
    effective: dict[str, object] = dict(resources.limits or {})
    effective.update(resources.requests or {})
    return resource_vector(effective)


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


def job_min_resources(job: Job, priorities: Mapping[str, int] | None = None) -> ResourceVector:
    """The PodGroup ``minResources`` of a Volcano Job (volcano.md §9.5), without the ``pods`` slot.

    Tasks are taken in descending priority of their template's priorityClassName (looked up in
    ``priorities``; unknown or absent counts as 0; ties keep task order). When the job's gang is
    smaller than the tasks' minimums, the first ``minAvailable`` pods in that order count;
    otherwise each task's ``minAvailable`` pods count first, then the remaining replicas in
    priority order fill up to the job's ``minAvailable``.
    """
    lookup = priorities or {}
    tasks = list(job.spec.tasks or [])

    def priority(task: TaskSpec) -> int:
        spec = task.template.spec if task.template else None
        name = spec.priority_class_name if spec else None
        return lookup.get(name or "", 0)

    ordered = sorted(tasks, key=priority, reverse=True)  # sorted() is stable: ties keep task order
    wanted = job.spec.min_available or 0
    counts = {id(t): 0 for t in ordered}
    task_minimums = sum(max(t.min_available if t.min_available is not None else t.replica_count, 0) for t in ordered)
    remaining = wanted
    if wanted >= task_minimums:
        for task in ordered:
            own = task.min_available if task.min_available is not None else task.replica_count
            take = max(0, min(own, task.replica_count, remaining))
            counts[id(task)] = take
            remaining -= take
    for task in ordered:
        take = max(0, min(task.replica_count - counts[id(task)], remaining))
        counts[id(task)] += take
        remaining -= take
    total = ResourceVector()
    for task in ordered:
        if counts[id(task)]:
            total = total + template_request(task.template).scale(counts[id(task)])
    return ResourceVector({k: v for k, v in total.items() if k != PODS})
