"""Build a :class:`Snapshot` from Kubernetes objects (wire dicts or pydantic models).

Objects are what ``kubectl get -o yaml`` gives: ``v1`` Node and Pod,
``scheduling.volcano.sh/v1beta1`` PodGroup and Queue, ``scheduling.k8s.io/v1``
PriorityClass. Anything else is ignored here (the ConfigMap is read by the caller).

Volcano's cache rules apply (``reference/volcano.md`` §1–2): a pod joins the job named by
its ``scheduling.k8s.io/group-name`` annotation; a job needs its PodGroup and an existing
queue to be scheduled; the ``default`` and ``root`` queues exist even when not listed;
finished pods never occupy nodes. Objects that reference something missing are reported
in :attr:`Snapshot.problems` instead of failing the whole snapshot.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from contextlib import suppress
from typing import Any

import numpy as np

from member_agent.scheduler.framework.dims import Dimensions, empty_values
from member_agent.scheduler.framework.hypernodes import topology_of
from member_agent.scheduler.framework.object_fields import (
    bool_text,
    node_affinity,
    parse_time,
    plain_object,
    task_status,
)
from member_agent.scheduler.framework.pod_affinity import PodAffinity, parse_pod_affinity
from member_agent.scheduler.framework.pod_requests import pod_request, resource_list
from member_agent.scheduler.framework.snapshot import (
    JobSpec,
    NodeTable,
    QueueSpec,
    Snapshot,
    Taint,
    TaskSpec,
)
from member_agent.scheduler.framework.status import TaskStatus
from member_agent.scheduler.framework.topology import PodExtras, node_topology, pod_extras, shape_extra
from policies.k8s import tolerations as k8s_tolerations
from policies.k8s.object_view import meta_of

GROUP_NAME = "scheduling.k8s.io/group-name"
TASK_SPEC = "volcano.sh/task-spec"
TASK_PRIORITY = "volcano.sh/task-priority"
PREEMPTABLE = "volcano.sh/preemptable"
QUEUE_NAME = "scheduling.volcano.sh/queue-name"
DEFAULT_MAX_PODS = 110


class _Builder:
    def __init__(self, default_queue: str, scheduler_names: tuple[str, ...]) -> None:
        self.default_queue = default_queue
        self.scheduler_names = scheduler_names
        self.problems: list[str] = []
        self.nodes: list[Mapping[str, Any]] = []
        self.pods: list[Mapping[str, Any]] = []
        self.podgroups: dict[str, Mapping[str, Any]] = {}
        self.queues: dict[str, Mapping[str, Any]] = {}
        self.priority_classes: dict[str, int] = {}
        self.global_default: int | None = None
        self.shapes: dict[Any, int] = {}
        self.hypernodes: list[Mapping[str, Any]] = []

    def shape_id(self, key: Any) -> int:
        """A small int per distinct (request, selector, affinity, tolerations): cheap to hash."""
        found = self.shapes.get(key)
        if found is None:
            found = self.shapes[key] = len(self.shapes)
        return found

    def add(self, raw: Any) -> None:
        obj = plain_object(raw)
        kind = obj.get("kind")
        meta = meta_of(obj)
        if kind == "Node":
            self.nodes.append(obj)
        elif kind == "Pod":
            self.pods.append(obj)
        elif kind == "PodGroup":
            self.podgroups[f"{meta.get('namespace') or 'default'}/{meta.get('name')}"] = obj
        elif kind == "Queue":
            self.queues[str(meta.get("name"))] = obj
        elif kind == "PriorityClass":
            value = int(obj.get("value", 0))
            self.priority_classes[str(meta.get("name"))] = value
            if obj.get("globalDefault"):
                self.global_default = value
        elif kind == "HyperNode":
            self.hypernodes.append(obj)
        elif kind == "List":
            for item in obj.get("items") or ():
                self.add(item)

    # ------------------------------------------------------------------ nodes
    def node_table(self, dims: Dimensions) -> NodeTable:
        ordered = sorted(self.nodes, key=lambda n: str(meta_of(n).get("name")))
        n, d = len(ordered), len(dims)
        alloc = np.zeros((n, d))
        max_pods = np.zeros(n, dtype=np.int64)
        labels, taints, names = [], [], []
        topologies = []
        images: list[dict[str, int]] = []
        unsched = np.zeros(n, dtype=bool)
        for i, node in enumerate(ordered):
            meta = meta_of(node)
            topology, topology_problem = node_topology(node)
            topologies.append(topology)
            if topology_problem:
                self.problems.append(topology_problem)
            status = node.get("status") or {}
            values = resource_list(status.get("allocatable") or status.get("capacity"))
            node_labels = {str(k): str(v) for k, v in (meta.get("labels") or {}).items()}
            if node_labels.get("volcano.sh/oversubscription") == "true":
                ann = meta.get("annotations") or {}
                values["cpu"] = values.get("cpu", 0.0) + float(ann.get("volcano.sh/oversubscription-cpu", 0) or 0)
                values["memory"] = values.get("memory", 0.0) + float(ann.get("volcano.sh/oversubscription-memory", 0) or 0)
            pods = int(values.get("pods", DEFAULT_MAX_PODS))
            values["pods"] = float(pods)
            alloc[i] = dims.vector(values)
            max_pods[i] = pods
            names.append(str(meta.get("name")))
            labels.append(node_labels)
            images.append({str(name): int(image.get("sizeBytes") or 0) for image in status.get("images") or ()
                           if isinstance(image, Mapping) for name in image.get("names") or ()})
            spec = node.get("spec") or {}
            unsched[i] = bool(spec.get("unschedulable"))
            taints.append(tuple(
                Taint.from_wire(t) for t in spec.get("taints") or ()
            ))
        return NodeTable(
            names=tuple(names), labels=tuple(labels), taints=tuple(taints), unschedulable=unsched,
            allocatable=alloc, max_pods=max_pods, idle=alloc.copy(), used=np.zeros((n, d)),
            releasing=np.zeros((n, d)), pipelined=np.zeros((n, d)), pod_count=np.zeros(n, dtype=np.int64),
            nonzero_used=np.zeros((n, 2)), index={name: i for i, name in enumerate(names)},
            topology=tuple(topologies), images=tuple(images), lists_images=any(images),
        )

    # ------------------------------------------------------------------ tasks
    def task(self, pod: Mapping[str, Any], dims: Dimensions, request: dict[str, float], nz: tuple[float, float]) -> TaskSpec:
        meta = meta_of(pod)
        spec = pod.get("spec") or {}
        labels = meta.get("labels") or {}
        ns = str(meta.get("namespace") or "default")
        name = str(meta.get("name"))
        vec = dims.vector(request)
        vec.setflags(write=False)
        values = vec.tolist()
        selector = {str(k): str(v) for k, v in (spec.get("nodeSelector") or {}).items()}
        affinity = node_affinity(spec)
        tolerations = k8s_tolerations.tolerations(spec.get("tolerations"))
        status = task_status(pod)
        extras = pod_extras(pod)
        pod_affinity = parse_pod_affinity(spec, ns)
        annotated = self.annotated(pod, extras, (vec.tobytes(), tuple(sorted(selector.items())), affinity, tolerations),
                                   pod_affinity)
        return TaskSpec(
            uid=str(meta.get("uid") or f"{ns}-{name}"), name=name, namespace=ns,
            status=status, request=vec, nonzero=nz, node=spec.get("nodeName") or None,
            node_selector=selector, affinity=affinity, tolerations=tolerations,
            creation=parse_time(meta.get("creationTimestamp")),
            nominated_node=str((pod.get("status") or {}).get("nominatedNodeName") or ""),
            best_effort=empty_values(values), priority_class_name=str(spec.get("priorityClassName") or ""),
            gated=bool(spec.get("schedulingGates")),
            request_list=tuple(values),
            requested_dims=tuple(d for d, v in enumerate(values) if v > 0 and d != Dimensions.PODS),
            labels={str(k): str(v) for k, v in labels.items()}, pod_affinity=pod_affinity, **annotated,
        )

    def annotated(self, pod: Mapping[str, Any], extras: PodExtras, shape_base: tuple[Any, ...],
                  pod_affinity: PodAffinity, shape: int | None = None) -> dict[str, Any]:
        """The TaskSpec fields that read the pod's annotations (job, role, priority, preemptable, the
        ``extras`` and the shape, whose key ends with the extras' part): :meth:`task`'s, and what
        ``pod_versions.task_again`` computes again when only the annotations moved.
        ``shape_base``: the shape key's request bytes, sorted selector, affinity and tolerations;
        ``shape``: the shape's id when the caller knows the key is one already met (then unused)."""
        meta = meta_of(pod)
        spec = pod.get("spec") or {}
        ann = meta.get("annotations") or {}
        labels = meta.get("labels") or {}
        ns = str(meta.get("namespace") or "default")
        group = ann.get(GROUP_NAME)
        priority = spec.get("priority")
        if priority is None:  # what the Priority admission plugin would have set
            pc = spec.get("priorityClassName")
            priority = self.priority_classes.get(pc, 1) if pc else 1
        if TASK_PRIORITY in ann:
            with suppress(ValueError):
                priority = int(ann[TASK_PRIORITY])
        return {
            "job": f"{ns}/{group}" if group else "", "role": str(ann.get(TASK_SPEC) or labels.get(TASK_SPEC) or ""),
            "priority": int(priority), "preemptable": bool_text(ann.get(PREEMPTABLE, labels.get(PREEMPTABLE)), True),
            "extras": extras,
            "shape": self.shape_id((*shape_base, shape_extra(extras), pod_affinity)) if shape is None else shape,
        }

    # ------------------------------------------------------------------ queues and jobs
    def queue(self, name: str, obj: Mapping[str, Any] | None) -> QueueSpec:
        if obj is None:  # created by the Volcano cache at start-up
            return QueueSpec(name, 1, None, {}, {}, name != "root", "" if name == "root" else "root", "Open", 0, 0.0)
        spec = obj.get("spec") or {}
        guarantee = spec.get("guarantee") or {}
        if isinstance(guarantee, Mapping) and isinstance(guarantee.get("resource"), Mapping):
            guarantee = guarantee["resource"]
        capability = spec.get("capability")
        reclaimable = spec.get("reclaimable")
        return QueueSpec(
            name=name, weight=int(spec.get("weight", 1) if spec.get("weight") is not None else 1),
            capability=resource_list(capability) if capability else None,
            guarantee=resource_list(guarantee), deserved=resource_list(spec.get("deserved")),
            reclaimable=True if reclaimable is None else bool(reclaimable),
            parent=str(spec.get("parent") or ("" if name == "root" else "root")),
            state=str((obj.get("status") or {}).get("state") or "Open"), priority=int(spec.get("priority") or 0),
            creation=parse_time(meta_of(obj).get("creationTimestamp")),
            annotations={str(k): str(v) for k, v in (meta_of(obj).get("annotations") or {}).items()},
        )

    def build(self) -> Snapshot:
        requests = []
        extra: set[str] = set()
        for pod in self.pods:
            request, nz = pod_request(pod.get("spec") or {})
            requests.append((request, nz))
            extra.update(request)
        for node in self.nodes:
            extra.update(resource_list((node.get("status") or {}).get("allocatable")))
        for pg in self.podgroups.values():
            extra.update(resource_list((pg.get("spec") or {}).get("minResources")))
        dims = Dimensions(extra)
        nodes = self.node_table(dims)
        queues = {name: self.queue(name, obj) for name, obj in self.queues.items()}
        for implicit in ("root", self.default_queue):
            queues.setdefault(implicit, self.queue(implicit, None))

        tasks_by_job: dict[str, list[TaskSpec]] = {}
        residents: list[TaskSpec] = []
        shadow: dict[str, Mapping[str, Any]] = {}
        seen: dict[tuple[float, ...], int] = {}
        for pod, (request, nz) in zip(self.pods, requests, strict=True):
            task = self.task(pod, dims, request, nz)
            seen[task.request_list] = seen.get(task.request_list, 0) + 1
            self._account(nodes, task)
            if task.status in (TaskStatus.SUCCEEDED, TaskStatus.FAILED) and not task.job:
                continue
            scheduler = (pod.get("spec") or {}).get("schedulerName")
            ours = not scheduler or scheduler in self.scheduler_names
            if not task.job:
                if not ours or task.status != TaskStatus.PENDING:
                    self._resident(residents, task)
                    continue
                # The PodGroup controller gives a lone pod its own group of one.
                group = f"podgroup-{task.uid}"
                queue = str(((meta_of(pod).get("annotations") or {}).get(QUEUE_NAME)) or self.default_queue)
                shadow[f"{task.namespace}/{group}"] = {
                    "metadata": {"name": group, "namespace": task.namespace, "creationTimestamp": meta_of(pod).get("creationTimestamp")},
                    "spec": {"minMember": 1, "queue": queue, "priorityClassName": task.priority_class_name},
                    "_minResources": request,
                }
                task = _with_job(task, f"{task.namespace}/{group}")
            tasks_by_job.setdefault(task.job, []).append(task)

        jobs = []
        for job_id, pg in sorted({**self.podgroups, **shadow}.items()):
            members = tasks_by_job.pop(job_id, [])
            job = self._job(job_id, pg, members, dims, queues)
            if job is not None:
                jobs.append(job)
            else:
                for t in members:
                    self._resident(residents, t)
        for job_id, tasks in sorted(tasks_by_job.items()):
            for t in tasks:
                self.problems.append(f"Pod {t.key}: PodGroup {job_id} is not in the state; the pod is not scheduled")
                self._resident(residents, t)
        for arr in (nodes.allocatable, nodes.idle, nodes.used, nodes.releasing, nodes.pipelined, nodes.pod_count, nodes.nonzero_used):
            arr.setflags(write=False)
        total = nodes.allocatable.sum(axis=0) if len(nodes) else dims.zeros()
        tree = topology_of(self.hypernodes, nodes.names, nodes.labels)
        if tree is not None:
            self.problems.extend(tree.problems)
        return Snapshot(dims, nodes, tuple(jobs), queues, dict(self.priority_classes), tuple(self.problems), total,
                        tuple(sorted(residents, key=lambda t: t.uid)), workload=tuple(sorted(seen.items())),
                        topology=tree)

    @staticmethod
    def _resident(residents: list[TaskSpec], task: TaskSpec) -> None:
        """Keep a pod outside every job when it occupies a node (it was counted by _account)."""
        if task.node is not None and task.status not in (TaskStatus.SUCCEEDED, TaskStatus.FAILED, TaskStatus.PIPELINED):
            residents.append(task)

    def _account(self, nodes: NodeTable, task: TaskSpec) -> None:
        if task.node is None or task.status in (TaskStatus.SUCCEEDED, TaskStatus.FAILED):
            return
        i = nodes.index.get(task.node)
        if i is None:
            self.problems.append(f"Pod {task.key}: node {task.node} is not in the state; its resources are not counted")
            return
        req = task.request
        if task.status == TaskStatus.PIPELINED:
            nodes.pipelined[i] += req
            return
        nodes.idle[i] -= req
        nodes.used[i] += req
        if task.status == TaskStatus.RELEASING:
            nodes.releasing[i] += req
        nodes.pod_count[i] += 1
        nodes.nonzero_used[i] += task.nonzero

    def _job(self, job_id: str, pg: Mapping[str, Any], tasks: list[TaskSpec], dims: Dimensions,
             queues: Mapping[str, QueueSpec]) -> JobSpec | None:
        meta = meta_of(pg)
        spec = pg.get("spec") or {}
        queue = str(spec.get("queue") or self.default_queue)
        if queue not in queues:
            self.problems.append(f"PodGroup {job_id}: queue {queue} is not in the state; its {len(tasks)} pod(s) are not scheduled")
            return None
        pc = str(spec.get("priorityClassName") or "")
        if pc and pc in self.priority_classes:
            priority = self.priority_classes[pc]
        else:
            if pc:
                self.problems.append(f"PodGroup {job_id}: PriorityClass {pc} is not in the state; priority falls back to the default")
            priority = self.global_default if self.global_default is not None else 0
        raw_min = pg.get("_minResources", spec.get("minResources"))
        min_resources = None
        if raw_min is not None:
            values = raw_min if pg.get("_minResources") is not None else resource_list(raw_min)
            min_resources = dims.vector(values)
            min_resources.setflags(write=False)
        status = pg.get("status") or {}
        ann = meta.get("annotations") or {}
        labels = meta.get("labels") or {}
        tasks.sort(key=lambda t: t.uid)
        return JobSpec(
            uid=job_id, name=str(meta.get("name")), namespace=str(meta.get("namespace") or "default"), queue=queue,
            min_available=int(spec.get("minMember") or 0),
            min_task_member={str(k): int(v) for k, v in (spec.get("minTaskMember") or {}).items()},
            min_resources=min_resources, priority_class_name=pc, priority=int(priority),
            creation=parse_time(meta.get("creationTimestamp")), phase=str(status.get("phase") or ""),
            conditions=tuple(status.get("conditions") or ()), tasks=tuple(tasks),
            preemptable=bool_text(ann.get(PREEMPTABLE, labels.get(PREEMPTABLE)), False),
            annotations={str(k): str(v) for k, v in ann.items()},
            network_topology=spec.get("networkTopology") or None,
            sub_group_policy=tuple(spec.get("subGroupPolicy") or ()),
        )


def _with_job(task: TaskSpec, job: str) -> TaskSpec:
    from dataclasses import replace

    return replace(task, job=job)


def build_snapshot(objects: Iterable[Any], *, default_queue: str = "default",
                   scheduler_names: tuple[str, ...] = ("volcano",)) -> Snapshot:
    """A snapshot of every Node, Pod, PodGroup, Queue and PriorityClass in ``objects``."""
    builder = _Builder(default_queue, scheduler_names)
    for obj in objects:
        if obj is not None:
            builder.add(obj)
    return builder.build()


def describe_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True)
