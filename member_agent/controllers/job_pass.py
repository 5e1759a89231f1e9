"""One reconcile pass over a job: the three operations every state is built from (volcano.md §9.1).

* :meth:`JobPass.sync_job` — initiate the job (plugins' objects, PodGroup), and once the
  PodGroup has left Pending create the missing pods (respecting dependsOn) and delete the
  ones no longer wanted; recount; run the state's status rule.
* :meth:`JobPass.kill_job` — bump the version, delete every pod whose phase is not
  retained, delete the plugins' objects and the PodGroup; recount; run the rule.
* :meth:`JobPass.kill_target` — delete the pods of one task, pod or partition; the PodGroup
  and version stay.

Nothing here performs I/O: the pass accumulates what the agent must do.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Callable, Mapping, Optional

from member_agent.controllers import naming, pod_status
from member_agent.controllers.job_view import JobView, TaskView
from member_agent.controllers.plugins import (
    JobPlugin,
    PluginContext,
    PluginError,
    load_plugins,
    master_task,
)
from member_agent.controllers.plugins.base import KeySource, WireObject
from member_agent.controllers.pod_builder import TaskPrototype, build_pod, job_pvcs, task_prototype
from member_agent.controllers.podgroup import pod_group_phase, reconcile_pod_group
from member_agent.controllers.timestamps import go_duration, parse_rfc3339, to_rfc3339
from policies.models.core import Pod
from policies.models.volcano_scheduling import PodGroup

#: Pod phases killJob keeps: none on a restart, finished pods otherwise.
RETAIN_NONE: frozenset[str] = frozenset()
RETAIN_SOFT: frozenset[str] = pod_status.FINISHED_POD_PHASES

StatusRule = Callable[["JobPass", pod_status.PodCounts], None]


@dataclass(frozen=True)
class RecordedEvent:
    """A Kubernetes Event about the Job (``ExecuteAction``, ``PodGroupPending``, ``PluginError``)."""

    type: str
    reason: str
    message: str


@dataclass(frozen=True)
class PodDeletion:
    name: str
    reason: str


@dataclass
class JobPass:
    job: JobView
    now: datetime
    status: dict[str, Any]
    pods: dict[str, Pod]
    pod_group: Optional[PodGroup]
    priority_classes: Mapping[str, int]
    existing_objects: Mapping[tuple[str, str], Mapping[str, Any]]
    key_source: Optional[KeySource] = None
    #: The controller's own mapping (kept by identity: see ``_plugins``).
    default_plugins: Optional[Mapping[str, list[str]]] = None
    pod_labels: Mapping[str, str] = field(default_factory=dict)
    # ---- what the agent must do
    create_pods: list[Pod] = field(default_factory=list)
    delete_pods: dict[str, PodDeletion] = field(default_factory=dict)
    pod_group_action: Optional[str] = None
    pod_group_out: Optional[PodGroup] = None
    apply_objects: dict[tuple[str, str], WireObject] = field(default_factory=dict)
    delete_objects: list[tuple[str, str]] = field(default_factory=list)
    events: list[RecordedEvent] = field(default_factory=list)
    killed: bool = False

    # ------------------------------------------------------------------ status helpers

    @property
    def phase(self) -> str:
        return str((self.status.get("state") or {}).get("phase") or "")

    @property
    def version(self) -> int:
        return int(self.status.get("version") or 0)

    @property
    def retry_count(self) -> int:
        return int(self.status.get("retryCount") or 0)

    @property
    def status_min_available(self) -> int:
        value = self.status.get("minAvailable")
        return self.job.min_available if value is None else int(value)

    def set_phase(self, phase: str, message: Optional[str] = None) -> None:
        """Enter ``phase``: stamp the transition and append a condition (no-op if unchanged)."""
        if phase == self.phase:
            return
        stamp = to_rfc3339(self.now)
        state = {"phase": phase, "lastTransitionTime": stamp}
        if message:
            state["message"] = message
        self.status["state"] = state
        # a new list: the status's nested values are shared with the previous status (initial_status)
        self.status["conditions"] = [*self.status.get("conditions", []),
                                     {"status": phase, "lastTransitionTime": stamp}]

    def add_retry(self) -> None:
        self.status["retryCount"] = self.retry_count + 1

    def event(self, reason: str, message: str, type_: str = "Normal") -> None:
        self.events.append(RecordedEvent(type_, reason, message))

    def _apply_counts(self, counts: pod_status.PodCounts) -> None:
        self.status.update(counts.to_status_fields())
        self.status["minAvailable"] = self.job.min_available

    # ------------------------------------------------------------------ plugins

    def _plugins(self) -> Optional[tuple[list[JobPlugin], PluginContext]]:
        # The plugins and the master task depend on the Job's spec and the configured defaults only:
        # found once per spec (every pass asks), by the defaults object the controller was given.
        found = self.job.derived.get("plugins")
        if found is None or found[0] is not self.default_plugins:
            try:
                plugins = load_plugins(self.job, self.default_plugins)
            except PluginError as exc:  # raised again by every pass: errors are not kept
                self.event("PluginError", str(exc), "Warning")
                return None
            found = self.job.derived["plugins"] = (self.default_plugins, plugins, master_task(self.job, plugins))
        existing = {k: dict(v) for k, v in self.existing_objects.items()}
        return list(found[1]), PluginContext(job=self.job, existing=existing, key_source=self.key_source,
                                             master_task=found[2])

    def _ensure_plugin_objects(self, plugins: list[JobPlugin], ctx: PluginContext) -> None:
        controlled = dict(self.status.get("controlledResources") or {})
        for plugin in plugins:
            key, value = plugin.controlled_resource
            # Like Volcano's OnJobAdd, objects are made once per job generation: a resync never
            # regenerates (for ssh: rotates) them; killJob clears the mark, so a restart does.
            objects = plugin.on_job_update(ctx) if controlled.get(key) == value else plugin.on_job_add(ctx)
            for obj in objects:
                self.apply_objects[(obj["kind"], obj["metadata"]["name"])] = obj
            controlled[key] = value
        if controlled:
            self.status["controlledResources"] = controlled

    # ------------------------------------------------------------------ deletion

    def _delete(self, pod: Pod, reason: str) -> None:
        name = pod.metadata.name or ""
        self.delete_pods.setdefault(name, PodDeletion(name, reason))

    def _live(self) -> list[Pod]:
        return [self.pods[name] for name in sorted(self.pods)]

    # ------------------------------------------------------------------ syncJob

    def _dependencies_ready(self, task: TaskView) -> bool:
        if not task.depends_on:
            return True

        def ready(name: str) -> bool:
            dependency = self.job.task(name)
            if dependency is None:
                return False
            done = sum(
                1 for p in self.pods.values()
                if pod_status.task_of(p) == name and not pod_status.is_terminating(p)
                and (pod_status.is_ready(p) or pod_status.phase(p) == pod_status.SUCCEEDED)
            )
            return done >= dependency.min_available

        if task.depends_iteration == "any" and len(task.depends_on) > 1:
            return any(ready(n) for n in task.depends_on)
        return all(ready(n) for n in task.depends_on)

    def sync_job(self, rule: Optional[StatusRule]) -> None:
        loaded = self._plugins()
        if self.phase in ("", "Pending"):
            # initiateJob: the job's own PersistentVolumeClaims (create if missing).
            for claim in job_pvcs(self.job):
                self.apply_objects[(claim["kind"], claim["metadata"]["name"])] = claim
        if not self.phase:
            # initJobStatus: a new job starts Pending with its minAvailable recorded.
            self.set_phase("Pending")
            self.status.setdefault("version", 0)
            self.status.setdefault("retryCount", 0)
        if loaded is not None:
            self._ensure_plugin_objects(*loaded)
        action, desired = reconcile_pod_group(self.job, self.pod_group, self.priority_classes)
        if action is not None:
            self.pod_group_action, self.pod_group_out = action, desired
        observed_phase = pod_group_phase(self.pod_group)
        if observed_phase in ("", "Pending") or loaded is None:
            self._pod_group_pending_events()
            counts = pod_status.count(self._live(), frozenset(self.delete_pods))
        else:
            counts = self._sync_pods(*loaded)
        self._apply_counts(counts)
        if rule is not None:
            rule(self, counts)

    def _pod_group_pending_events(self) -> None:
        if self.pod_group is None or self.pod_group.status is None:
            return
        for condition in self.pod_group.status.conditions or []:
            if condition.type == "Unschedulable":
                self.event("PodGroupPending", f"PodGroup {self.job.namespace}:{self.job.name} unschedule,"
                           f"reason: {condition.message or ''}", "Warning")

    def _sync_pods(self, plugins: list[JobPlugin], ctx: PluginContext) -> pod_status.PodCounts:
        counts = pod_status.PodCounts()
        desired = self.job.desired_pod_names()
        # Once per task per pass, not per pod: readiness of dependencies and the pod shape.
        gate: dict[str, bool] = {}
        shapes: dict[str, TaskPrototype] = {}
        for name, (task, local) in desired.items():
            pod = self.pods.get(name)
            if pod is not None:
                if pod_status.is_terminating(pod) or name in self.delete_pods:
                    counts.add_terminating()
                else:
                    counts.add(pod)
                continue
            if task.name not in gate:
                gate[task.name] = self._dependencies_ready(task)
            if not gate[task.name]:
                continue
            if task.name not in shapes:
                shapes[task.name] = task_prototype(self.job, task, self.priority_classes)
            pod = build_pod(
                self.job, task, local, version=self.version, retry_count=self.retry_count,
                plugins=plugins, ctx=ctx, priority_classes=self.priority_classes, shape=shapes[task.name],
            )
            if self.pod_labels:
                pod.metadata.labels = {**(pod.metadata.labels or {}), **self.pod_labels}
            self.create_pods.append(pod)
            counts.add_created(task.name)
        for name in sorted(set(self.pods) - set(desired)):
            pod = self.pods[name]
            if not pod_status.is_terminating(pod):
                self._delete(pod, "OutOfSync: not a replica of the job's current spec")
            counts.add_terminating()
        return counts

    # ------------------------------------------------------------------ killJob / killTarget

    def kill_job(self, retain: frozenset[str], rule: Optional[StatusRule]) -> None:
        if self.retry_count >= self.job.max_retry - 1:
            # On the last retry finished pods are kept, so their logs and exit codes survive.
            retain = RETAIN_SOFT
        counts = pod_status.PodCounts()
        deleted_any = False
        for pod in self._live():
            if pod_status.is_terminating(pod) or pod.metadata.name in self.delete_pods:
                counts.add_terminating()
            elif pod_status.phase(pod) not in retain:
                self._delete(pod, f"killJob at version {self.version}")
                deleted_any = True
                counts.add_terminating()
            else:
                counts.add(pod)
        self._apply_counts(counts)
        before = self.phase
        if rule is not None:
            rule(self, counts)
        # A level-triggered controller re-runs killJob on every resync of a finished job; only
        # a kill that changes something starts a new version (Volcano bumps on every call).
        if not (deleted_any or self.pod_group is not None or before != self.phase):
            return
        self.status["version"] = self.version + 1
        self.killed = True
        transition = parse_rfc3339((self.status.get("state") or {}).get("lastTransitionTime"))
        if transition is not None and self.job.created is not None:
            self.status["runningDuration"] = go_duration(transition - self.job.created)
        loaded = self._plugins()
        if loaded is not None:
            plugins, ctx = loaded
            controlled = dict(self.status.get("controlledResources") or {})
            for plugin in plugins:
                self.delete_objects.extend(plugin.owned_objects(ctx))
                controlled.pop(plugin.controlled_resource[0], None)
            self.status["controlledResources"] = controlled
        if self.pod_group is not None:
            self.pod_group_action, self.pod_group_out = "delete", self.pod_group

    def kill_target(self, targets: list[Pod], rule: Optional[StatusRule]) -> None:
        for pod in targets:
            if not pod_status.is_terminating(pod):
                self._delete(pod, "restart target")
        self.killed = bool(targets)
        counts = pod_status.count(self._live(), frozenset(self.delete_pods))
        self._apply_counts(counts)
        if rule is not None:
            rule(self, counts)

    def targets(self, action: str, task: str, pod: str, partition: Optional[int]) -> list[Pod]:
        """The pods a RestartTask / RestartPod / RestartPartition request points at."""
        live = self._live()
        if action == "RestartPod":
            return [p for p in live if p.metadata.name == pod]
        if action == "RestartTask":
            return [p for p in live if pod_status.task_of(p) == task]
        if partition is None and pod in self.pods:
            label = (self.pods[pod].metadata.labels or {}).get(naming.PARTITION_ID)
            partition = int(label) if label is not None and label.isdigit() else None
        return [p for p in live if pod_status.task_of(p) == task
                and (p.metadata.labels or {}).get(naming.PARTITION_ID) == str(partition)]


def initial_status(status: Optional[Mapping[str, Any]]) -> dict[str, Any]:
    """A copy of the Job's wire status that the pass may change: its keys may be set and removed,
    but its nested values (``state``, ``conditions``, ``controlledResources``...) are those of
    ``status`` and are replaced, never changed in place. The previous status is read by every pass
    of the job (reconcile keeps its wire form by identity), and copying it deeply was a tenth of a
    steady pass."""
    return dict(status or {})
