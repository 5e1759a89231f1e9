"""An in-memory cluster that applies JobPlans, the way the agent will: the test drives pod
phases and PodGroup phases by hand and every step derives events from what changed."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any, Optional

from member_agent.controllers.job_view import view_job
from member_agent.controllers.observe import observe_job, observe_pod_group, observe_pods
from member_agent.controllers.reconcile import ControllerConfig, JobObservation, JobPlan, reconcile
from member_agent.controllers.reconcile import _status_wire as status_wire
from member_agent.controllers.requests import DeferredAction, JobRequest
from policies.models.core import Pod
from policies.models.volcano_batch import Job
from policies.models.volcano_scheduling import PodGroup

T0 = datetime(2026, 12, 2, 10, 0, 0, tzinfo=UTC)


def fixed_keys() -> tuple[str, str]:
    return ("-----BEGIN RSA PRIVATE KEY-----\nTEST\n-----END RSA PRIVATE KEY-----\n", "ssh-rsa AAAATEST test")


#: Volcano's exact behaviour (no default plugins) with a fixed ssh key.
CONFIG = ControllerConfig(key_source=fixed_keys, default_plugins={})


def make_job(spec: dict[str, Any], name: str = "job", annotations: Optional[dict[str, str]] = None) -> Job:
    return Job.model_validate({
        "metadata": {"name": name, "namespace": "ns", "uid": "uid1", "creationTimestamp": "2026-12-02T10:00:00Z",
                     "annotations": annotations or {}},
        "spec": spec,
    })


def worker_task(name: str = "worker", replicas: int = 2, **extra: Any) -> dict[str, Any]:
    task = {"name": name, "replicas": replicas, "template": {"spec": {
        "restartPolicy": "Never",
        "containers": [{"name": name, "image": "busybox", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}],
    }}}
    task.update(extra)
    return task


class World:
    def __init__(self, job: Job, config: ControllerConfig = CONFIG, priority_classes: Optional[dict[str, int]] = None):
        self.job = job
        self.config = config
        self.priority_classes = priority_classes or {}
        self.pods: dict[str, Pod] = {}
        self.pod_group: Optional[PodGroup] = None
        self.objects: dict[tuple[str, str], dict[str, Any]] = {}
        self.deferred: list[DeferredAction] = []
        self.now = T0
        self.deleted_by_us: set[str] = set()
        self.plans: list[JobPlan] = []
        self.extra_requests: list[JobRequest] = []
        self._last_pods: dict[str, Pod] = {}
        self._last_pg: Optional[PodGroup] = None
        self._last_job: Optional[Job] = None
        self.deleted = False

    # ---------------------------------------------------------------- driving

    def step(self, seconds: float = 1.0) -> JobPlan:
        self.now = self.now + timedelta(seconds=seconds)
        view = view_job(self.job)
        requests = observe_job(self._last_job, self.job, self.now)
        requests += observe_pods(view, self._last_pods.values(), self.pods.values(), self.now, self.deleted_by_us)
        requests += observe_pod_group(self._last_pg, self.pod_group, self.now)
        requests += self.extra_requests
        self.extra_requests = []
        self._last_pods = dict(self.pods)
        self._last_pg = self.pod_group
        self._last_job = self.job
        plan = reconcile(JobObservation(
            job=self.job, pod_group=self.pod_group, pods=list(self.pods.values()), requests=requests,
            deferred=self.deferred, priority_classes=self.priority_classes, existing_objects=self.objects,
        ), self.now, self.config)
        # a pass shares the old status's nested values (initial_status), whose wire form reconcile
        # keeps for the next pass: the pass must not have changed it
        old = self.job.status
        assert old is None or status_wire(old) == old.to_wire(), "a pass changed the previous status in place"
        # a status the pass wrote is remembered with the dict it was validated from: that dict must
        # be the model's own dump
        assert status_wire(plan.status) == plan.status.to_wire(), "a pass wrote a status its model dumps otherwise"
        self.apply(plan)
        self.plans.append(plan)
        return plan

    def apply(self, plan: JobPlan) -> None:
        if plan.delete_job:
            self.deleted = True
            self.pods.clear()
            self.pod_group = None
            return
        self.job = self.job.model_copy(update={"status": plan.status})
        for deletion in plan.delete_pods:
            self.pods.pop(deletion.name, None)
            self.deleted_by_us.add(deletion.name)
        for pod in plan.create_pods:
            assert pod.metadata.name not in self.pods, f"duplicate pod {pod.metadata.name}"
            self.pods[pod.metadata.name or ""] = pod
        if plan.pod_group_action == "delete":
            self.pod_group = None
        elif plan.pod_group_action in ("create", "update"):
            self.pod_group = plan.pod_group
        for kind, name in plan.delete_objects:
            self.objects.pop((kind, name), None)
        for obj in plan.apply_objects:
            self.objects[(obj["kind"], obj["metadata"]["name"])] = copy.deepcopy(obj)
        self.deferred = plan.deferred

    def settle(self, limit: int = 10) -> JobPlan:
        """Step until a pass plans nothing new."""
        plan = self.step()
        for _ in range(limit):
            if not (plan.create_pods or plan.delete_pods or plan.status_changed or plan.pod_group_action):
                return plan
            plan = self.step()
        return plan

    # ---------------------------------------------------------------- the outside world

    def set_pod_group_phase(self, phase: str) -> None:
        assert self.pod_group is not None, "no PodGroup"
        self.pod_group = PodGroup.model_validate({**self.pod_group.to_wire(), "status": {"phase": phase}})

    def set_pod(self, name: str, phase: str, exit_code: Optional[int] = None, restarts: int = 0) -> None:
        pod = self.pods[name]
        status: dict[str, Any] = {"phase": phase}
        state: dict[str, Any] = {"running": {}}
        if exit_code is not None:
            state = {"terminated": {"exitCode": exit_code}}
        status["containerStatuses"] = [{"name": "c", "ready": phase == "Running", "restartCount": restarts,
                                        "state": state}]
        self.pods[name] = pod.model_copy(update={"status": Pod.model_validate({"status": status}).status})

    def set_all(self, phase: str, task: Optional[str] = None) -> None:
        for name, pod in list(self.pods.items()):
            if task is None or (pod.metadata.annotations or {}).get("volcano.sh/task-spec") == task:
                self.set_pod(name, phase, 0 if phase in ("Succeeded", "Failed") else None)

    def evict(self, name: str) -> None:
        del self.pods[name]

    def update_spec(self, **changes: Any) -> None:
        spec = {**self.job.spec.to_wire(), **changes}
        self.job = Job.model_validate({**self.job.to_wire(), "spec": spec})

    # ---------------------------------------------------------------- reading

    @property
    def phase(self) -> str:
        status = self.job.status
        return (status.state.phase if status and status.state else None) or ""

    def start(self) -> None:
        """Run the job to Running: PodGroup Inqueue, pods created and Running."""
        self.step()
        self.set_pod_group_phase("Inqueue")
        self.step()
        self.set_pod_group_phase("Running")
        self.set_all("Running")
        self.settle()
        assert self.phase == "Running", self.phase
