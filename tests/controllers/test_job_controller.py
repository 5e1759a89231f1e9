"""Job controller behaviour beyond single event→action pairs: gang gating, retries, completion
rules, TTL, restarts keeping indices, dependsOn, status bookkeeping, pods and PodGroup."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from member_agent.controllers import naming
from member_agent.controllers.job_view import view_job
from member_agent.controllers.observe import observe_pods
from member_agent.controllers.reconcile import JobObservation, reconcile
from member_agent.controllers.requests import JobAction, JobEvent, JobRequest
from policies.errors import ValidationFailed
from policies.models.volcano_scheduling import PodGroup
from tests.controllers.harness import CONFIG, T0, World, make_job, worker_task


def job_world(**spec: Any) -> World:
    spec.setdefault("tasks", [worker_task()])
    spec.setdefault("minAvailable", sum(t["replicas"] for t in spec["tasks"]))
    return World(make_job(spec))


# --------------------------------------------------------------------------- gang gating


@pytest.mark.parametrize("phase", [None, "Pending"])
def test_no_pods_while_pod_group_pending(phase: str | None) -> None:
    world = job_world()
    plan = world.step()
    assert plan.pod_group_action == "create" and plan.create_pods == []
    if phase:
        world.set_pod_group_phase(phase)
    for _ in range(3):
        assert world.step().create_pods == []
    assert world.phase == "Pending" and world.pods == {}


def test_pods_created_once_pod_group_inqueue() -> None:
    world = job_world()
    world.step()
    world.set_pod_group_phase("Inqueue")
    plan = world.step()
    assert sorted(p.metadata.name for p in plan.create_pods) == ["job-worker-0", "job-worker-1"]
    assert plan.status.pending == 2
    assert world.step().create_pods == []  # idempotent


def test_unschedulable_pod_group_condition_becomes_job_event() -> None:
    world = job_world()
    world.step()
    assert world.pod_group is not None
    world.pod_group = PodGroup.model_validate({**world.pod_group.to_wire(), "status": {
        "phase": "Pending", "conditions": [{"type": "Unschedulable", "status": "True",
                                            "message": "2/2 tasks in gang unschedulable"}]}})
    plan = world.step()
    assert [(e.type, e.reason) for e in plan.events] == [("Warning", "PodGroupPending")]
    assert "2/2 tasks in gang unschedulable" in plan.events[0].message


# --------------------------------------------------------------------------- retries


def test_max_retry_exhaustion_fails_the_job_and_keeps_failed_pods() -> None:
    world = job_world(maxRetry=2, policies=[{"event": "PodFailed", "action": "RestartJob"}])
    world.start()
    history = []
    for _ in range(3):
        world.set_pod("job-worker-0", "Failed", exit_code=1)
        world.step()
        history.append((world.phase, world.job.status.retry_count))
        world.settle()
        if world.phase == "Failed":
            break
        world.set_pod_group_phase("Inqueue")
        world.settle()
        world.set_pod_group_phase("Running")
        world.set_all("Running")
        world.settle()
    assert history == [("Restarting", 1), ("Restarting", 2)]
    assert world.phase == "Failed"
    assert "retry limit" in (world.job.status.state.message or "")
    # the last retry used the soft retain set: the failed pod is still there for its logs
    assert "job-worker-0" in world.pods


def test_restart_keeps_indices_and_bumps_version_annotations() -> None:
    world = job_world(policies=[{"event": "PodEvicted", "action": "RestartJob"}])
    world.start()
    before = sorted(world.pods)
    world.evict("job-worker-1")
    world.settle()
    world.set_pod_group_phase("Inqueue")
    world.settle()
    assert sorted(world.pods) == before
    for pod in world.pods.values():
        annotations = pod.metadata.annotations or {}
        assert annotations[naming.JOB_VERSION] == "1"
        assert annotations[naming.JOB_RETRY_COUNT] == "1"
        assert annotations[naming.TASK_INDEX] == pod.metadata.name.rsplit("-", 1)[1]


def test_controller_deletions_are_not_evictions() -> None:
    world = job_world(policies=[{"event": "PodEvicted", "action": "RestartJob"}])
    world.start()
    world.evict("job-worker-0")
    world.step()
    world.settle()
    # the controller's own deletion of job-worker-1 did not count as a second eviction
    assert world.job.status.retry_count == 1


# --------------------------------------------------------------------------- completion rules

COMPLETION = [
    # (spec extras, final pod phases, expected job phase)
    ({}, ["Succeeded", "Succeeded", "Succeeded"], "Completed"),
    ({}, ["Succeeded", "Succeeded", "Failed"], "Failed"),
    ({"minAvailable": 2}, ["Succeeded", "Succeeded", "Failed"], "Completed"),
    ({"minSuccess": 1}, ["Succeeded", "Running", "Running"], "Completed"),
    ({"minSuccess": 2, "minAvailable": 1}, ["Succeeded", "Failed", "Failed"], "Failed"),
    ({"minAvailable": 1}, ["Failed", "Failed", "Failed"], "Failed"),
]


@pytest.mark.parametrize(("extra", "phases", "expected"), COMPLETION)
def test_running_completion_rule(extra: dict[str, Any], phases: list[str], expected: str) -> None:
    world = job_world(tasks=[worker_task(replicas=3)], **extra)
    world.start()
    for i, phase in enumerate(phases):
        world.set_pod(f"job-worker-{i}", phase, 0 if phase == "Succeeded" else (1 if phase == "Failed" else None))
    world.step()
    assert world.phase == expected


def test_task_min_available_must_succeed() -> None:
    # job minAvailable covers both tasks' minAvailable: a task short of its own successes fails the job
    world = job_world(tasks=[worker_task("a", 1, minAvailable=1), worker_task("b", 2, minAvailable=1)], minAvailable=2)
    world.start()
    world.set_pod("job-a-0", "Failed", exit_code=1)
    world.set_pod("job-b-0", "Succeeded", exit_code=0)
    world.set_pod("job-b-1", "Succeeded", exit_code=0)
    world.step()
    assert world.phase == "Failed"


def test_too_many_pending_pods_send_running_job_back_to_pending() -> None:
    world = job_world(tasks=[worker_task(replicas=3)], minAvailable=3)
    world.start()
    world.set_pod("job-worker-2", "Pending")
    world.step()
    assert world.phase == "Pending"


# --------------------------------------------------------------------------- TTL


def test_ttl_deletes_job_after_finish() -> None:
    world = job_world(ttlSecondsAfterFinished=60)
    world.start()
    world.set_all("Succeeded")
    plan = world.step()
    assert world.phase == "Completed"
    finished = world.now
    assert plan.delete_job_at == finished + timedelta(seconds=60)
    assert plan.requeue_at == plan.delete_job_at and not plan.delete_job
    plan = world.step(59)
    assert not plan.delete_job
    plan = world.step(1)
    assert plan.delete_job and world.deleted


def test_no_ttl_no_deletion() -> None:
    world = job_world()
    world.start()
    world.set_all("Succeeded")
    world.step()
    plan = world.step(10_000)
    assert world.phase == "Completed" and plan.delete_job_at is None and not plan.delete_job


# --------------------------------------------------------------------------- dependsOn


@pytest.mark.parametrize(("iteration", "ready", "created"), [
    ("all", ["a"], False),
    ("all", ["a", "b"], True),
    ("any", ["b"], True),
    ("any", [], False),
])
def test_depends_on(iteration: str, ready: list[str], created: bool) -> None:
    tasks = [worker_task("a", 1), worker_task("b", 1),
             worker_task("c", 2, dependsOn={"name": ["a", "b"], "iteration": iteration})]
    world = job_world(tasks=tasks, minAvailable=2)
    world.step()
    world.set_pod_group_phase("Inqueue")
    world.step()
    assert sorted(world.pods) == ["job-a-0", "job-b-0"]
    for task in ready:
        world.set_pod(f"job-{task}-0", "Running")
    world.step()
    assert ("job-c-0" in world.pods) is created and ("job-c-1" in world.pods) is created


# --------------------------------------------------------------------------- status bookkeeping


def test_status_counts_conditions_and_running_duration() -> None:
    world = job_world(tasks=[worker_task("m", 1), worker_task("w", 2)], minAvailable=3,
                      policies=[{"event": "PodFailed", "action": "AbortJob"}])
    world.start()
    world.set_pod("job-w-1", "Failed", exit_code=1)
    world.step()
    world.settle()
    status = world.job.status
    assert world.phase == "Aborted"
    assert [c.status for c in status.conditions] == ["Pending", "Running", "Aborting", "Aborted"]
    assert status.failed == 1 and status.running == 0 and status.pending == 0
    assert status.task_status_count["w"].phase == {"Failed": 1}
    assert status.running_duration is not None and status.running_duration.endswith("s")
    assert status.min_available == 3


def test_scaling_down_deletes_pods_beyond_replicas() -> None:
    world = job_world(tasks=[worker_task(replicas=3)], minAvailable=1)
    world.start()
    world.update_spec(tasks=[worker_task(replicas=1)])
    plan = world.step()
    assert sorted(d.name for d in plan.delete_pods) == ["job-worker-1", "job-worker-2"]


# --------------------------------------------------------------------------- pods and the PodGroup


def test_pod_annotations_labels_and_defaults() -> None:
    task = worker_task(topologyPolicy="single-numa-node")
    task["template"]["metadata"] = {"annotations": {naming.SIM_DURATION: "30s", naming.SIM_EXIT_CODE: "3"},
                                    "labels": {"app": "x"}}
    task["template"]["spec"]["priorityClassName"] = "high"
    world = World(make_job({"tasks": [task], "queue": "q1", "schedulerName": "caldera", "minAvailable": 2}),
                  priority_classes={"high": 1000})
    world.step()
    world.set_pod_group_phase("Inqueue")
    world.step()
    pod = world.pods["job-worker-1"]
    annotations = pod.metadata.annotations or {}
    assert annotations[naming.GROUP_NAME] == "job-uid1"
    assert annotations[naming.TASK_SPEC] == "worker" and annotations[naming.TASK_INDEX] == "1"
    assert annotations[naming.QUEUE_NAME] == "q1" and annotations[naming.JOB_NAME] == "job"
    assert annotations[naming.TEMPLATE_UID] == "job-worker"
    assert annotations[naming.NUMA_POLICY] == "single-numa-node"
    assert annotations[naming.SIM_DURATION] == "30s" and annotations[naming.SIM_EXIT_CODE] == "3"
    labels = pod.metadata.labels or {}
    assert labels["app"] == "x" and labels[naming.JOB_NAMESPACE] == "ns" and labels[naming.TASK_INDEX] == "1"
    assert pod.spec.scheduler_name == "caldera"
    assert pod.spec.priority_class_name == "high" and pod.spec.priority == 1000
    assert pod.metadata.owner_references[0].kind == "Job"


def test_pod_group_spec() -> None:
    tasks = [worker_task("master", 1), worker_task("worker", 3, minAvailable=2)]
    world = World(make_job({"tasks": tasks, "minAvailable": 3, "queue": "ai", "priorityClassName": "high"}))
    plan = world.step()
    spec = plan.pod_group.spec
    assert plan.pod_group.metadata.name == "job-uid1"
    assert spec.min_member == 3 and spec.min_task_member == {"master": 1, "worker": 2}
    assert spec.queue == "ai" and spec.priority_class_name == "high"
    assert spec.min_resources == {"cpu": "3", "memory": "3Gi"}


def test_share_uses_global_indices() -> None:
    job = make_job({"tasks": [worker_task(replicas=2)], "minAvailable": 2},
                   annotations={naming.TASK_OFFSETS: '{"worker": 4}', naming.TASK_TOTALS: '{"worker": 6}'})
    world = World(job)
    world.step()
    world.set_pod_group_phase("Inqueue")
    world.step()
    assert sorted(world.pods) == ["job-worker-4", "job-worker-5"]
    assert world.pods["job-worker-5"].metadata.annotations[naming.TASK_INDEX] == "5"


def test_share_with_kept_indices_runs_exactly_those_pods() -> None:
    # a re-placed share that kept its running pods' indices 1-2 and took 5 (caldera.io/task-indices)
    job = make_job({"tasks": [worker_task(replicas=3)], "minAvailable": 3},
                   annotations={naming.TASK_OFFSETS: '{"worker": 1}', naming.TASK_TOTALS: '{"worker": 6}',
                                naming.TASK_INDICES: '{"worker": [[1, 3], [5, 6]]}'})
    world = World(job)
    world.step()
    world.set_pod_group_phase("Inqueue")
    world.step()
    assert sorted(world.pods) == ["job-worker-1", "job-worker-2", "job-worker-5"]
    assert world.pods["job-worker-5"].metadata.annotations[naming.TASK_INDEX] == "5"


@pytest.mark.parametrize(("annotations", "message"), [
    ({naming.TASK_INDICES: '{"worker": [[0, 3]]}', naming.TASK_TOTALS: '{"worker": 6}'}, "need exactly one index"),
    ({naming.TASK_INDICES: '{"worker": [[4, 6]]}', naming.TASK_TOTALS: '{"worker": 5}'}, "each below the total"),
    ({naming.TASK_INDICES: '{"worker": [[0, 1], [0, 1]]}'}, "non-overlapping"),
    ({naming.TASK_INDICES: '{"worker": "0-2"}'}, "ranges"),
    ({naming.TASK_OFFSETS: "not json"}, "JSON object"),
    ({naming.TASK_OFFSETS: '{"worker": -1}'}, "non-negative"),
    ({naming.TASK_OFFSETS: '{"worker": 5}', naming.TASK_TOTALS: '{"worker": 6}'}, "smaller than offset"),
    ({naming.WORLD_SIZE: "many"}, "integer"),
])
def test_bad_share_annotations_are_named(annotations: dict[str, str], message: str) -> None:
    job = make_job({"tasks": [worker_task(replicas=2)]}, annotations=annotations)
    with pytest.raises(ValidationFailed) as caught:
        reconcile(JobObservation(job=job), T0, CONFIG)
    assert message in str(caught.value) and "metadata.annotations[caldera.io/" in str(caught.value)


def test_unknown_policy_action_is_named() -> None:
    job = make_job({"tasks": [worker_task()], "policies": [{"event": "PodFailed", "action": "Explode"}]})
    world = World(job)
    world.start()
    world.set_pod("job-worker-0", "Failed", exit_code=1)
    with pytest.raises(ValidationFailed) as caught:
        world.step()
    assert "spec.policies[0].action" in str(caught.value)


# --------------------------------------------------------------------------- observing events


def test_pod_failed_carries_first_container_exit_code() -> None:
    world = job_world()
    world.start()
    old = list(world.pods.values())
    world.set_pod("job-worker-0", "Failed", exit_code=137)
    requests = observe_pods(view_job(world.job), old, world.pods.values(), world.now)
    assert [(r.event, r.pod, r.exit_code, r.job_version) for r in requests] == [
        (JobEvent.POD_FAILED, "job-worker-0", 137, 0)]


def test_deletion_with_out_of_sync_annotation_is_not_eviction() -> None:
    world = job_world()
    world.start()
    pod = world.pods["job-worker-0"]
    marked = pod.model_copy(update={"metadata": pod.metadata.model_copy(update={
        "annotations": {**(pod.metadata.annotations or {}), naming.OUT_OF_SYNC: "true"}})})
    requests = observe_pods(view_job(world.job), [marked], [], world.now)
    assert [r.event for r in requests] == [JobEvent.OUT_OF_SYNC]
    requests = observe_pods(view_job(world.job), [pod], [], world.now)
    assert [r.event for r in requests] == [JobEvent.POD_EVICTED]


def test_pending_timeout_is_measured_from_pod_creation_and_needs_the_pod_still_pending() -> None:
    """After an agent restart every pod is 'added' again: a Running pod must not be aborted."""
    spec = {"tasks": [worker_task()], "minAvailable": 2,
            "policies": [{"event": "PodPending", "action": "AbortJob", "timeout": "30s"}]}
    world = World(make_job(spec))
    world.start()
    stamped = {}
    for name, pod in world.pods.items():
        stamped[name] = pod.model_copy(update={"metadata": pod.metadata.model_copy(
            update={"creation_timestamp": "2026-12-02T10:00:01Z"})})
    world.pods = stamped
    world.set_pod("job-worker-1", "Pending")
    world._last_pods = {}  # the restarted agent has no previous observation
    plan = world.step(40)
    assert plan.actions == [JobAction.ABORT_JOB]  # worker-1 pending since creation, long past 30s
    assert world.phase == "Aborting"


def test_pending_deferral_dropped_when_pod_no_longer_pending() -> None:
    spec = {"tasks": [worker_task()], "minAvailable": 2,
            "policies": [{"event": "PodPending", "action": "AbortJob", "timeout": "30s"}]}
    world = World(make_job(spec))
    world.start()
    world._last_pods = {}  # every Running pod is reported as added: PodPending, deferred
    plan = world.step()
    assert len(plan.deferred) == 2
    plan = world.step(60)
    assert plan.deferred == [] and world.phase == "Running" and JobAction.ABORT_JOB not in plan.actions


def test_job_volumes_are_mounted_and_claims_created() -> None:
    volumes = [{"mountPath": "/data", "volumeClaimName": "dataset"},
               {"mountPath": "/scratch", "volumeClaim": {"accessModes": ["ReadWriteOnce"],
                                                         "resources": {"requests": {"storage": "1Gi"}}}}]
    world = World(make_job({"tasks": [worker_task(replicas=1)], "minAvailable": 1, "volumes": volumes}))
    plan = world.step()
    claims = [o for o in plan.apply_objects if o["kind"] == "PersistentVolumeClaim"]
    assert [c["metadata"]["name"] for c in claims] == ["job-volume-1"]
    world.set_pod_group_phase("Inqueue")
    world.step()
    spec = world.pods["job-worker-0"].to_wire()["spec"]
    assert {"name": "dataset", "persistentVolumeClaim": {"claimName": "dataset"}} in spec["volumes"]
    mounts = spec["containers"][0]["volumeMounts"]
    assert {"name": "dataset", "mountPath": "/data"} in mounts and {"name": "job-volume-1", "mountPath": "/scratch"} in mounts


def test_command_is_recorded_as_job_event() -> None:
    world = job_world()
    world.start()
    world.extra_requests.append(JobRequest(event=JobEvent.COMMAND_ISSUED, at=world.now, action=JobAction.ABORT_JOB))
    plan = world.step()
    assert [(e.reason, e.message) for e in plan.events] == [
        ("CommandIssued", "Start to execute action AbortJob"), ("ExecuteAction", "Start to execute action AbortJob")]
    assert world.phase == "Aborting"


def test_restart_partition_kills_only_the_failed_pods_partition() -> None:
    task = worker_task(replicas=4, partitionPolicy={"totalPartitions": 2, "partitionSize": 2})
    world = World(make_job({"tasks": [task], "minAvailable": 4,
                            "policies": [{"event": "PodFailed", "action": "RestartPartition"}]}))
    world.start()
    assert (world.pods["job-worker-3"].metadata.labels or {})[naming.PARTITION_ID] == "1"
    assert world.pod_group.spec.sub_group_policy[0].sub_group_size == 2
    world.set_pod("job-worker-3", "Failed", exit_code=1)
    plan = world.step()
    assert plan.actions == [JobAction.RESTART_PARTITION]
    assert sorted(d.name for d in plan.delete_pods) == ["job-worker-2", "job-worker-3"]
    assert plan.pod_group_action is None and world.phase == "Restarting"


def test_agent_labels_reach_created_pods() -> None:
    job = make_job({"tasks": [worker_task(replicas=1)], "minAvailable": 1})
    first = reconcile(JobObservation(job=job), T0, CONFIG)
    group = PodGroup.model_validate({**first.pod_group.to_wire(), "status": {"phase": "Inqueue"}})
    plan = reconcile(JobObservation(job=job.model_copy(update={"status": first.status}), pod_group=group,
                                    pod_labels={"caldera.io/work-uid": "w1"}), T0, CONFIG)
    labels = plan.create_pods[0].metadata.labels or {}
    assert labels["caldera.io/work-uid"] == "w1" and labels[naming.JOB_NAME] == "job"


def test_desired_pod_names_are_made_once_per_spec() -> None:
    """Kept in the view's ``derived`` (shared by the views of one spec and metadata): every later
    status of the Job gets the same names; a Job with another spec gets its own."""
    job = make_job({"minAvailable": 1, "tasks": [worker_task("master", 1), worker_task("worker", 2)]},
                   annotations={naming.TASK_OFFSETS: '{"worker": 4}'})
    view = view_job(job)
    names = view.desired_pod_names()
    assert dict(names) == {naming.pod_name("job", "master", 0): (view.tasks[0], 0),
                           naming.pod_name("job", "worker", 4): (view.tasks[1], 0),
                           naming.pod_name("job", "worker", 5): (view.tasks[1], 1)}
    later = view_job(job.model_copy(update={"status": None}))
    assert later is not view and later.desired_pod_names() is names
    wider = job.model_copy(update={"spec": job.spec.model_copy(update={"tasks": [
        job.spec.tasks[0], job.spec.tasks[1].model_copy(update={"replicas": 3})]})})
    assert naming.pod_name("job", "worker", 6) in view_job(wider).desired_pod_names()
    assert naming.pod_name("job", "worker", 6) not in names
