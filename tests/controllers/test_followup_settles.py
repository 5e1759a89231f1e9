"""``JobPlan.followup_settles``: when a pass says so, the SyncJob over its own outputs (the new status,
the PodGroup as planned with its status kept or Pending when created, each created pod observed
Pending, the plugin objects applied) plans nothing (``resync_settled``), over random sequences of
passes, PodGroup phases and pod phases for jobs with and without plugins and policies."""

from __future__ import annotations

from typing import Any, Optional

from hypothesis import given, settings
from hypothesis import strategies as st

from member_agent.controllers.reconcile import JobObservation, JobPlan, resync_settled
from policies.models.core import Pod
from policies.models.volcano_scheduling import PodGroup
from tests.controllers.harness import World, make_job, worker_task

SPECS: list[dict[str, Any]] = [
    {"tasks": [worker_task(replicas=2)]},
    {"tasks": [worker_task(replicas=2)], "minAvailable": 1},
    {"tasks": [worker_task(replicas=3)], "minSuccess": 1},
    {"tasks": [worker_task("ps", 1), worker_task("worker", 2)], "plugins": {"ssh": [], "svc": []}},
    {"tasks": [worker_task(replicas=2)], "plugins": {"env": []}, "minAvailable": 2},
    {"tasks": [worker_task("ps", 1), worker_task("worker", 1, dependsOn={"name": ["ps"]})]},
    {"tasks": [worker_task(replicas=2)], "policies": [{"event": "PodFailed", "action": "RestartJob"}]},
]
EVENTS = st.one_of(
    st.just(("step",)),
    st.tuples(st.just("group"), st.sampled_from(["Pending", "Inqueue", "Running", "Unknown"])),
    st.tuples(st.just("pod"), st.integers(0, 2), st.sampled_from(["Running", "Succeeded", "Failed", "Pending"])),
)


def _follow_up(world: World, plan: JobPlan, before: Optional[PodGroup]) -> JobObservation:
    created = {pod.metadata.name for pod in plan.create_pods}
    pods = [Pod.model_validate({**pod.to_wire(), "status": {"phase": "Pending"}}) if pod.metadata.name in created
            else pod for pod in world.pods.values()]
    group = world.pod_group
    if plan.pod_group_action == "create" and plan.pod_group is not None:
        group = PodGroup.model_validate({**plan.pod_group.to_wire(), "status": {"phase": "Pending"}})
    elif plan.pod_group_action == "update" and plan.pod_group is not None and before is not None:
        group = plan.pod_group.model_copy(update={"status": before.status})
    return JobObservation(job=world.job, pod_group=group, pods=pods, deferred=world.deferred,
                          priority_classes=world.priority_classes, existing_objects=world.objects)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(range(len(SPECS))), st.lists(EVENTS, min_size=1, max_size=14))
def test_a_settling_follow_up_plans_nothing(spec: int, events: list[tuple[Any, ...]]) -> None:
    world = World(make_job(SPECS[spec]))
    for event in [("step",), *events, ("step",)]:
        if event[0] == "group":
            if world.pod_group is not None:
                world.set_pod_group_phase(event[1])
            continue
        if event[0] == "pod":
            names = sorted(world.pods)
            if names:
                world.set_pod(names[event[1] % len(names)], event[2], exit_code=0 if event[2] == "Succeeded" else
                              (1 if event[2] == "Failed" else None))
            continue
        before = world.pod_group
        plan = world.step()
        if plan.followup_settles:
            assert resync_settled(_follow_up(world, plan, before), world.now, world.config)


def test_a_pass_that_moved_the_phase_does_not_vouch_for_its_follow_up() -> None:
    world = World(make_job({"tasks": [worker_task(replicas=1)]}))
    assert world.step().followup_settles  # the PodGroup created: the next pass reads it Pending, as this one did
    world.set_pod_group_phase("Inqueue")
    assert world.step().create_pods
    world.set_pod("job-worker-0", "Succeeded", exit_code=0)
    moved = world.step()  # Pending -> Running on a succeeded pod: the next pass runs the Running rule
    assert not moved.followup_settles and world.step().status_changed


def test_a_pass_that_deleted_pods_does_not_vouch_for_its_follow_up() -> None:
    world = World(make_job({"tasks": [worker_task(replicas=2)]}))
    world.step()
    world.set_pod_group_phase("Inqueue")
    world.step()
    world.step()
    world.job = make_job({"tasks": [worker_task(replicas=1)]}).model_copy(update={"status": world.job.status})
    before = world.pod_group
    scaled = world.step()  # the second replica goes: counted terminating here, gone in the next pass
    assert scaled.delete_pods and not scaled.followup_settles
    assert not resync_settled(_follow_up(world, scaled, before), world.now, world.config)
