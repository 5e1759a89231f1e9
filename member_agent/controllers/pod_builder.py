"""One task replica → one Pod, the way Volcano's ``createJobPod`` builds it (volcano.md §9.1).

The pod is the task template plus: the owner reference to the Job; Volcano's annotations and
labels (group name, task spec and index, job name/namespace, queue, job version, template
uid, retry count, NUMA policy, partition id); the job's schedulerName and priorityClassName
where the template has none, with ``priority`` resolved from a known PriorityClass; the
job's volumes; Caldera's simulated-kubelet annotations; then every job plugin's edits.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Mapping, Optional, Sequence

from member_agent.controllers import naming
from member_agent.controllers.job_view import JobView, TaskView
from member_agent.controllers.plugins.base import JobPlugin, PluginContext, owner_reference
from policies.lru import LRU
from policies.models.core import Pod
from policies.wire_objects import copy_wire


def job_volume_claims(job: JobView) -> list[tuple[str, str]]:
    """``(claim name, mount path)`` of every job volume; an unnamed claim gets ``<job>-volume-<i>``."""
    claims = []
    for i, volume in enumerate(job.job.spec.volumes or []):
        claims.append((volume.volume_claim_name or f"{job.name}-volume-{i}", volume.mount_path))
    return claims


def job_pvcs(job: JobView) -> list[dict[str, Any]]:
    """PersistentVolumeClaims the controller creates: job volumes that carry a ``volumeClaim`` spec."""
    claims = []
    for (claim, _), volume in zip(job_volume_claims(job), job.job.spec.volumes or [], strict=True):
        if volume.volume_claim is None:
            continue  # a named claim without a spec must already exist
        claims.append({
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": claim, "namespace": job.namespace, "ownerReferences": [owner_reference(job)]},
            "spec": copy.deepcopy(volume.volume_claim),
        })
    return claims


def _annotations(job: JobView, task: TaskView, index: int, version: int, retry_count: int,
                 template: Mapping[str, str]) -> dict[str, str]:
    annotations = dict(template)
    annotations.update({
        naming.TASK_INDEX: str(index),
        naming.TASK_SPEC: task.name,
        naming.GROUP_NAME: job.pod_group_name,
        naming.JOB_NAME: job.name,
        naming.QUEUE_NAME: job.queue,
        naming.JOB_VERSION: str(version),
        naming.TEMPLATE_UID: naming.template_uid(job.name, task.name),
        naming.JOB_RETRY_COUNT: str(retry_count),
    })
    if task.topology_policy:
        annotations[naming.NUMA_POLICY] = task.topology_policy
    if task.task_topology:
        annotations[naming.TASK_TOPOLOGY] = task.task_topology
    job_annotations = job.job.metadata.annotations or {}
    for key in naming.JOB_TO_POD_ANNOTATIONS + naming.SIM_ANNOTATIONS:
        if key in job_annotations:
            annotations.setdefault(key, job_annotations[key])
    return annotations


def _labels(job: JobView, task: TaskView, index: int, template: Mapping[str, str]) -> dict[str, str]:
    labels = dict(template)
    labels.update({
        naming.TASK_INDEX: str(index),
        naming.JOB_NAME: job.name,
        naming.TASK_SPEC: task.name,
        naming.JOB_NAMESPACE: job.namespace,
        naming.QUEUE_NAME: job.queue,
    })
    job_labels = job.job.metadata.labels or {}
    for key in naming.JOB_TO_POD_LABELS:
        if key in job_labels:
            labels.setdefault(key, job_labels[key])
    if task.partition_size:
        labels[naming.PARTITION_ID] = str(index // task.partition_size)
    return labels


def _defaults(job: JobView, spec: dict[str, Any], priority_classes: Mapping[str, int]) -> None:
    if not spec.get("schedulerName"):
        spec["schedulerName"] = job.scheduler_name
    if not spec.get("priorityClassName") and job.priority_class_name:
        spec["priorityClassName"] = job.priority_class_name
    class_name = spec.get("priorityClassName")
    if class_name and class_name in priority_classes and spec.get("priority") is None:
        spec["priority"] = priority_classes[class_name]
    for claim, mount_path in job_volume_claims(job):
        volumes = spec.setdefault("volumes", [])
        if not any(v.get("name") == claim for v in volumes):
            volumes.append({"name": claim, "persistentVolumeClaim": {"claimName": claim}})
        for container in spec.get("containers") or []:
            mounts = container.setdefault("volumeMounts", [])
            if not any(m.get("mountPath") == mount_path for m in mounts):
                mounts.append({"name": claim, "mountPath": mount_path})


@dataclass(frozen=True)
class TaskPrototype:
    """The parts of a task's pods that do not depend on the replica: computed once per task."""

    template_labels: Mapping[str, str]
    template_annotations: Mapping[str, str]
    spec: Mapping[str, Any]


def _template_wire(job: JobView, task: TaskView) -> dict[str, Any]:
    """The task's pod template as wire data, read from the Job's own dump: ``to_wire()`` on the
    nested template would build PodTemplateSpec's serializer, a second copy of the pod spec schema."""
    tasks = job.job.spec.tasks or []
    if task.position < len(tasks) and tasks[task.position].template is task.template:
        return job.job.to_wire()["spec"]["tasks"][task.position].get("template") or {}
    return task.template.to_wire()  # no template in the Job: the view's default one


def prototype(job: JobView, task: TaskView, priority_classes: Mapping[str, int]) -> TaskPrototype:
    template = _template_wire(job, task)
    meta = template.get("metadata") or {}
    spec = copy_wire(template.get("spec") or {})  # the Job's dump: wire data
    _defaults(job, spec, priority_classes)
    return TaskPrototype(meta.get("labels") or {}, meta.get("annotations") or {}, spec)


#: Prototypes by the identity of the Job's spec and the task's template, with what else
#: :func:`prototype` reads: the job's name where a volume claim is named after it, and the
#: PriorityClass values. The spec holds every other input (scheduler and PriorityClass names,
#: volumes, the template), and a spec model is never changed in place: a Job's passes share it
#: (``model_copy`` replaces the status only), and so do a replay's Jobs of one shape
#: (``simulator/job_models.py``), where dumping the Job for each job's pods was a tenth of the pass
#: that creates them. Entries hold the objects they are keyed by (ids are not reused while they
#: live) and are only read (``build_pod`` copies what it edits).
_PROTOTYPES: LRU[Any, tuple[Any, Any, TaskPrototype]] = LRU(256)


def task_prototype(job: JobView, task: TaskView, priority_classes: Mapping[str, int]) -> TaskPrototype:
    """:func:`prototype`, kept while the spec and template objects live."""
    spec = job.job.spec
    named_after_job = job.name if spec.volumes else None  # an unnamed claim is ``<job>-volume-<i>``
    key = (id(spec), id(task.template), task.position, named_after_job, tuple(sorted(priority_classes.items())))
    hit = _PROTOTYPES.get(key)
    if hit is not None and hit[0] is spec and hit[1] is task.template:
        return hit[2]
    made = prototype(job, task, priority_classes)
    _PROTOTYPES.put(key, (spec, task.template, made))
    return made


def build_pod(
    job: JobView,
    task: TaskView,
    local_index: int,
    *,
    version: int,
    retry_count: int,
    plugins: Sequence[JobPlugin],
    ctx: PluginContext,
    priority_classes: Mapping[str, int],
    shape: Optional[TaskPrototype] = None,
) -> Pod:
    """The pod for replica ``local_index`` of ``task`` (named by its global index).

    Pass ``shape`` (from :func:`prototype`) when building many replicas of one task.
    """
    shape = shape or prototype(job, task, priority_classes)
    index = task.global_index(local_index)
    pod: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": naming.pod_name(job.name, task.name, index),
            "namespace": job.namespace,
            "labels": _labels(job, task, index, shape.template_labels),
            "annotations": _annotations(job, task, index, version, retry_count, shape.template_annotations),
            "ownerReferences": [owner_reference(job)],
        },
        "spec": copy_wire(dict(shape.spec)),  # wire data (the prototype's), edited by the plugins below
    }
    for plugin in plugins:
        plugin.on_pod_create(pod, ctx)
    return Pod.model_validate(pod)
