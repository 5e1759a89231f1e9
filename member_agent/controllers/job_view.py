"""A Job read once into the shape the controller works on: defaults applied, share resolved.

Admission normally defaults a Job before it is stored (volcano.md §10.1). The controller
applies the same defaults again so that a Job arriving from a Work, or written by a test,
behaves identically. A share of a federated job (docs/protocol.md) carries the global
offset and total of each task; every index the controller writes is ``offset + i``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Mapping, Optional

from member_agent.controllers import naming
from member_agent.controllers.timestamps import parse_rfc3339
from policies.errors import FieldError, ValidationFailed
from policies.lru import LRU
from policies.models.core import PodTemplateSpec
from policies.models.volcano_batch import Job, LifecyclePolicy, TaskTopology

DEFAULT_MAX_RETRY = 3
#: A task maxRetry of -1 means "never raise TaskFailed".
UNLIMITED = -1


@dataclass(frozen=True)
class TaskView:
    name: str
    position: int
    replicas: int
    min_available: int
    #: ``minAvailable`` was written (or defaulted by admission); the Running rule only checks those.
    min_available_set: bool
    template: PodTemplateSpec
    policies: tuple[LifecyclePolicy, ...]
    topology_policy: Optional[str]
    max_retry: int
    depends_on: tuple[str, ...]
    depends_iteration: str
    partition_size: Optional[int]
    #: Global index of this share's first replica (0 for a plain job).
    offset: int
    #: Replicas of the whole federated job (== replicas for a plain job).
    total: int
    #: The task's ``taskTopology`` as compact JSON (``None`` without one): the job controller puts it
    #: on the task's pods in ``volcano.sh/task-topology``, where the task-topology plugin reads it.
    task_topology: Optional[str] = None
    #: The share's global indices when they are not one range from ``offset`` (a re-placement
    #: kept its running pods' indices, ``caldera.io/task-indices``); empty otherwise.
    indices: tuple[int, ...] = ()

    def global_index(self, local: int) -> int:
        return self.indices[local] if self.indices else self.offset + local

    def local_indices(self) -> range:
        return range(self.replicas)

    @property
    def template_hostname(self) -> Optional[str]:
        return self.template.spec.hostname if self.template.spec else None

    @property
    def template_subdomain(self) -> Optional[str]:
        return self.template.spec.subdomain if self.template.spec else None


@dataclass(frozen=True)
class JobView:
    job: Job
    name: str
    namespace: str
    uid: str
    tasks: tuple[TaskView, ...]
    min_available: int
    min_success: Optional[int]
    max_retry: int
    queue: str
    scheduler_name: str
    priority_class_name: Optional[str]
    policies: tuple[LifecyclePolicy, ...]
    plugins: Mapping[str, list[str]]
    ttl_seconds_after_finished: Optional[int]
    created: Optional[datetime]
    #: True when the Job is a share of a federated job.
    is_share: bool
    #: ``caldera.io/world-size`` of the federated job, when given.
    world_size: Optional[int]
    #: Tasks of the federated job this share has no replicas of: name -> total replicas.
    remote_tasks: Mapping[str, int] = field(default_factory=dict)
    #: What passes derive from the Job's spec and metadata alone (its plugins...), kept once per
    #: spec: the views of the same spec for later statuses share this dict (``_with_job``).
    derived: dict[Any, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def ref(self) -> str:
        return self.job.ref()

    @property
    def pod_group_name(self) -> str:
        return naming.pod_group_name(self.name, self.uid)

    def task(self, name: str) -> Optional[TaskView]:
        for task in self.tasks:
            if task.name == name:
                return task
        return None

    def total_replicas(self) -> int:
        """Replicas of this (share of the) job: what the controller itself runs."""
        return sum(task.replicas for task in self.tasks)

    def total_task_min_available(self) -> int:
        return sum(task.min_available for task in self.tasks)

    def federated_tasks(self) -> list[tuple[str, int]]:
        """Every task of the whole federated job with its total replicas, in spec order."""
        listed = [(task.name, task.total) for task in self.tasks]
        return listed + [(name, total) for name, total in self.remote_tasks.items()]

    def federated_total(self, task: str) -> int:
        for name, total in self.federated_tasks():
            if name == task:
                return total
        return 0

    def desired_pod_names(self) -> Mapping[str, tuple[TaskView, int]]:
        """Pod name -> (task, local index) for every replica this controller must run: read from the
        spec and metadata alone, so made once per spec (``derived``; every SyncJob asks). Read only."""
        names: Optional[dict[str, tuple[TaskView, int]]] = self.derived.get("desired_pod_names")
        if names is None:
            names = self.derived["desired_pod_names"] = {}
            for task in self.tasks:
                for local in task.local_indices():
                    names[naming.pod_name(self.name, task.name, task.global_index(local))] = (task, local)
        return names


def _annotation_json(job: Job, key: str, errors: list[FieldError]) -> Optional[dict[str, int]]:
    annotations = job.metadata.annotations or {}
    if key not in annotations:
        return None
    path = f"metadata.annotations[{key}]"
    try:
        value: Any = json.loads(annotations[key])
    except json.JSONDecodeError as exc:
        errors.append(FieldError(path, f"must be a JSON object of task name to integer: {exc.msg}"))
        return None
    if not isinstance(value, dict) or not all(
        isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in value.values()
    ):
        errors.append(FieldError(path, "must be a JSON object mapping task names to non-negative integers"))
        return None
    return {str(k): int(v) for k, v in value.items()}


def _annotation_ranges(job: Job, errors: list[FieldError]) -> dict[str, tuple[int, ...]]:
    """``caldera.io/task-indices``: task -> list of half-open ``[start, end)`` ranges, as indices."""
    raw = (job.metadata.annotations or {}).get(naming.TASK_INDICES)
    if raw is None:
        return {}
    path = f"metadata.annotations[{naming.TASK_INDICES}]"
    try:
        value: Any = json.loads(raw)
    except json.JSONDecodeError as exc:
        errors.append(FieldError(path, f"must be a JSON object of task name to [start, end) ranges: {exc.msg}"))
        return {}
    out: dict[str, tuple[int, ...]] = {}
    if isinstance(value, dict):
        for task, ranges in value.items():
            ok = isinstance(ranges, list) and all(
                isinstance(r, list) and len(r) == 2 and all(isinstance(x, int) and not isinstance(x, bool)
                                                            for x in r) and 0 <= r[0] < r[1] for r in ranges)
            if not ok:
                break
            indices = tuple(i for start, end in ranges for i in range(start, end))
            if len(set(indices)) != len(indices):
                break
            out[str(task)] = indices
        else:
            return out
    errors.append(FieldError(path, "must map task names to lists of non-overlapping [start, end) ranges "
                                   "of non-negative integers"))
    return {}


def _task_max_retry(value: Optional[int]) -> int:
    # Volcano's TaskFailed check treats an unset or zero task maxRetry as the default 3.
    if value is None or value == 0:
        return DEFAULT_MAX_RETRY
    return value


#: Views by the identity of the Job's spec and metadata, the only parts a view reads. A controller
#: pass replaces only the Job's status (``model_copy`` keeps the spec and metadata objects), and
#: every pass reads the Job twice (observe_pods, reconcile): the same view, built once per spec.
#: Entries hold the objects they are keyed by, so an id cannot be reused while its entry lives.
#: A Job's passes come in bursts; a long-running agent keeps only recent ones.
_VIEWS: LRU[tuple[int, int], tuple[Any, Any, JobView]] = LRU(256)


def view_job(job: Job) -> JobView:
    """Read ``job``; raise :class:`ValidationFailed` (naming the field) for a malformed share."""
    spec, metadata = job.spec, job.metadata
    key = (id(spec), id(metadata))
    hit = _VIEWS.get(key)
    if hit is not None and hit[0] is spec and hit[1] is metadata:
        view = hit[2]
        if view.job is not job:  # the same spec and metadata, another status: share the rest
            view = _with_job(view, job)
            _VIEWS.put(key, (spec, metadata, view))  # the pass's second read finds this Job's own view
        return view
    view = _read_job(job)  # a malformed share raises every time: errors are not kept
    _VIEWS.put(key, (spec, metadata, view))
    return view


def _with_job(view: JobView, job: Job) -> JobView:
    # a frozen dataclass's fields, all but the Job shared (dataclasses.replace and copy.copy would
    # re-run __init__ or __reduce_ex__, several times dearer)
    clone = object.__new__(JobView)
    clone.__dict__.update(view.__dict__)
    clone.__dict__["job"] = job
    return clone


def _read_job(job: Job) -> JobView:
    errors: list[FieldError] = []
    offsets = _annotation_json(job, naming.TASK_OFFSETS, errors)
    totals = _annotation_json(job, naming.TASK_TOTALS, errors)
    explicit = _annotation_ranges(job, errors)
    world_size: Optional[int] = None
    raw_world = (job.metadata.annotations or {}).get(naming.WORLD_SIZE)
    if raw_world is not None:
        if raw_world.isdigit():
            world_size = int(raw_world)
        else:
            errors.append(FieldError(f"metadata.annotations[{naming.WORLD_SIZE}]", "must be a non-negative integer"))
    spec = job.spec
    tasks: list[TaskView] = []
    for position, task in enumerate(spec.tasks or []):
        name = task.name or f"default{position}"
        replicas = task.replicas or 0
        offset = (offsets or {}).get(name, 0)
        total = (totals or {}).get(name, offset + replicas)
        indices = explicit.get(name, ())
        if indices:
            if len(indices) != replicas or max(indices) >= total:
                errors.append(FieldError(
                    f"metadata.annotations[{naming.TASK_INDICES}]",
                    f"task {name!r}: {len(indices)} indices (max {max(indices)}) for {replicas} replicas "
                    f"of total {total}; need exactly one index per replica, each below the total",
                ))
        elif total < offset + replicas:
            errors.append(FieldError(
                f"metadata.annotations[{naming.TASK_TOTALS}]",
                f"task {name!r}: total {total} is smaller than offset {offset} + replicas {replicas}",
            ))
        partition = task.partition_policy
        min_available = task.min_available
        if min_available is None and partition is not None and partition.min_partitions:
            min_available = partition.min_partitions * (partition.partition_size or 1)
        depends = task.depends_on
        tasks.append(TaskView(
            name=name,
            position=position,
            replicas=replicas,
            min_available=replicas if min_available is None else min_available,
            min_available_set=task.min_available is not None,
            template=task.template or PodTemplateSpec(),
            policies=tuple(task.policies or ()),
            topology_policy=task.topology_policy,
            max_retry=_task_max_retry(task.max_retry),
            depends_on=tuple(depends.name or ()) if depends else (),
            depends_iteration=(depends.iteration or "all") if depends else "all",
            partition_size=partition.partition_size if partition else None,
            offset=offset,
            total=total,
            task_topology=_task_topology_json(task.task_topology),
            indices=indices,
        ))
    if errors:
        raise ValidationFailed(job.ref(), errors)
    local_names = {task.name for task in tasks}
    remote = {name: total for name, total in (totals or {}).items() if name not in local_names}
    min_available = spec.min_available
    if min_available is None:
        min_available = sum(task.min_available for task in tasks)
    return JobView(
        job=job,
        name=job.metadata.name or "",
        namespace=job.metadata.namespace or "default",
        uid=job.metadata.uid or "",
        tasks=tuple(tasks),
        min_available=min_available,
        min_success=spec.min_success,
        max_retry=DEFAULT_MAX_RETRY if spec.max_retry is None else spec.max_retry,
        queue=spec.queue or naming.DEFAULT_QUEUE,
        scheduler_name=spec.scheduler_name or naming.DEFAULT_SCHEDULER,
        priority_class_name=spec.priority_class_name,
        policies=tuple(spec.policies or ()),
        plugins=dict(spec.plugins or {}),
        ttl_seconds_after_finished=spec.ttl_seconds_after_finished,
        created=parse_rfc3339(job.metadata.creation_timestamp),
        is_share=offsets is not None or totals is not None,
        world_size=world_size,
        remote_tasks=remote,
    )


def _task_topology_json(topology: Optional[TaskTopology]) -> Optional[str]:
    wire = topology.to_wire() if topology is not None else {}
    return json.dumps(wire, sort_keys=True, separators=(",", ":")) if wire else None
