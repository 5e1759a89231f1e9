"""Volcano Job admission (volcano.md §10.1, §10.2): defaults on CREATE, then every rule.

The rules are the union of Volcano's CEL policy and Go webhook. :func:`validate_job_spec` is
shared with JobTemplate (a JobTemplate's spec is a JobSpec) and VCJob (converted first).
Rules that need stored queues run only when the context is online.
"""

from __future__ import annotations

from typing import Any, Optional

from policies.admission import AdmissionContext, Admitter
from policies.admission.names import (
    check_object_name,
    dns1123_label_error,
    dns1123_subdomain_error,
    key_path,
    qualified_name_error,
)
from policies.admission.pod_template import cpu_is_integer, validate_pod_spec
from policies.admission.priority_refs import check_priority_class
from policies.admission.queues import check_queue_accepts
from policies.admission.volcano_policies import validate_policies
from policies.errors import FieldError
from policies.models.volcano_batch import Job, JobSpec, NetworkTopology, TaskSpec

DEFAULT_QUEUE = "default"
DEFAULT_MAX_RETRY = 3
#: Job plugins the controller knows (volcano.md §9.3).
KNOWN_PLUGINS = ("svc", "ssh", "env", "tensorflow", "mpi", "pytorch", "ray", "hcclrank")
#: Plugins that need the headless service of ``svc``; ``mpi`` also needs ``ssh``.
NEEDS_SVC = ("tensorflow", "mpi", "pytorch", "ray")


# --------------------------------------------------------------------------- defaults


def default_job_spec(spec: JobSpec, scheduler_name: str) -> None:
    """Volcano's mutating webhook, in its order, applied in place."""
    if not spec.queue:
        spec.queue = DEFAULT_QUEUE
    if not spec.scheduler_name:
        spec.scheduler_name = scheduler_name
    if not spec.max_retry:
        spec.max_retry = DEFAULT_MAX_RETRY
    for index, task in enumerate(spec.tasks or []):
        if not task.name:
            task.name = f"default{index}"
        pod = task.template.spec if task.template else None
        if pod is not None and pod.host_network and not pod.dns_policy:
            pod.dns_policy = "ClusterFirstWithHostNet"
        if task.min_available is None:
            partition = task.partition_policy
            if partition and partition.min_partitions and partition.min_partitions > 0:
                task.min_available = partition.min_partitions * (partition.partition_size or 0)
            else:
                task.min_available = max(task.replica_count, 0)  # negative replicas are reported, not spread
        if not task.max_retry:
            task.max_retry = DEFAULT_MAX_RETRY
    if not spec.min_available:
        spec.min_available = sum(t.min_available or 0 for t in spec.tasks or [])
    if spec.plugins is not None:
        if any(p in spec.plugins for p in NEEDS_SVC) and "svc" not in spec.plugins:
            spec.plugins["svc"] = []
        if "mpi" in spec.plugins and "ssh" not in spec.plugins:
            spec.plugins["ssh"] = []


# --------------------------------------------------------------------------- rules


def validate_job_spec(spec: JobSpec, job_name: Optional[str], path: str = "spec") -> list[FieldError]:
    """Every rule of §10.2 a JobSpec breaks (no stored objects needed)."""
    errors: list[FieldError] = []
    tasks = spec.tasks or []
    if spec.min_available is not None and spec.min_available < 0:
        errors.append(FieldError(f"{path}.minAvailable", "job 'minAvailable' must be >= 0"))
    if spec.min_success is not None and spec.min_success < 1:
        errors.append(FieldError(f"{path}.minSuccess", "'minSuccess' must be >= 1"))
    if spec.max_retry is not None and spec.max_retry < 0:
        errors.append(FieldError(f"{path}.maxRetry", "'maxRetry' cannot be less than zero"))
    if spec.ttl_seconds_after_finished is not None and spec.ttl_seconds_after_finished < 0:
        errors.append(FieldError(f"{path}.ttlSecondsAfterFinished",
                                 "'ttlSecondsAfterFinished' cannot be less than zero"))
    if not tasks:
        errors.append(FieldError(f"{path}.tasks", "No task specified in job spec"))
    names: dict[str, int] = {}
    for index, task in enumerate(tasks):
        errors.extend(_validate_task(task, index, names, job_name, f"{path}.tasks[{index}]"))
    total = spec.total_replicas()
    # already reported per task: a task gang above its replicas, or negative replicas
    task_overflow = any((t.min_available or 0) > t.replica_count or t.replica_count < 0 for t in tasks)
    if tasks and not task_overflow and spec.min_available is not None and spec.min_available > total:
        errors.append(FieldError(f"{path}.minAvailable",
                                 f"job 'minAvailable' ({spec.min_available}) should not be greater than "
                                 f"total replicas in tasks ({total})"))
    errors.extend(validate_policies(spec.policies, f"{path}.policies"))
    errors.extend(_validate_plugins(spec, path))
    errors.extend(validate_network_topology(spec.network_topology, f"{path}.networkTopology"))
    errors.extend(_validate_volumes(spec, path))
    errors.extend(_validate_dependencies(tasks, path))
    return errors


def _validate_task(task: TaskSpec, index: int, names: dict[str, int], job_name: Optional[str],
                   at: str) -> list[FieldError]:
    errors: list[FieldError] = []
    label = task.name or ""
    if task.name is not None:
        problem = dns1123_label_error(task.name)
        if problem:
            errors.append(FieldError(f"{at}.name", f"task name {problem}"))
        elif task.name in names:
            errors.append(FieldError(f"{at}.name", f"duplicated task name found: {task.name!r} "
                                                   f"(also {at.rsplit('[', 1)[0]}[{names[task.name]}])"))
        else:
            names[task.name] = index
        if job_name and not problem:
            pod_name = f"{job_name}-{task.name}-{max(task.replica_count - 1, 0)}"
            pod_problem = qualified_name_error(pod_name)
            if pod_problem:
                errors.append(FieldError(f"{at}.name", f"generated pod name is invalid: {pod_problem}"))
    replicas = task.replica_count
    if replicas < 0:
        errors.append(FieldError(f"{at}.replicas", f"'replicas' < 0 in task: {label}"))
    if task.min_available is not None:
        if task.min_available < 0:
            errors.append(FieldError(f"{at}.minAvailable", f"'minAvailable' < 0 in task: {label}"))
        elif task.min_available > replicas >= 0:
            errors.append(FieldError(f"{at}.minAvailable",
                                     f"'minAvailable' ({task.min_available}) is greater than 'replicas' "
                                     f"({replicas}) in task: {label}"))
    if task.max_retry is not None and task.max_retry < 0:
        errors.append(FieldError(f"{at}.maxRetry", "'maxRetry' cannot be less than zero"))
    errors.extend(validate_policies(task.policies, f"{at}.policies"))
    pod = task.template.spec if task.template else None
    errors.extend(validate_pod_spec(pod, f"{at}.template.spec"))
    if task.topology_policy and task.topology_policy != "none" and pod is not None:
        for j, container in enumerate(pod.containers or []):
            if not cpu_is_integer(container):
                errors.append(FieldError(f"{at}.template.spec.containers[{j}].resources",
                                         f"the cpu request isn't an integer in spec.task[{index}] container[{j}]: "
                                         f"topologyPolicy {task.topology_policy!r} needs whole cpus"))
    partition = task.partition_policy
    if partition is not None:
        pat = f"{at}.partitionPolicy"
        total_p, size = partition.total_partitions or 0, partition.partition_size or 0
        if total_p <= 0:
            errors.append(FieldError(f"{pat}.totalPartitions", "'totalPartitions' must be > 0"))
        if size <= 0:
            errors.append(FieldError(f"{pat}.partitionSize", "'partitionSize' must be > 0"))
        if total_p > 0 and size > 0 and replicas != total_p * size:
            errors.append(FieldError(f"{at}.replicas", f"'replicas' ({replicas}) must equal totalPartitions × "
                                                       f"partitionSize ({total_p} × {size})"))
        min_p = partition.min_partitions or 0
        if min_p > 0 and task.min_available is not None and task.min_available != min_p * size:
            errors.append(FieldError(f"{at}.minAvailable", f"'minAvailable' ({task.min_available}) must equal "
                                                           f"minPartitions × partitionSize ({min_p} × {size})"))
        errors.extend(validate_network_topology(partition.network_topology, f"{pat}.networkTopology"))
    return errors


def validate_network_topology(topology: Optional[NetworkTopology], path: str) -> list[FieldError]:
    if topology is None:
        return []
    errors: list[FieldError] = []
    if topology.highest_tier_allowed is not None and topology.highest_tier_name is not None:
        errors.append(FieldError(path, "must not specify both highestTierAllowed and highestTierName"))
    if topology.highest_tier_allowed is not None and topology.highest_tier_allowed < 0:
        errors.append(FieldError(f"{path}.highestTierAllowed", "'highestTierAllowed' must be >= 0"))
    return errors


def _validate_plugins(spec: JobSpec, path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    plugins = spec.plugins or {}
    for name in plugins:
        if name not in KNOWN_PLUGINS:
            errors.append(FieldError(key_path(f"{path}.plugins", name),
                                     f"unable to find job plugin: {name} (known: {', '.join(KNOWN_PLUGINS)})"))
    if "mpi" in plugins:
        master = _flag(plugins["mpi"], "--master", "master")
        if master not in {t.name for t in spec.tasks or []}:
            errors.append(FieldError(f"{path}.plugins.mpi",
                                     f"The specified mpi master task was not found: {master!r}"))
    return errors


def _flag(args: list[str], flag: str, default: str) -> str:
    for arg in args:
        if arg.startswith(f"{flag}="):
            return arg.split("=", 1)[1]
    return default


def _validate_volumes(spec: JobSpec, path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    mounts: dict[str, int] = {}
    for index, volume in enumerate(spec.volumes or []):
        at = f"{path}.volumes[{index}]"
        if not volume.mount_path:
            errors.append(FieldError(f"{at}.mountPath", "mountPath is required"))
        elif ":" in volume.mount_path:
            errors.append(FieldError(f"{at}.mountPath", f"mountPath {volume.mount_path!r} must not contain ':'"))
        elif volume.mount_path in mounts:
            errors.append(FieldError(f"{at}.mountPath", f"duplicated mountPath found: {volume.mount_path!r}"))
        else:
            mounts[volume.mount_path] = index
        if volume.volume_claim is None and not volume.volume_claim_name:
            errors.append(FieldError(at, "either VolumeClaim or VolumeClaimName must be specified"))
        elif volume.volume_claim is not None and volume.volume_claim_name:
            errors.append(FieldError(at, "conflict: to use an existing PVC give only volumeClaimName; "
                                         "to create a new one give only volumeClaim"))
        if volume.volume_claim_name:
            problem = dns1123_subdomain_error(volume.volume_claim_name)
            if problem:
                errors.append(FieldError(f"{at}.volumeClaimName", f"PVC name {problem}"))
    return errors


def _validate_dependencies(tasks: list[TaskSpec], path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    names = {t.name for t in tasks if t.name}
    graph: dict[str, list[str]] = {}
    for index, task in enumerate(tasks):
        deps = (task.depends_on.name or []) if task.depends_on else []
        for j, dep in enumerate(deps):
            if dep not in names:
                errors.append(FieldError(f"{path}.tasks[{index}].dependsOn.name[{j}]",
                                         f"task {dep!r} is not defined in this job"))
        if task.name:
            graph[task.name] = [d for d in deps if d in names]
    if _has_cycle(graph):
        errors.append(FieldError(f"{path}.tasks", "job has dependencies between tasks, but doesn't form a "
                                                  "directed acyclic graph(DAG)"))
    return errors


def _has_cycle(graph: dict[str, list[str]]) -> bool:
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done

    def visit(node: str) -> bool:
        state[node] = 1
        for nxt in graph.get(node, []):
            if state.get(nxt) == 1 or (nxt not in state and visit(nxt)):
                return True
        state[node] = 2
        return False

    return any(node not in state and visit(node) for node in graph)


#: What a job update may change (Volcano: minAvailable, priorityClassName, task replicas/minAvailable).
def _immutable_view(spec: JobSpec) -> dict[str, Any]:
    wire = spec.model_dump(by_alias=True, exclude_none=True, mode="json")
    wire.pop("minAvailable", None)
    wire.pop("priorityClassName", None)
    for task in wire.get("tasks", []):
        task.pop("replicas", None)
        task.pop("minAvailable", None)
    return wire


def validate_job_update(new: JobSpec, old: JobSpec, scheduler_name: str) -> list[FieldError]:
    """UPDATE rules; both sides are defaulted first so omitted defaults are not changes."""
    new_d, old_d = new.model_copy(deep=True), old.model_copy(deep=True)
    default_job_spec(new_d, scheduler_name)
    default_job_spec(old_d, scheduler_name)
    if len(new_d.tasks or []) != len(old_d.tasks or []):
        return [FieldError("spec.tasks", "job updates may not add or remove tasks")]
    if _immutable_view(new_d) != _immutable_view(old_d):
        return [FieldError("spec", "job updates may not change fields other than `minAvailable`, "
                                   "`tasks[*].replicas under spec` and `PriorityClassName`")]
    return []


# --------------------------------------------------------------------------- the admitter


class JobAdmitter:
    def mutate(self, obj: Job, ctx: AdmissionContext, creating: bool) -> Job:
        if creating:
            default_job_spec(obj.spec, ctx.scheduler_name)
        return obj

    def validate(self, obj: Job, old: Job | None, ctx: AdmissionContext) -> list[FieldError]:
        errors: list[FieldError] = []
        check_object_name(errors, obj.metadata.name, "job")
        errors.extend(validate_job_spec(obj.spec, obj.metadata.name))
        if old is not None:
            errors.extend(validate_job_update(obj.spec, old.spec, ctx.scheduler_name))
        elif obj.spec.queue:
            errors.extend(check_queue_accepts(ctx, obj.spec.queue, "spec.queue", "job"))
        errors.extend(check_priority_classes(obj.spec, old.spec if old is not None else None, ctx))
        return errors


def check_priority_classes(spec: JobSpec, old: Optional[JobSpec], ctx: AdmissionContext) -> list[FieldError]:
    """The job's and every task template's priorityClassName name a PriorityClass (checked when set or
    changed, so a class deleted later does not freeze the job's other updates)."""
    named = [("spec.priorityClassName", spec.priority_class_name,
              old.priority_class_name if old is not None else None)]
    old_tasks = (old.tasks or []) if old is not None else []
    for index, task in enumerate(spec.tasks or []):
        pod = task.template.spec if task.template else None
        before = old_tasks[index].template if index < len(old_tasks) else None
        named.append((f"spec.tasks[{index}].template.spec.priorityClassName",
                      pod.priority_class_name if pod else None,
                      before.spec.priority_class_name if before is not None and before.spec else None))
    errors: list[FieldError] = []
    for path, name, previous in named:
        if old is None or name != previous:
            errors.extend(check_priority_class(ctx, name, path))
    return errors


ADMITTERS: dict[str, Admitter] = {"Job": JobAdmitter()}
