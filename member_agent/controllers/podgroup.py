"""The PodGroup of a Volcano Job (volcano.md §8.2, §9.1, §9.5).

``<job>-<uid>`` with ``minMember = minAvailable``, ``minTaskMember`` per task, the job's
queue and priorityClassName, ``minResources`` from :func:`min_resources`, the job's
networkTopology, and one subGroupPolicy per partitioned task. The scheduler owns the
status (phase Pending → Inqueue → Running → Completed / Unknown); the controller only
writes the spec and keeps the observed status.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional

from member_agent.controllers import naming
from member_agent.controllers.job_view import JobView, TaskView
from member_agent.controllers.plugins.base import owner_reference
from policies.lru import LRU
from policies.models.core import Container, PodTemplateSpec
from policies.models.pod_resources import template_request
from policies.models.volcano_scheduling import PodGroup
from policies.resources import PODS, ResourceVector


def task_priority(job: JobView, task: TaskView, priority_classes: Mapping[str, int]) -> int:
    spec = task.template.spec
    name = (spec.priority_class_name if spec else None) or job.priority_class_name
    if spec is not None and spec.priority is not None:
        return spec.priority
    return priority_classes.get(name or "", 0)


def _without_pods(request: ResourceVector) -> ResourceVector:
    return ResourceVector({k: v for k, v in request.items() if k != PODS})


def min_resources(job: JobView, priority_classes: Mapping[str, int]) -> ResourceVector:
    """Resources of the ``minAvailable`` pods that must start together (``calcPGMinResources``).

    Tasks are taken in descending priority (stable, so spec order breaks ties). When the job's
    minAvailable is below the tasks' summed minAvailable, the first minAvailable pods in that
    order count; otherwise each task's own minAvailable first, then the remaining replicas in
    priority order until the job's minAvailable is reached.
    """
    ordered = sorted(job.tasks, key=lambda t: -task_priority(job, t, priority_classes))
    requests = {t.name: _without_pods(template_request(t.template)) for t in ordered}
    counted: dict[str, int] = {t.name: 0 for t in ordered}
    remaining = job.min_available
    if job.min_available < job.total_task_min_available():
        for task in ordered:
            take = max(0, min(task.replicas, remaining))
            counted[task.name] += take
            remaining -= take
    else:
        for task in ordered:
            take = max(0, min(task.min_available, task.replicas, remaining))
            counted[task.name] += take
            remaining -= take
        for task in ordered:
            take = max(0, min(task.replicas - counted[task.name], remaining))
            counted[task.name] += take
            remaining -= take
    total = ResourceVector()
    for task in ordered:
        total = total + requests[task.name].scale(counted[task.name])
    return total


def _sub_group_policies(job: JobView) -> Optional[list[dict[str, Any]]]:
    policies = []
    for task in job.job.spec.tasks or []:
        partition = task.partition_policy
        if partition is None or not task.name:
            continue
        entry: dict[str, Any] = {
            "name": task.name,
            "subGroupSize": partition.partition_size or 1,
            "minSubGroups": partition.min_partitions or 0,
            "labelSelector": {"matchLabels": {naming.TASK_SPEC: task.name, naming.JOB_NAME: job.name}},
            "matchLabelKeys": [naming.PARTITION_ID],
        }
        if partition.network_topology is not None:
            entry["networkTopology"] = partition.network_topology.to_wire()
        policies.append(entry)
    return policies or None


def _quantities(resource_list: Optional[Mapping[str, Any]]) -> Optional[tuple[tuple[str, type, Any], ...]]:
    return None if resource_list is None else tuple((k, type(v), v) for k, v in resource_list.items())


def _container_key(container: Container) -> Any:
    resources = container.resources
    return None if resources is None else (_quantities(resources.limits), _quantities(resources.requests))


def _request_key(template: PodTemplateSpec) -> Any:
    """All that ``template_request`` reads of a pod template: the containers' and init containers'
    requests and limits (each quantity with its type, in order), the init containers' restart
    policies and the overhead."""
    spec = template.spec
    if spec is None:
        return None
    return (tuple(_container_key(c) for c in spec.containers or ()),
            tuple((c.restart_policy, _container_key(c)) for c in spec.init_containers or ()),
            _quantities(spec.overhead))


#: ``minResources`` as written on the PodGroup, by what :func:`min_resources` reads of the Job: the
#: job's minAvailable and each task's name, replicas, minAvailable, priority and template request.
#: Jobs of one shape share it (a trace replay's jobs come in a few shapes), where working it out
#: again (parsing each task's quantities, summing vectors) was a sixth of a Job's first pass.
_MIN_RESOURCES: LRU[Any, dict[str, str]] = LRU(256)  # as many as _DESIRED (defined below)


def _min_resource_list(job: JobView, priority_classes: Mapping[str, int]) -> dict[str, str]:
    key = (job.min_available, tuple((t.name, t.replicas, t.min_available, task_priority(job, t, priority_classes),
                                     _request_key(t.template)) for t in job.tasks))
    found = _MIN_RESOURCES.get(key)
    if found is None:
        found = min_resources(job, priority_classes).to_resource_list()
        _MIN_RESOURCES.put(key, found)
    return dict(found)  # the caller's own (the kept one is only read)


def desired_spec(job: JobView, priority_classes: Mapping[str, int]) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "minMember": job.min_available,
        "minTaskMember": {t.name: t.min_available for t in job.tasks},
        "queue": job.queue,
        "minResources": _min_resource_list(job, priority_classes),
    }
    if job.priority_class_name:
        spec["priorityClassName"] = job.priority_class_name
    if job.job.spec.network_topology is not None:
        spec["networkTopology"] = job.job.spec.network_topology.to_wire()
    sub_groups = _sub_group_policies(job)
    if sub_groups:
        spec["subGroupPolicy"] = sub_groups
    return spec


def build_pod_group(job: JobView, priority_classes: Mapping[str, int]) -> PodGroup:
    return PodGroup.model_validate({
        "metadata": {
            "name": job.pod_group_name,
            "namespace": job.namespace,
            "annotations": dict(job.job.metadata.annotations or {}),
            "labels": dict(job.job.metadata.labels or {}),
            "ownerReferences": [owner_reference(job)],
        },
        "spec": desired_spec(job, priority_classes),
    })


#: Desired PodGroups by the identity of the Job's spec and metadata and the PriorityClass values.
#: A controller pass replaces only the Job's status (``model_copy`` keeps the spec and metadata
#: objects), so every pass of an unchanged Job asks the same question: building and validating
#: the PodGroup again was half of a pass in a trace replay. Entries hold the objects they are
#: keyed by, so an id cannot be reused while its entry lives.
#: Entries kept (least recently used go first): a Job's passes come in bursts, and each entry holds
#: a PodGroup model, which a long-running agent should not keep for every Job it ever ran.
_DESIRED_SIZE = 256
_DESIRED: LRU[tuple[int, int, tuple[tuple[str, int], ...]], tuple[Any, Any, PodGroup]] = LRU(_DESIRED_SIZE)


def _desired(job: JobView, priority_classes: Mapping[str, int]) -> PodGroup:
    spec, metadata = job.job.spec, job.job.metadata
    key = (id(spec), id(metadata), tuple(sorted(priority_classes.items())))
    hit = _DESIRED.get(key)
    if hit is not None and hit[0] is spec and hit[1] is metadata:
        return hit[2]
    desired = build_pod_group(job, priority_classes)
    _DESIRED.put(key, (spec, metadata, desired))
    return desired


#: Whether an observed PodGroup spec matches a desired one, by the identity of both (the observed
#: model keeps its spec while only its status moves, the desired one is memoised above).
_SAME: LRU[tuple[int, int], tuple[Any, Any, bool]] = LRU(_DESIRED_SIZE)


def _same_spec(observed: PodGroup, desired: PodGroup) -> bool:
    key = (id(observed.spec), id(desired.spec))
    hit = _SAME.get(key)
    if hit is not None and hit[0] is observed.spec and hit[1] is desired.spec:
        return hit[2]
    # Model equality first (same field values, no serialising; the PodGroup the controller wrote
    # keeps the desired spec itself); the wire forms decide otherwise, both through the PodGroup's
    # own serializer (PodGroupSpec's would be a second schema built in every agent: memory), the
    # desired one only then (it was dumped for every Job, and the models are nearly always equal).
    same = observed.spec == desired.spec or observed.to_wire().get("spec") == desired.to_wire().get("spec")
    _SAME.put(key, (observed.spec, desired.spec, same))
    return same


def reconcile_pod_group(job: JobView, observed: Optional[PodGroup],
                        priority_classes: Mapping[str, int]) -> tuple[Optional[str], PodGroup]:
    """``("create" | "update" | None, desired PodGroup)``; an update keeps the observed status."""
    desired = _desired(job, priority_classes)
    if observed is None:
        return "create", desired
    if _same_spec(observed, desired):
        return None, observed
    updated = observed.model_copy(update={"spec": desired.spec})
    return "update", updated


def pod_group_phase(pod_group: Optional[PodGroup]) -> str:
    return (pod_group.status.phase if pod_group is not None and pod_group.status else None) or ""
