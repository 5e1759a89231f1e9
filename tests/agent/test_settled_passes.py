"""JobRun skips a pass when the last pass planned nothing and showed itself settled
(``plan_settles``) and the new observation reads the same for a resync. Each scenario is replayed twice, by a run that
skips and by one that never does, through the same steps: after every step both must have planned
the same and hold the same state; the scenarios also check that the skipping run did skip."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import pytest

from member_agent.controllers import ControllerConfig, JobObservation
from member_agent.controllers.reconcile import plan_settles, pod_group_resync_view, reconcile
from member_agent.job_runner import JobRun, RunPlan
from member_agent.works import Placement, WorkRecord
from policies.models.volcano_scheduling import PodGroupCondition

Obj = dict[str, Any]
T0 = 1_700_000_000.0
CONFIG = ControllerConfig()


class NeverSkips(JobRun):
    def _idle(self, *args: Any) -> bool:
        return False


def manifest(replicas: int = 1, min_available: int = 1, **spec: Any) -> Obj:
    tasks = spec.pop("tasks", None) or [{"name": "worker", "replicas": replicas, "template": {"spec": {
        "containers": [{"name": "main", "image": "trace", "resources": {"requests": {"cpu": "1"}}}]}}}]
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
            "metadata": {"name": "job", "namespace": "ns", "uid": "job-uid"},
            "spec": {"minAvailable": min_available, "queue": "default", "tasks": tasks, **spec}}


class World:
    """A cluster in miniature: pods made, bound, ended and evicted by hand, passes until settled."""

    def __init__(self, cls: type[JobRun], job: Obj) -> None:
        self.record = WorkRecord("fed", "job", "work-uid", Placement(1), copy.deepcopy(job))
        self.run = cls.start(self.record, T0)
        self.pods: dict[str, Obj] = {}
        self.now, self.rv, self.plans = T0, 0, []

    def stamp(self, pod: Obj) -> None:
        self.rv += 1
        pod["metadata"]["resourceVersion"] = str(self.rv)

    def settle(self) -> None:
        for _ in range(8):
            plan = self.run.plan(self.record, list(self.pods.values()), self.now, CONFIG, {})
            self.plans.append(plan)
            if plan is not None:
                self.carry_out(plan)
            if not self.run.pending_followup:
                return

    def carry_out(self, plan: RunPlan) -> None:
        for name in plan.delete_pods:
            self.pods.pop(name, None)
        for wire in plan.create_pods:
            pod = copy.deepcopy(wire)
            pod["metadata"].update(uid=f"uid-{pod['metadata']['name']}", creationTimestamp="2023-11-14T22:13:20Z")
            pod["status"] = {"phase": "Pending"}
            self.stamp(pod)
            self.pods[pod["metadata"]["name"]] = pod

    def once(self) -> None:
        """One pass, its follow-up left for the next step (which changes something first)."""
        plan = self.run.plan(self.record, list(self.pods.values()), self.now, CONFIG, {})
        self.plans.append(plan)
        if plan is not None:
            self.carry_out(plan)

    def step(self, action: str, *args: Any) -> None:
        """Do ``action`` and pass until settled; ``action!`` only does it, ``once`` passes once."""
        if action == "once":
            self.once()
            return
        quiet = action.endswith("!")
        action = action.rstrip("!")
        if action == "forget_objects":  # what the controller made is gone (its follow-up makes it again)
            self.run.objects.clear()
        elif action == "pod_group":
            phase, conditions = args[0], (args[1] if len(args) > 1 else None)
            self.run.set_pod_group_phase(phase, conditions)
        elif action in ("bind", "ready", "succeed", "fail", "restart", "terminate"):
            for name in sorted(self.pods)[: args[0] if args else None]:
                pod = self.pods[name] = copy.deepcopy(self.pods[name])
                self._pod_step(pod, action)
                self.stamp(pod)
        elif action == "edit_pod_group":  # someone else's edit of the spec, seen with the next phase
            assert self.run.pod_group is not None
            self.run.pod_group["spec"]["minMember"] = 7
            self.run.set_pod_group_phase(args[0])
        elif action == "evict":
            self.pods.pop(sorted(self.pods)[0])
        elif action == "advance":
            self.now += args[0]
        elif action == "annotate":  # a change no resync reads
            for pod in self.pods.values():
                pod["metadata"].setdefault("annotations", {})["note"] = str(self.rv)
                self.stamp(pod)
        if not quiet:
            self.settle()

    @staticmethod
    def _pod_step(pod: Obj, action: str) -> None:
        if action == "bind":  # running, its container not ready yet
            pod["spec"]["nodeName"] = "node-1"
            pod["status"] = {"phase": "Running", "containerStatuses": [{"name": "main", "ready": False}]}
        elif action == "ready":
            pod["status"] = {"phase": "Running", "containerStatuses": [{"name": "main", "ready": True}]}
        elif action == "terminate":
            pod["metadata"]["deletionTimestamp"] = "2023-11-14T22:20:00Z"
        elif action == "restart":
            pod["status"]["containerStatuses"] = [{"name": "main", "ready": True, "restartCount": 5}]
        else:
            code = 0 if action == "succeed" else 1
            pod["status"] = {"phase": "Succeeded" if code == 0 else "Failed", "containerStatuses": [
                {"name": "main", "state": {"terminated": {"exitCode": code}}}]}


def state(run: JobRun) -> Any:
    return (run.status, run.pod_group, run.objects, run.deferred, run.requeue_at, run._fingerprint,
            run.pending_followup, run.phase, sorted(run.deleted_by_us), run._recorded, run.deleted,
            sorted(run._last_pods), run._last_pod_group, run._last_job is run.job)


LIFECYCLE = [("pod_group", "Inqueue"), ("bind",), ("ready",), ("pod_group", "Running"), ("annotate",), ("succeed",)]
SCENARIOS: dict[str, tuple[Obj, list[tuple[Any, ...]], bool]] = {
    "one pod": (manifest(), LIFECYCLE, True),
    "a gang bound one pod at a time": (manifest(replicas=3, min_available=3),
                                       [("pod_group", "Inqueue"), ("bind", 1), ("bind", 2), ("bind",),
                                        ("pod_group", "Running"), ("succeed", 1), ("succeed",)], True),
    "unschedulable, then scheduled": (manifest(replicas=2, min_available=2), [
        ("pod_group", "Pending", [{"type": "Unschedulable", "status": "True", "message": "0/3 nodes"}]),
        ("advance", 30), ("pod_group", "Pending", [{"type": "Unschedulable", "status": "True", "message": "1/3"}]),
        ("advance", 90), ("pod_group", "Inqueue"), ("bind",), ("annotate",), ("fail", 1), ("advance", 10),
        ("annotate",), ("succeed",)], True),
    "evicted and failed": (manifest(replicas=2, min_available=1), [
        ("pod_group", "Inqueue"), ("bind",), ("evict",), ("pod_group", "Running"), ("restart",), ("fail",)], True),
    "PodGroup edited from outside": (manifest(), [("pod_group", "Inqueue"), ("bind",), ("annotate",),
                                                   ("edit_pod_group", "Running"), ("annotate",)], True),
    "follow-ups that are not idle": (manifest(replicas=3, min_available=3), [
        ("once",), ("pod_group", "Inqueue"),  # its follow-up makes the pods
        ("bind!", 1), ("once",), ("edit_pod_group!", "Inqueue"), ("once",),  # ... updates the PodGroup
        ("bind!", 2), ("once",), ("pod_group!", "Pending", [{"type": "Unschedulable", "status": "True",
                                                              "message": "0/3 nodes"}]), ("once",),  # ... events
        ("pod_group!", "Inqueue"), ("bind!",), ("once",), ("forget_objects!",), ("once",),  # ... plugin objects
        ("annotate",)], True),
    "policies: never skipped": (manifest(replicas=2, min_available=2, policies=[
        {"event": "PodEvicted", "action": "RestartJob"}, {"event": "PodFailed", "action": "AbortJob"}]),
        [("pod_group", "Inqueue"), ("bind",), ("evict",), ("pod_group", "Inqueue"), ("bind",), ("fail", 1)], False),
    "dependsOn": (manifest(tasks=[
        {"name": "a", "replicas": 1, "template": {"spec": {"containers": [{"name": "m", "image": "x"}]}}},
        {"name": "b", "replicas": 1, "dependsOn": {"name": ["a"]},
         "template": {"spec": {"containers": [{"name": "m", "image": "x"}]}}}]),
        [("pod_group", "Inqueue"), ("annotate",), ("bind",), ("ready",), ("bind",), ("succeed",)], True),
    "done before it ran": (manifest(replicas=2, min_available=2), [("pod_group", "Inqueue"), ("annotate",),
                                                                    ("succeed",), ("annotate",)], True),
    "terminated from outside": (manifest(replicas=2, min_available=1), [
        ("pod_group", "Inqueue"), ("bind",), ("ready",), ("terminate", 1), ("annotate",), ("evict",), ("succeed",)],
        True),
    "ttl after completion": (manifest(ttlSecondsAfterFinished=60), LIFECYCLE + [("advance", 30), ("advance", 31)], True),
    "maxRetry on restarts": (manifest(tasks=[{"name": "w", "replicas": 1, "maxRetry": 2, "template": {
        "spec": {"containers": [{"name": "m", "image": "x"}]}}}]), [("pod_group", "Inqueue"), ("bind",),
                                                                    ("annotate",), ("restart",), ("annotate",)], True),
}


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_a_skipped_pass_is_the_pass_it_skips(name: str) -> None:
    job, steps, skips = SCENARIOS[name]
    skipping, full = World(JobRun, job), World(NeverSkips, job)
    skipped = [0]
    idle = JobRun._idle

    def counting(self: JobRun, *args: Any) -> bool:
        result = idle(self, *args)
        skipped[0] += result
        return result

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(JobRun, "_idle", counting)
        for world in (skipping, full):
            world.settle()
        assert skipping.plans == full.plans and state(skipping.run) == state(full.run)
        for step in steps:
            for world in (skipping, full):
                world.step(*step)
            assert skipping.plans == full.plans, step
            assert state(skipping.run) == state(full.run), step
    assert (skipped[0] > 0) == skips


def worker(replicas: int) -> list[Obj]:
    """A task whose PodGroup does not change with its replicas (minAvailable 1 of the task and the job)."""
    return [{"name": "worker", "replicas": replicas, "minAvailable": 1, "template": {"spec": {
        "containers": [{"name": "main", "image": "trace", "resources": {"requests": {"cpu": "1"}}}]}}}]


def test_a_new_spec_or_configuration_is_never_skipped() -> None:
    world = World(JobRun, manifest(tasks=worker(1)))
    world.settle()
    world.step("pod_group", "Inqueue")
    assert len(world.pods) == 1 and world.run._settled is not None
    settled_job = world.run.job
    group = world.run._last_pod_group
    world.record = WorkRecord("fed", "job", "work-uid", Placement(2), manifest(tasks=worker(2)))
    world.run.update_spec(world.record)
    assert world.run._pod_group_model() == group  # only the Job tells this pass from a skipped one
    world.settle()
    assert len(world.pods) == 2 and world.run.job is not settled_job
    settled = world.run._settled
    assert settled is not None
    pods, group = list(world.run._last_pods.values()), world.run._last_pod_group
    assert settled.holds(world.run.job, pods, group, CONFIG, {})
    assert not settled.holds(world.run.job, pods, group, ControllerConfig(default_plugins={}), {})
    assert not settled.holds(world.run.job, pods, group, CONFIG, {"high": 10})
    assert not settled.holds(world.run.job, pods[:1], group, CONFIG, {})


def test_what_a_resync_reads_of_the_pod_group() -> None:
    """The Unschedulable messages of a waiting PodGroup are events; a running one's are not read."""
    world = World(JobRun, manifest())
    world.settle()
    group = world.run._last_pod_group
    assert group is not None and group.status is not None and pod_group_resync_view(group) == (True, ())
    unschedulable = group.model_copy(update={"status": group.status.model_copy(update={"conditions": [
        PodGroupCondition(type="Unschedulable", status="True", message="0/3 nodes")]})})
    assert pod_group_resync_view(unschedulable) == (True, ("0/3 nodes",))
    plan = reconcile(JobObservation(job=world.run.job, pod_group=unschedulable, existing_objects=world.run.objects),
                     datetime.fromtimestamp(T0, UTC), CONFIG)
    assert plan.events and not plan_settles(JobObservation(job=world.run.job, pod_group=unschedulable), plan)
    running = unschedulable.model_copy(update={"status": unschedulable.status.model_copy(update={"phase": "Running"})})
    assert pod_group_resync_view(running) == (False, ())


@pytest.mark.parametrize("policies", [[{"event": "PodEvicted", "action": "RestartJob"}],
                                      [{"exitCode": 3, "action": "AbortJob"}]])
def test_a_job_with_policies_never_settles(policies: list[Obj]) -> None:
    job = JobRun.start(WorkRecord("fed", "job", "work-uid", Placement(1), manifest(policies=policies)), T0).job
    first = JobObservation(job=job)
    plan = reconcile(first, datetime.fromtimestamp(T0, UTC), CONFIG)
    objects = {(str(obj["kind"]), str(obj["metadata"]["name"])): obj for obj in plan.apply_objects}
    settled = JobObservation(job=job.model_copy(update={"status": plan.status}), pod_group=plan.pod_group,
                             existing_objects=objects)
    quiet = reconcile(settled, datetime.fromtimestamp(T0, UTC), CONFIG)
    assert not quiet.status_changed and not quiet.create_pods and quiet.pod_group_action is None
    assert not plan_settles(settled, quiet)  # a later request could resolve to an action
    without = job.model_copy(update={"spec": job.spec.model_copy(update={"policies": None}),
                                     "status": plan.status})
    settled = JobObservation(job=without, pod_group=plan.pod_group, existing_objects=objects)
    assert plan_settles(settled, reconcile(settled, datetime.fromtimestamp(T0, UTC), CONFIG))


def test_plugins_are_kept_per_spec_and_per_default_plugins() -> None:
    """The view keeps the plugins it loaded by the defaults object it was given (JobPass._plugins):
    another configuration loads its own, and an error is raised again on every pass."""
    job = JobRun.start(WorkRecord("fed", "job", "work-uid", Placement(1), manifest()), T0).job
    at = datetime.fromtimestamp(T0, UTC)
    with_defaults = reconcile(JobObservation(job=job), at, CONFIG)
    bare = reconcile(JobObservation(job=job), at, ControllerConfig(default_plugins={}))
    assert {obj["kind"] for obj in with_defaults.apply_objects} == {"ConfigMap", "Service"}
    assert bare.apply_objects == []
    assert {obj["kind"] for obj in reconcile(JobObservation(job=job), at, CONFIG).apply_objects} == {"ConfigMap", "Service"}
    broken = JobRun.start(WorkRecord("fed", "job", "work-uid", Placement(1), manifest(plugins={"nope": []})), T0).job
    for _ in range(2):
        plan = reconcile(JobObservation(job=broken), at, CONFIG)
        assert [e.reason for e in plan.events] == ["PluginError"]
