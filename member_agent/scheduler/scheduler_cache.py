"""Volcano's scheduler cache, kept incrementally: a snapshot costs what changed, not the cluster.

:func:`builder.build_snapshot` derives a :class:`Snapshot` from every object each time
(0.6–2.2 s on a full 1,213-node cluster). :class:`SchedulerCache` is fed the same objects
as events (:meth:`upsert` / :meth:`delete`, what an informer delivers) and keeps the derived
state current: per-node accounting rows, each pod's :class:`TaskSpec`, the members of each
job, and the GPUs held by pods of no job (folded into :class:`NodeDevices` rows by
:mod:`resident_devices`, so device plugins do not replay them every session). :meth:`snapshot`
then copies the accounting arrays that changed (:mod:`node_accounts`) and re-derives only the jobs
that changed (:mod:`job_roster` keeps their order, :mod:`framework.job_versions` their fields).

The rules are the builder's, applied per object (the builder's own helpers do the work):
a pod joins the job of its ``scheduling.k8s.io/group-name``; a lone pending pod of ours
gets a group of one; other pods on a node are *residents* (counted, never scheduled).
A change of a Node or PriorityClass, or a resource name not seen before, rebuilds
everything on the next snapshot (it changes every row or every task).
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any, Iterable, Mapping

from member_agent.scheduler.framework.builder import QUEUE_NAME, _Builder
from member_agent.scheduler.framework.dims import Dimensions
from member_agent.scheduler.framework.hypernodes import topology_of
from member_agent.scheduler.framework.job_versions import JobHeaders
from member_agent.scheduler.framework.left_out import QuiescentLedger
from member_agent.scheduler.framework.object_fields import plain_object
from member_agent.scheduler.framework.pod_requests import pod_request, resource_list
from member_agent.scheduler.framework.pod_versions import task_again
from member_agent.scheduler.framework.snapshot import (
    DeviceUsage,
    JobSpec,
    QueueSpec,
    Snapshot,
    TaskSpec,
)
from member_agent.scheduler.framework.status import TaskStatus
from member_agent.scheduler.job_roster import JobRoster
from member_agent.scheduler.node_accounts import ARRAYS as ARRAYS  # re-exported (the accounting arrays)
from member_agent.scheduler.node_accounts import TERMINAL, NodeAccounts
from member_agent.scheduler.plugins.device_ledger import Assignment
from member_agent.scheduler.resident_devices import ResidentDevices
from member_agent.scheduler.row_journal import RowJournal, attach
from policies.k8s.object_view import meta_of

S = TaskStatus


def object_key(obj: Mapping[str, Any]) -> str:
    """The cache's key of an object within its kind: ``namespace/name`` for pods and PodGroups, else the name."""
    meta = meta_of(obj)
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
        # the accounting rows and the frozen copies handed to snapshots until they change (node_accounts.py)
        # the rows every event writes, for the next session's shape carry (row_journal.py)
        self._journal = RowJournal()
        attach(self.ledger, self._journal)
        self._accounts = NodeAccounts(self._table, self._journal.rows)
        self._node_problems = tuple(builder.problems)
        self._held = ResidentDevices(self._table, self.dims, self._journal.rows)
        self._pods: dict[str, _PodEntry] = {}
        self._members: dict[str, dict[str, TaskSpec]] = {}
        self._shadow: dict[str, Mapping[str, Any]] = {}
        self._jobs: dict[str, tuple[JobSpec | None, tuple[str, ...]]] = {}
        self._roster = JobRoster()
        self._headers = JobHeaders()  # per job, the last spec's fields (framework/job_versions.py)
        self._dirty_jobs: set[str] = set()
        self._broken: set[str] = set()  # jobs with problems or no spec
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
            queue = str(((meta_of(pod).get("annotations") or {}).get(QUEUE_NAME)) or self.default_queue)
            self._shadow[job] = {
                "metadata": {"name": group, "namespace": task.namespace,
                             "creationTimestamp": meta_of(pod).get("creationTimestamp")},
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
        entry.role, entry.folded = self._held.reside(task)

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
        else:
            self._held.leave(entry.task, entry.role, entry.folded)
        self._pod_problems.pop(key, None)

    def _account(self, task: TaskSpec, sign: int) -> None:
        """The builder's node accounting for one pod, added (+1) or taken back (−1)."""
        if task.node is None or task.status in TERMINAL:
            return
        if not self._accounts.account(task, sign) and sign > 0:
            self._pod_problems[task.key] = (f"Pod {task.key}: node {task.node} is not in the state; "
                                            f"its resources are not counted")

    # ------------------------------------------------------------------ snapshot
    def snapshot(self) -> Snapshot:
        """The current state as a frozen :class:`Snapshot` (work: what changed since the last)."""
        if self._stale:
            self._rebuild()
            if self._stale:  # a pod named a new resource during the rebuild: its names are in now
                self._rebuild()
        if self._dirty_jobs:
            self._derive_dirty_jobs()
        self._held.refresh()
        table = self._accounts.frozen_table()
        problems = [*self._node_problems, *(p for job in sorted(self._broken) for p in self._jobs[job][1]),
                    *(self._pod_problems[k] for k in sorted(self._pod_problems))]
        residents = [*self._held.residents.values(), *self._orphans()]
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
        snapshot = Snapshot(self.dims, table, self._roster.jobs, dict(self._queue_specs),
                            dict(self._builder.priority_classes), tuple(problems), total,
                            tuple(sorted(residents, key=lambda t: t.uid)), tuple(self._held.usage),
                            self._workload_tuple or (), self._held.frozen_arrays(), self.ledger, topology=tree)
        snapshot.know_queue_order(self._roster.queue_order)
        self._journal.stamp(snapshot)
        return snapshot

    def _derive_dirty_jobs(self) -> None:
        roster = self._roster
        previous = roster.jobs
        removed: list[JobSpec] = []
        added: list[JobSpec] = []
        index, written = self._table.index, self._journal.rows
        for job in sorted(self._dirty_jobs):
            derived = self._jobs[job] = self._derive_job(job)
            if derived == (None, ()):  # gone: no PodGroup and no pods
                del self._jobs[job]
                self._broken.discard(job)
            elif derived[0] is None or derived[1]:
                self._broken.add(job)
            else:
                self._broken.discard(job)
            old = roster.put(job, derived[0])
            if old is None or derived[0] is None:  # its pods join or leave a session's replay as a job's
                written.extend(index[t.node] for t in self._members.get(job, {}).values()
                               if t.node is not None and t.node in index)
            if old is not None:
                removed.append(old)
            if derived[0] is not None:
                added.append(derived[0])
        self._dirty_jobs.clear()
        roster.settle()
        self.ledger.note(previous, roster.jobs, removed, added)

    def _derive_job(self, job: str) -> tuple[JobSpec | None, tuple[str, ...]]:
        members = self._members.get(job) or {}
        pg = self._objects["PodGroup"].get(job) or self._shadow.get(job)
        tasks = list(members.values())
        headers = self._headers
        if pg is None:
            headers.drop(job)
            if not tasks:
                return None, ()
            return None, tuple(f"Pod {t.key}: PodGroup {job} is not in the state; the pod is not scheduled"
                               for t in sorted(tasks, key=lambda t: t.uid))
        queues = self._queue_specs
        spec = headers.again(job, pg, queues, tasks)  # only the pods moved: the last spec's fields
        if spec is not None:
            headers.keep(job, pg, queues, spec)
            return spec, ()
        before = len(self._builder.problems)
        spec = self._builder._job(job, pg, tasks, self.dims, queues)
        problems = tuple(self._builder.problems[before:])
        del self._builder.problems[before:]
        if spec is not None and not problems:
            headers.keep(job, pg, queues, spec)
        else:
            headers.drop(job)
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
        return self._held.by_node()

    def describe(self) -> str:
        return json.dumps({k: len(v) for k, v in self._objects.items()}, sort_keys=True)

