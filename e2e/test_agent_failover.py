"""An agent is SIGKILLed mid-job: its lease expires, the cluster turns NotReady, and after the
failover grace the job (policy ``PodEvicted -> RestartJob``) is placed again, whole, on the
remaining cluster, and completes there."""

from __future__ import annotations

import pytest

from e2e.harness import CLUSTER, api, apply, capacity_reported, job_phase, named, seed_one, shares, until
from federation.demo.observe import Share, cluster_view
from federation.demo.processes import System

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(240)]

#: short health thresholds so the scenario takes seconds, not Karmada's minutes; the lease grace
#: leaves agents (renewing every 2 s) five missed renewals, so a busy CI machine does not fail cluster-a too
HEALTH_FLAGS = ("--cluster-lease-grace", "10", "--cluster-failover-grace", "3", "--cluster-monitor-period", "1",
                "--cluster-success-threshold", "2")


async def test_killed_agent_job_moves_whole_to_the_other_cluster(systems) -> None:  # type: ignore[no-untyped-def]
    system: System = systems(serve_args=HEALTH_FLAGS)
    # the seed's pytorch-dist-training (master + 3 workers, RestartJob on PodEvicted/PodFailed)
    job = named(seed_one("job-pytorch-dist-training.yaml"), "failover-training", seconds=150)
    async with api(system) as rc:
        await capacity_reported(rc, system)  # placement counts on every cluster's capacity
        await apply(rc, seed_one("queue-ai-training.yaml"), seed_one("propagationpolicy-volcano-job-policy.yaml"), job)
        await until(lambda: job_phase(rc, "failover-training", "Running"), 90, "failover-training Running")
        before = await shares(rc, "failover-training")
        assert set(before) == {"cluster-a", "cluster-b"}, "the 1:2 policy divides the job over both clusters"
        generation = max(s.generation for s in before.values())

        system.agents["cluster-b"].kill()

        async def not_ready() -> object:
            view = cluster_view(await rc.get(CLUSTER, "cluster-b"))
            return view if view.ready != "True" else None

        await until(not_ready, 60, "cluster-b to turn NotReady after its lease expired")

        async def no_execute() -> object:
            view = cluster_view(await rc.get(CLUSTER, "cluster-b"))
            return view.taints if any(t.endswith(":NoExecute") for t in view.taints) else None

        await until(no_execute, 60, "a NoExecute taint on cluster-b after the failover grace")

        async def replaced() -> dict[str, Share] | None:
            now = await shares(rc, "failover-training")
            return now if set(now) == {"cluster-a"} and max(s.generation for s in now.values()) > generation else None

        after = await until(replaced, 90, "the whole job placed again on cluster-a")
        assert after["cluster-a"].replicas == 4 and after["cluster-a"].min_available == 4
        assert set(after["cluster-a"].tasks) == {"master", "worker"}
        done = await until(lambda: job_phase(rc, "failover-training", "Completed"), 120, "failover-training Completed")
    assert [c["name"] for c in done["status"]["clusters"]] == ["cluster-a"]
    assert done["status"]["clusters"][0]["succeeded"] == 4
