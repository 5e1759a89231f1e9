"""Every lifecycle event → action pair, as rows of tests/controllers/data/lifecycle.yaml."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from member_agent.controllers.requests import JobAction, JobEvent, JobRequest
from tests.controllers.harness import World, make_job, worker_task

ROWS = yaml.safe_load((Path(__file__).parent / "data" / "lifecycle.yaml").read_text())


def build_spec(row_spec: dict[str, Any]) -> dict[str, Any]:
    spec = {"minAvailable": 2, "maxRetry": 3, **{k: v for k, v in row_spec.items() if k != "tasks"}}
    tasks = []
    for task in row_spec.get("tasks") or [{"task": "worker"}]:
        extra = {k: v for k, v in task.items() if k not in ("task", "replicas")}
        tasks.append(worker_task(task["task"], task.get("replicas", 2), **extra))
    spec["tasks"] = tasks
    return spec


def start_pending(world: World) -> None:
    world.step()
    world.set_pod_group_phase("Inqueue")
    world.step()  # creates the pods
    world.step()  # observes them: PodPending


def restart_world(world: World) -> None:
    world.settle()
    if world.pod_group is not None and not (world.pod_group.status and world.pod_group.status.phase):
        world.set_pod_group_phase("Inqueue")
    world.settle()
    world.set_pod_group_phase("Running")
    world.set_all("Running")
    world.settle()


def run_op(world: World, op: dict[str, Any]) -> None:
    if "fail" in op:
        world.set_pod(op["fail"], "Failed", exit_code=op.get("exitCode", 1))
    elif "evict" in op:
        world.evict(op["evict"])
    elif "succeed" in op:
        world.set_pod(op["succeed"], "Succeeded", exit_code=0)
    elif "restarts" in op:
        world.set_pod(op["restarts"], "Running", restarts=op["count"])
    elif "podGroup" in op:
        world.set_pod_group_phase(op["podGroup"])
    elif "updateSpec" in op:
        world.update_spec(**op["updateSpec"])
    elif "runAll" in op:
        world.set_all("Running")
    elif "wait" in op:
        # the next step adds its own second
        world.now = world.now + timedelta(seconds=op["wait"] - 1)
    elif "settle" in op:
        world.settle()
    elif "command" in op:
        world.extra_requests.append(JobRequest(event=JobEvent.COMMAND_ISSUED, at=world.now,
                                               action=JobAction(op["command"])))
    elif "restartWorld" in op:
        restart_world(world)
    elif "staleFailure" in op:
        version = (world.job.status.version or 0) - 1
        world.extra_requests.append(JobRequest(event=JobEvent.POD_FAILED, at=world.now, task="worker",
                                               pod=op["staleFailure"], exit_code=1, job_version=version))
    else:  # pragma: no cover - a typo in the table
        raise AssertionError(f"unknown op {op}")


def check(world: World, expect: dict[str, Any]) -> None:
    plan = world.plans[-1]
    status = world.job.status
    assert status is not None
    if "actions" in expect:
        assert [a.value for a in plan.actions] == expect["actions"]
    if "phase" in expect:
        assert world.phase == expect["phase"]
    if "retryCount" in expect:
        assert (status.retry_count or 0) == expect["retryCount"]
    if "version" in expect:
        assert (status.version or 0) == expect["version"]
    if "deleted" in expect:
        assert sorted(d.name for d in plan.delete_pods) == sorted(expect["deleted"])
    if "podGroup" in expect:
        want = expect["podGroup"]
        if want == "present":
            assert world.pod_group is not None
        else:
            assert (plan.pod_group_action or "none") == want
    if "pods" in expect:
        assert sorted(world.pods) == sorted(expect["pods"])
    if "deferred" in expect:
        assert len(plan.deferred) == expect["deferred"]
    if "event" in expect:
        assert expect["event"] in [e.message for e in plan.events]


@pytest.mark.parametrize("row", ROWS, ids=[r["name"] for r in ROWS])
def test_lifecycle_row(row: dict[str, Any]) -> None:
    world = World(make_job(build_spec(row.get("spec") or {})))
    if row.get("start") == "pending":
        start_pending(world)
    else:
        world.start()
    for op in row["do"]:
        run_op(world, op)
    world.step()
    check(world, row["expect"])
    then = row.get("then")
    if then:
        if "wait" in then:
            run_op(world, {"wait": then["wait"]})
            world.step()
        restart_world(world) if then.get("runAll") else _settle_with_scheduler(world)
        check(world, then)


def _settle_with_scheduler(world: World) -> None:
    """Settle, letting the 'scheduler' enqueue a fresh PodGroup so pods get created."""
    world.settle()
    if world.pod_group is not None and not (world.pod_group.status and world.pod_group.status.phase):
        world.set_pod_group_phase("Inqueue")
        world.settle()
