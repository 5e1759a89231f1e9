"""Pure conversions of the job kinds users may submit into the one kind Caldera runs: a Volcano Job.

* VCJob: flattened tasks (``resources``, ``pod``, ``restartPolicy``, ``lifecycle``) become pod
  templates with one container named after the task; ``runPolicy`` gives maxRetry/TTL.
* PyTorchJob / TFJob / MPIJob: each replica type becomes a task with a lowercase name
  (``Master`` -> ``master``, ``PS`` -> ``ps``, ``Launcher`` -> ``launcher``), the matching
  Volcano job plugin is enabled with flags naming those tasks, ``runPolicy.schedulingPolicy``
  gives minAvailable/queue/priorityClassName and ``runPolicy`` gives maxRetry/TTL.

No defaults are applied here (admission does that on the result), and inputs are never
modified. Every converted Job carries the annotation ``caldera.io/converted-from``.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Mapping, Optional, Sequence

from policies.errors import UnknownKind
from policies.models.core import PodSpec, PodTemplateSpec
from policies.models.kubeflow import MPIJob, PyTorchJob, ReplicaSpec, RunPolicy, TFJob
from policies.models.meta import ObjectMeta, TypedObject
from policies.models.volcano_batch import CONTAINER_FIELDS, Job, JobSpec, TaskSpec, VCJob, VCTask

CONVERTED_FROM = "caldera.io/converted-from"
CLEANUP_POLICY = "caldera.io/cleanup-task-policy"

#: Replica type -> (task name, plugin flag), in task order (the master first).
PYTORCH_ROLES = {"Master": ("master", "--master"), "Worker": ("worker", "--worker")}
TF_ROLES = {"Chief": ("chief", "--chief"), "Master": ("master", "--chief"), "PS": ("ps", "--ps"),
            "Worker": ("worker", "--worker"), "Evaluator": ("evaluator", "--evaluator")}
MPI_ROLES = {"Launcher": ("launcher", "--master"), "Worker": ("worker", "--worker")}
#: Container port names the training operators use; their number becomes the plugin's --port.
_PORT_NAMES = {"pytorch": "pytorchjob-port", "tensorflow": "tfjob-port", "mpi": "mpijob-port"}


def _metadata(meta: ObjectMeta, kind: str, extra: Optional[Mapping[str, str]] = None) -> ObjectMeta:
    out = meta.model_copy(deep=True)
    out.annotations = {**(out.annotations or {}), CONVERTED_FROM: kind, **(extra or {})}
    # identity belongs to the stored object, not to the converted copy
    out.resource_version = None
    return out


# --------------------------------------------------------------------------- VCJob


def _vctask_template(task: VCTask, index: int) -> PodTemplateSpec:
    pod = task.pod.model_dump(by_alias=True, exclude_none=True, mode="json") if task.pod else {}
    container: dict[str, Any] = {"name": task.name or f"default{index}"}
    pod_spec: dict[str, Any] = {}
    for key, value in pod.items():
        (container if key in CONTAINER_FIELDS else pod_spec)[key] = value
    if task.resources is not None:
        container["resources"] = task.resources.model_dump(by_alias=True, exclude_none=True, mode="json")
    if task.lifecycle is not None:
        container["lifecycle"] = task.lifecycle
    pod_spec["containers"] = [container, *pod_spec.get("containers", [])]
    if task.restart_policy is not None:
        pod_spec["restartPolicy"] = task.restart_policy
    return PodTemplateSpec.model_validate({"spec": pod_spec})


def vcjob_to_job(vcjob: VCJob) -> Job:
    spec = vcjob.spec
    tasks = [
        TaskSpec(
            name=task.name, replicas=task.replicas, min_available=task.min_available,
            template=_vctask_template(task, index), policies=task.policies, topology_policy=task.topology_policy,
            max_retry=task.max_retry, depends_on=task.depends_on, task_topology=task.task_topology,
        )
        for index, task in enumerate(spec.tasks or [])
    ]
    run = spec.run_policy
    extra: dict[str, str] = {}
    if run is not None and run.clean_up_task_policy:
        extra[CLEANUP_POLICY] = json.dumps(
            [p.model_dump(by_alias=True, exclude_none=True) for p in run.clean_up_task_policy], sort_keys=True)
    job_spec = JobSpec(
        scheduler_name=spec.scheduler_name, queue=spec.queue, min_available=spec.min_available,
        min_success=spec.min_success, priority_class_name=spec.priority_class_name,
        plugins={k: list(v) for k, v in spec.plugins.items()} if spec.plugins is not None else None,
        policies=spec.policies, volumes=spec.volumes, network_topology=spec.network_topology,
        max_retry=run.max_retry if run else None,
        ttl_seconds_after_finished=run.ttl_seconds_after_finished if run else None,
        tasks=tasks,
    )
    return Job(metadata=_metadata(vcjob.metadata, "VCJob", extra), spec=job_spec.model_copy(deep=True))


# --------------------------------------------------------------------------- Kubeflow


def _port_flag(plugin: str, templates: Sequence[Optional[PodTemplateSpec]]) -> list[str]:
    wanted = _PORT_NAMES[plugin]
    for template in templates:
        for container in (template.spec.containers or []) if template and template.spec else []:
            for port in container.ports or []:
                if port.name == wanted:
                    return [f"--port={port.container_port}"]
    return []


def _training_job(kind: str, obj: TypedObject, specs: Mapping[Any, ReplicaSpec],
                  roles: Mapping[str, tuple[str, str]], plugin: str, run: Optional[RunPolicy]) -> Job:
    tasks: list[TaskSpec] = []
    flags: dict[str, str] = {}
    for replica_type, (task_name, flag) in roles.items():
        replica = specs.get(replica_type)
        if replica is None:
            continue
        template = replica.template.model_copy(deep=True) if replica.template else PodTemplateSpec()
        if template.spec is None:
            template.spec = PodSpec()
        if replica.restart_policy is not None and template.spec.restart_policy is None:
            # the operators give pods the replica's policy; ExitCode is theirs alone (pods: Never)
            template.spec.restart_policy = "Never" if replica.restart_policy == "ExitCode" else replica.restart_policy
        tasks.append(TaskSpec(name=task_name, replicas=1 if replica.replicas is None else replica.replicas,
                              template=template))
        flags.setdefault(flag, task_name)
    scheduling = run.scheduling_policy if run else None
    total = sum(max(t.replica_count, 0) for t in tasks)  # negative replicas are admission's to report
    min_available = scheduling.min_available if scheduling and scheduling.min_available is not None else total
    remaining = min_available
    for task in tasks:  # gang minimum filled master-first, so the task minimums add up to the job's
        task.min_available = min(max(task.replica_count, 0), max(remaining, 0))
        remaining -= task.min_available
    args = [f"{flag}={name}" for flag, name in flags.items()]
    args += _port_flag(plugin, [t.template for t in tasks])
    scheduler_names = {t.template.spec.scheduler_name for t in tasks if t.template and t.template.spec
                       and t.template.spec.scheduler_name}
    job_spec = JobSpec(
        scheduler_name=scheduler_names.pop() if len(scheduler_names) == 1 else None,
        min_available=min_available,
        queue=scheduling.queue if scheduling else None,
        priority_class_name=scheduling.priority_class if scheduling else None,
        max_retry=run.backoff_limit if run else None,
        ttl_seconds_after_finished=run.ttl_seconds_after_finished if run else None,
        plugins={plugin: args, "svc": []},
        tasks=tasks,
    )
    return Job(metadata=_metadata(obj.metadata, kind), spec=job_spec)


def pytorchjob_to_job(job: PyTorchJob) -> Job:
    return _training_job("PyTorchJob", job, job.spec.pytorch_replica_specs, PYTORCH_ROLES, "pytorch",
                         job.spec.run_policy)


def tfjob_to_job(job: TFJob) -> Job:
    return _training_job("TFJob", job, job.spec.tf_replica_specs, TF_ROLES, "tensorflow", job.spec.run_policy)


def mpijob_to_job(job: MPIJob) -> Job:
    converted = _training_job("MPIJob", job, job.spec.mpi_replica_specs, MPI_ROLES, "mpi", job.spec.run_policy)
    assert converted.spec.plugins is not None
    converted.spec.plugins["ssh"] = []
    return converted


# --------------------------------------------------------------------------- dispatch

_CONVERTERS: dict[str, Callable[[Any], Job]] = {
    "VCJob": vcjob_to_job, "PyTorchJob": pytorchjob_to_job, "TFJob": tfjob_to_job, "MPIJob": mpijob_to_job,
}


def converts_to_job(kind: str) -> bool:
    return kind == "Job" or kind in _CONVERTERS


def to_job(obj: TypedObject) -> Job:
    """The Volcano Job for any job kind (a Job is returned as a copy)."""
    if isinstance(obj, Job):
        return obj.model_copy(deep=True)
    kind = obj.kind or obj.KIND
    converter = _CONVERTERS.get(kind)
    if converter is None:
        raise UnknownKind(obj.api_version, kind, ["Job", *_CONVERTERS], where="conversion to a Volcano Job")
    return converter(obj)
