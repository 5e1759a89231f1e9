"""Volcano's scheduler cache, kept incrementally: a snapshot costs what changed, not the cluster.

:func:`builder.build_snapshot` derives a :class:`Snapshot` from every object each time
(0.6–2.2 s on a full 1,213-node cluster). :class:`SchedulerCache` is fed the same objects
as events (:meth:`upsert` / :meth:`delete`, what an informer delivers) and keeps the derived
state current: per-node accounting rows, each pod's :class:`TaskSpec`, the members of each
job, and the GPUs held by pods of no job (folded into :class:`NodeDevices` rows, so device
plugins do not replay them every session). :meth:`snapshot` then copies a few numpy arrays
and re-derives only the jobs that changed.

The rules are the builder's, applied per object (the builder's own helpers do the work):
a pod joins the job of its ``scheduling.k8s.io/group-name``; a lone pending pod of ours
gets a group of one; other pods on a node are *residents* (counted, never scheduled).
A change of a Node or PriorityClass, or a resource name not seen before, rebuilds
everything on the next snapshot (it changes every row or every task).
"""

from __future__ import annotations

import bisect
import json
from dataclasses import replace
from typing import Any, Iterable, Mapping

import numpy as np

from member_agent.scheduler.framework.builder import (
    QUEUE_NAME,
    _Builder,
    _meta,
    plain_object,
)
from member_agent.scheduler.framework.dims import Dimensions
from member_agent.scheduler.framework.hypernodes import topology_of
from member_agent.scheduler.framework.left_out import QuiescentLedger
from member_agent.scheduler.framework.pod_requests import pod_request, resource_list
from member_agent.scheduler.framework.pod_versions import task_again
from member_agent.scheduler.framework.snapshot import (
    DeviceArrays,
    DeviceUsage,
    JobSpec,
    NodeTable,
    QueueSpec,
    Snapshot,
    TaskSpec,
)
from member_agent.scheduler.framework.status import TaskStatus
from member_agent.scheduler.framework.topology import GPU_INDEX_ANNOTATION, TOPOLOGY_DECISION_ANNOTATION
from member_agent.scheduler.plugins.device_ledger import Assignment, NodeDevices
from member_agent.scheduler.plugins.gpu_demand import gpu_demand
from member_agent.scheduler.plugins.gpu_matrix import GpuMatrix

S = TaskStatus
TERMINAL = (S.SUCCEEDED, S.FAILED)
ARRAYS = ("idle", "used", "releasing", "pipelined", "pod_count", "nonzero_used")


def object_key(obj: Mapping[str, Any]) -> str:
    """The cache's key of an object within its kind: ``namespace/name`` for pods and PodGroups, else the name."""
    meta = _meta(obj)
    ns = meta.get("namespace")
    return f"{ns or 'default'}/{meta.get('name')}" if obj.get("kind") in ("Pod", "PodGroup") else str(meta.get("name"))


class _PodEntry:
    __slots__ = ("obj", "built", "task", "request", "role", "job", "folded")

    def __init__(self, obj: Mapping[str, Any], task: TaskSpec, request: dict[str, float]) -> None:
        self.obj = obj
        self.built = task  # as the builder made it from ``obj`` (``task`` may name a shadow job)
        self.task = task
        self.request = request
        self.role = ""  # "", "job", "plain", "resident" or "folded"
        self.job = ""
        self.folded: Assignment | None = None


class SchedulerCache:
    """Nodes, pods, PodGroups, Queues and PriorityClasses, and the snapshot derived from them."""

    def __init__(self, *, default_queue: str = "default", scheduler_names: tuple[str, ...] = ("volcano",),
                 resources: Iterable[str] = ()) -> None:
        self.default_queue = default_queue
        self.scheduler_names = scheduler_names
        self._resources = set(resources)
        self._objects: dict[str, dict[str, Mapping[str, Any]]] = {
            k: {} for k in ("Node", "Pod", "PodGroup", "Queue", "PriorityClass", "HyperNode")}
        #: Every distinct request seen and how many pods had it (deleted pods stay counted).
        self._workload: dict[tuple[float, ...], int] = {}
        self._seen: set[str] = set()
        self._workload_tuple: tuple[tuple[tuple[float, ...], int], ...] | None = None
        self._stale = True
        #: Shared by every snapshot: what sessions leave out is kept across them (framework/left_out.py).
        self.ledger = QuiescentLedger()
        self.rebuilds = 0  # full rebuilds so far (a bench/test reading)
        self._tree: Any = None  # framework/hypernodes.py HyperNodeTree of the HyperNodes, or None
        self._tree_dirty = False

    # ------------------------------------------------------------------ events
    def upsert(self, raw: Any) -> None:
        obj = plain_object(raw)
        kind = str(obj.get("kind"))
        table = self._objects.get(kind)
        if table is None:
            return
        key = object_key(obj)
        if kind in ("Node", "HyperNode"):
            self._tree_dirty = True
        if kind == "Pod" and not self._stale:
            previous = self._pods.get(key)
            self._remove_pod(key)
            table[key] = obj
            self._add_pod(key, obj, previous=previous)
            return
        table[key] = obj
        if kind in ("Node", "PriorityClass"):
            self._stale = True
        elif not self._stale:
            self._changed(kind, key, obj)

    def delete(self, raw: Any) -> None:
        obj = plain_object(raw)
        kind = str(obj.get("kind"))
        key = object_key(obj)
        table = self._objects.get(kind)
        if table is None or key not in table:
            return
        if kind in ("Node", "HyperNode"):
            self._tree_dirty = True
        if kind == "Pod" and not self._stale:
            self._remove_pod(key)
        del table[key]
        if kind in ("Node", "PriorityClass"):
            self._stale = True
        elif not self._stale and kind != "Pod":
            self._changed(kind, key, None)

    def observe(self, raw: Any) -> None:
        """Count a pod's request in the observed workload without adding the pod (a pod seen
        before this cache started: the history a long-running scheduler would have)."""
        if self._stale:
            self.snapshot()
        obj = plain_object(raw)
        request, nz = pod_request(obj.get("spec") or {})
        if any(name not in self.dims.index for name in request):
            return
        vector = tuple(self.dims.vector(request).tolist())
        self._workload[vector] = self._workload.get(vector, 0) + 1
        self._workload_tuple = None

    def _changed(self, kind: str, key: str, obj: Mapping[str, Any] | None) -> None:
        if kind == "PodGroup":
            self._dirty_jobs.add(key)
        elif kind == "Queue":
            self._queue_specs = self._build_queues()
            self._dirty_jobs.update(self._members)
            self._dirty_jobs.update(self._objects["PodGroup"])

    # ------------------------------------------------------------------ full rebuild
    def _rebuild(self) -> None:
        self.rebuilds += 1
        builder = self._builder = _Builder(self.default_queue, self.scheduler_names)
        for pc in self._objects["PriorityClass"].values():
            builder.add(pc)
        names = set(self._resources)
        for node in self._objects["Node"].values():
            names.update(resource_list((node.get("status") or {}).get("allocatable")))
        for pg in self._objects["PodGroup"].values():
            names.update(resource_list((pg.get("spec") or {}).get("minResources")))
        requests = {k: pod_request(p.get("spec") or {}) for k, p in self._objects["Pod"].items()}
        for request, _nz in requests.values():
            names.update(request)
        self.dims = Dimensions(names)
        # Request vectors change shape with the dims: count again from the pods there are now.
        self._workload, self._seen, self._workload_tuple = {}, set(), None
        builder.nodes = list(self._objects["Node"].values())
        self._table = builder.node_table(self.dims)
        self._table.allocatable.setflags(write=False)  # shared by every snapshot until a Node changes
        # the cluster's total, summed once per node table (each snapshot gets a copy)
        self._total = self._table.allocatable.sum(axis=0) if len(self._table) else self.dims.zeros()
        self._arrays = {name: getattr(self._table, name) for name in ARRAYS}
        # The last frozen copies, handed to each snapshot until a pod's accounting or a device row changes
        # (read-only, equal to a fresh copy): two replay sessions in five bound nothing and saw nothing end.
        self._frozen_nodes: NodeTable | None = None
        self._frozen_devices: DeviceArrays | None = None
        self._node_problems = tuple(builder.problems)
        self._devices: dict[int, NodeDevices] = {}
        self._usage: list[DeviceUsage | None] = [None] * len(self._table)
        self._dirty_rows: set[int] = set()
        self._gpu_arrays = GpuMatrix.arrays_of(self._table.topology)
        self._pods: dict[str, _PodEntry] = {}
        self._members: dict[str, dict[str, TaskSpec]] = {}
        self._shadow: dict[str, Mapping[str, Any]] = {}
        self._jobs: dict[str, tuple[JobSpec | None, tuple[str, ...]]] = {}
        #: The keys of the jobs that have a spec, sorted (the snapshot's order), and their specs:
        #: kept as jobs come and go, so a snapshot's job tuple is one C-level pass, not a sort.
        self._order: list[str] = []
        self._specs: dict[str, JobSpec] = {}
        #: ``_order``'s specs, kept beside it: the snapshot's tuple is one copy of this list (a lookup
        #: per job every snapshot was most of deriving a replay's one or two changed jobs)
        self._order_specs: list[JobSpec] = []
        self._job_tuple: tuple[JobSpec, ...] = ()
        self._queue_jobs: dict[str, list[str]] = {}  # queue -> its jobs' keys, sorted
        self._queue_order: tuple[str, ...] = ()  # queues by their first job (Snapshot.queue_order)
        self._dirty_jobs: set[str] = set()
        self._broken: set[str] = set()  # jobs with problems or no spec
        self._residents: dict[str, TaskSpec] = {}
        self._pod_problems: dict[str, str] = {}
        self._queue_specs = self._build_queues()
        self._stale = False
        for key, pod in self._objects["Pod"].items():
            self._add_pod(key, pod, requests[key])
        self._dirty_jobs.update(self._objects["PodGroup"])  # a PodGroup with no pods is a job too

    def _build_queues(self) -> dict[str, QueueSpec]:
        queues = {name: self._builder.queue(name, obj) for name, obj in self._objects["Queue"].items()}
        for implicit in ("root", self.default_queue):
            queues.setdefault(implicit, self._builder.queue(implicit, None))
        return queues

    # ------------------------------------------------------------------ pods
    def _add_pod(self, key: str, pod: Mapping[str, Any], computed: Any = None, previous: _PodEntry | None = None) -> None:
        # a new version of a pod the cache holds: its TaskSpec carried where only the status, the node
        # or the annotations moved (pod_versions.py); the same builder and dims made the previous one
        task = None
        if previous is not None:
            task = task_again(self._builder, previous.obj, previous.built, pod)
            request = previous.request  # the same spec but for nodeName: the same requests
        if task is None:
            request, nz = computed if computed is not None else pod_request(pod.get("spec") or {})
            if any(name not in self.dims.index for name in request):
                self._stale = True  # a resource no row has a column for: every vector changes
                return
            task = self._builder.task(pod, self.dims, request, nz)
        entry = self._pods[key] = _PodEntry(pod, task, request)
        if task.uid not in self._seen:
            self._seen.add(task.uid)
            self._workload[task.request_list] = self._workload.get(task.request_list, 0) + 1
            self._workload_tuple = None
        self._account(task, 1)
        if task.status in TERMINAL and not task.job:
            return
        scheduler = (pod.get("spec") or {}).get("schedulerName")
        ours = not scheduler or scheduler in self.scheduler_names
        if task.job:
            self._join(entry, task.job)
        elif ours and task.status == S.PENDING:
            group = f"podgroup-{task.uid}"
            job = f"{task.namespace}/{group}"
            queue = str(((_meta(pod).get("annotations") or {}).get(QUEUE_NAME)) or self.default_queue)
            self._shadow[job] = {
                "metadata": {"name": group, "namespace": task.namespace,
                             "creationTimestamp": _meta(pod).get("creationTimestamp")},
                "spec": {"minMember": 1, "queue": queue, "priorityClassName": task.priority_class_name},
                "_minResources": request,
            }
            entry.task = replace(task, job=job)
            self._join(entry, job)
        else:
            self._reside(entry)

    def _join(self, entry: _PodEntry, job: str) -> None:
        entry.role, entry.job = "job", job
        self._members.setdefault(job, {})[entry.task.key] = entry.task
        self._dirty_jobs.add(job)

    def _reside(self, entry: _PodEntry) -> None:
        task = entry.task
        if task.node is None or task.status in (*TERMINAL, S.PIPELINED):
            return
        if not task.extras.guaranteed and not gpu_demand(task.request_list, self.dims.index).any_gpu:
            entry.role = "plain"  # holds no device and pins no CPU: the node rows count it all
            return
        assignment = self._foldable(task)
        if assignment is None:
            entry.role = "resident"
            self._residents[task.key] = task
            return
        entry.role, entry.folded = "folded", assignment
        self._devices[assignment.row].apply(assignment, 1)
        self._dirty_rows.add(assignment.row)

    def _foldable(self, task: TaskSpec) -> Assignment | None:
        """The GPUs a resident holds, when its annotation names them on a known topology."""
        row = self._table.index.get(task.node or "")
        annotations = task.extras.annotations
        text = annotations.get(GPU_INDEX_ANNOTATION, "")
        if row is None or not text or annotations.get(TOPOLOGY_DECISION_ANNOTATION):
            return None
        topology = self._table.topology[row] if row < len(self._table.topology) else None
        if topology is None:
            return None
        demand = gpu_demand(task.request_list, self.dims.index)
        try:
            gpus = tuple(int(p) for p in text.split(",") if p.strip())
        except ValueError:
            return None
        if not demand.any_gpu or any(g < 0 or g >= len(topology.gpus) for g in gpus):
            return None
        if row not in self._devices:
            self._devices[row] = NodeDevices(topology)
        return Assignment(row, gpus, (), (), demand)

    def _remove_pod(self, key: str) -> None:
        entry = self._pods.pop(key, None)
        if entry is None:
            return
        self._account(entry.task, -1)
        if entry.role == "job":
            members = self._members.get(entry.job, {})
            members.pop(entry.task.key, None)
            if not members:
                self._members.pop(entry.job, None)
                self._shadow.pop(entry.job, None)
            self._dirty_jobs.add(entry.job)
        elif entry.role == "resident":
            self._residents.pop(entry.task.key, None)
        elif entry.role == "folded" and entry.folded is not None:
            self._devices[entry.folded.row].apply(entry.folded, -1)
            self._dirty_rows.add(entry.folded.row)
        self._pod_problems.pop(key, None)

    def _account(self, task: TaskSpec, sign: int) -> None:
        """The builder's node accounting for one pod, added (+1) or taken back (−1)."""
        if task.node is None or task.status in TERMINAL:
            return
        row = self._table.index.get(task.node)
        if row is None:
            if sign > 0:
                self._pod_problems[task.key] = (f"Pod {task.key}: node {task.node} is not in the state; "
                                                f"its resources are not counted")
            return
        a = self._arrays
        self._frozen_nodes = None
        if task.status == S.PIPELINED:
            a["pipelined"][row] += sign * task.request
            return
        a["idle"][row] -= sign * task.request
        a["used"][row] += sign * task.request
        if task.status == S.RELEASING:
            a["releasing"][row] += sign * task.request
        a["pod_count"][row] += sign
        a["nonzero_used"][row] += sign * np.asarray(task.nonzero)

    # ------------------------------------------------------------------ snapshot
    def snapshot(self) -> Snapshot:
        """The current state as a frozen :class:`Snapshot` (work: what changed since the last)."""
        if self._stale:
            self._rebuild()
            if self._stale:  # a pod named a new resource during the rebuild: its names are in now
                self._rebuild()
        if self._dirty_jobs:
            self._derive_dirty_jobs()
        arrays = self._gpu_arrays
        if self._dirty_rows:
            self._frozen_devices = None
        for row in self._dirty_rows:
            node = self._devices.get(row)
            self._usage[row] = node.usage() if node is not None else None
            if node is not None:
                k = len(node.holders)
                arrays.memory_used[row, :k] = node.memory_used
                arrays.cores_used[row, :k] = node.cores_used
                arrays.holders[row, :k] = node.holders
                arrays.exclusive[row, :k] = node.exclusive
        self._dirty_rows.clear()
        table = self._frozen_table()
        problems = [*self._node_problems, *(p for job in sorted(self._broken) for p in self._jobs[job][1]),
                    *(self._pod_problems[k] for k in sorted(self._pod_problems))]
        residents = [*self._residents.values(), *self._orphans()]
        total = self._total.copy()
        if self._workload_tuple is None:
            self._workload_tuple = tuple(sorted(self._workload.items()))
        if self._tree_dirty:  # the tree changes only with the HyperNodes or the nodes
            hypernodes = self._objects["HyperNode"]
            self._tree = topology_of(list(hypernodes.values()), table.names, table.labels) if hypernodes else None
            self._tree_dirty = False
        tree = self._tree
        if tree is not None:
            problems.extend(tree.problems)
        snapshot = Snapshot(self.dims, table, self._job_tuple, dict(self._queue_specs),
                            dict(self._builder.priority_classes), tuple(problems), total,
                            tuple(sorted(residents, key=lambda t: t.uid)), tuple(self._usage),
                            self._workload_tuple or (), self._frozen_arrays(), self.ledger, topology=tree)
        snapshot.know_queue_order(self._queue_order)
        return snapshot

    def _derive_dirty_jobs(self) -> None:
        previous = self._job_tuple
        removed: list[JobSpec] = []
        added: list[JobSpec] = []
        order, specs, listed = self._order, self._specs, self._order_specs
        for job in sorted(self._dirty_jobs):
            derived = self._jobs[job] = self._derive_job(job)
            if derived == (None, ()):  # gone: no PodGroup and no pods
                del self._jobs[job]
                self._broken.discard(job)
            elif derived[0] is None or derived[1]:
                self._broken.add(job)
            else:
                self._broken.discard(job)
            old, new = specs.get(job), derived[0]
            if old is not None:
                removed.append(old)
                members = self._queue_jobs[old.queue]
                del members[bisect.bisect_left(members, job)]
            if new is not None:
                added.append(new)
                bisect.insort(self._queue_jobs.setdefault(new.queue, []), job)
                at = bisect.bisect_left(order, job)
                if old is None:
                    order.insert(at, job)
                    listed.insert(at, new)
                else:
                    listed[at] = new
                specs[job] = new
            elif old is not None:
                at = bisect.bisect_left(order, job)
                del order[at], listed[at], specs[job]
        self._dirty_jobs.clear()
        self._job_tuple = tuple(listed)
        firsts = {queue: members[0] for queue, members in self._queue_jobs.items() if members}
        self._queue_order = tuple(sorted(firsts, key=firsts.__getitem__))
        self.ledger.note(previous, self._job_tuple, removed, added)

    def _frozen_arrays(self) -> DeviceArrays:
        if self._frozen_devices is None:
            copies = {}
            for name in ("count", "memory", "memory_used", "cores_used", "holders", "exclusive"):
                array = getattr(self._gpu_arrays, name).copy()
                array.setflags(write=False)
                copies[name] = array
            self._frozen_devices = DeviceArrays(**copies)
        return self._frozen_devices

    def _frozen_table(self) -> NodeTable:
        if self._frozen_nodes is None:
            copies = {}
            for name in ARRAYS:
                array = self._arrays[name].copy()
                array.setflags(write=False)
                copies[name] = array
            self._frozen_nodes = replace(self._table, **copies)
        return self._frozen_nodes

    def _derive_job(self, job: str) -> tuple[JobSpec | None, tuple[str, ...]]:
        members = self._members.get(job) or {}
        pg = self._objects["PodGroup"].get(job) or self._shadow.get(job)
        tasks = list(members.values())
        if pg is None and not tasks:
            return None, ()
        if pg is None:
            return None, tuple(f"Pod {t.key}: PodGroup {job} is not in the state; the pod is not scheduled"
                               for t in sorted(tasks, key=lambda t: t.uid))
        before = len(self._builder.problems)
        spec = self._builder._job(job, pg, tasks, self.dims, self._queue_specs)
        problems = tuple(self._builder.problems[before:])
        del self._builder.problems[before:]
        return spec, problems

    def _orphans(self) -> list[TaskSpec]:
        """Members of jobs that cannot be scheduled (missing PodGroup or queue) that sit on nodes."""
        out: list[TaskSpec] = []
        for job in sorted(self._broken):
            if self._jobs[job][0] is None:
                out.extend(t for t in self._members.get(job, {}).values()
                           if t.node is not None and t.status not in (*TERMINAL, S.PIPELINED))
        return out

    # ------------------------------------------------------------------ readings
    def device_usage(self) -> dict[str, DeviceUsage]:
        """GPU use folded into each node (by node name), for reports."""
        self.snapshot() if self._stale else None
        return {self._table.names[row]: d.usage() for row, d in sorted(self._devices.items())}

    def describe(self) -> str:
        return json.dumps({k: len(v) for k, v in self._objects.items()}, sort_keys=True)
