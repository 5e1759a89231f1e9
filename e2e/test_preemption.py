"""The seed's high-priority job preempts a low-priority one in the same queue.

One member cluster that admits five pods (``pods: 5``), its agent running the preempt action.
A low-priority job in queue ai-training runs 4 pods (``minAvailable: 1``, so gang lets 3 of them
go); then the seed's ``critical-training`` (4 pods, ``priorityClassName: high-priority``, same
queue) arrives. It can only run if the agent evicts three low-priority pods.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest

from e2e.harness import (
    DATA,
    Miss,
    Recorder,
    api,
    apply,
    capacity_reported,
    job_phase,
    named,
    seed_one,
    until,
    works_of,
)
from federation.demo.manifests import with_sim_duration
from federation.demo.processes import ClusterSpec, System

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(240)]
PREEMPT_CONF = ["--scheduler-conf", str(DATA / "scheduler-conf-preempt.yaml")]


async def test_high_priority_job_preempts_low_priority(systems) -> None:  # type: ignore[no-untyped-def]
    system: System = systems([ClusterSpec("cluster-a", DATA / "cluster-a-five-pods.yaml", PREEMPT_CONF)])
    low = named(seed_one("job-critical-training.yaml"), "low-priority-training", seconds=3000, minAvailable=1)
    del low["spec"]["priorityClassName"]
    for task in low["spec"]["tasks"]:
        task["template"]["spec"].pop("priorityClassName", None)
    high = with_sim_duration(seed_one("job-critical-training.yaml"), 30)
    async with api(system) as rc:
        await capacity_reported(rc, system)  # placement counts on every cluster's capacity
        await apply(rc, seed_one("queue-ai-training.yaml"), seed_one("priorityclass-high-priority.yaml"),
                    seed_one("propagationpolicy-volcano-job-policy.yaml"), low)

        async def low_fully_running() -> object:
            found = await job_phase(rc, "low-priority-training", "Running")
            return found if found and found["status"].get("running") == 4 else None

        await until(low_fully_running, 60, "the low-priority job running 4 pods")
        async with Recorder(rc, "jobs", "default") as jobs:  # every status the low job goes through from here
            await apply(rc, high)

            async def dispatched() -> object:
                return await works_of(rc, "critical-training") or await job_phase(rc, "critical-training", "Running")

            await until(dispatched, 20, "critical-training dispatched to cluster-a (its agent decides on preemption)")
            await until(lambda: job_phase(rc, "critical-training", {"Running", "Completed"}), 45,
                        "critical-training to run by preempting")

            def low_evicted() -> object:
                # read from the recorded statuses: once critical-training finishes the low job scales back up,
                # so a single read after it started may already be too late (or too early)
                running = [(o.get("status") or {}).get("running") or 0 for _, o in jobs.events
                           if o["metadata"]["name"] == "low-priority-training"]
                return running if min(running, default=4) <= 1 else Miss(f"low-priority-training running {running}")

            await until(_now(low_evicted), 30, "five pod slots: three low-priority pods evicted (running <= 1)")
        await until(lambda: job_phase(rc, "critical-training", "Completed"), 90, "critical-training Completed")


def _now(check: Callable[[], object]) -> Callable[[], Awaitable[object]]:
    async def probe() -> object:
        return check()
    return probe
