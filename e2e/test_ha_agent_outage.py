"""Every federation endpoint down: the elected agent's member cluster goes on, and the agent comes back by itself.

Real processes: 3 etcd, 3 ``caldera serve``, two ``caldera agent --sim --leader-elect`` for cluster-a
(their Lease lives in the federation, so with no endpoint the leader cannot renew). A long Job runs on the
leader. kill -9 all three API replicas: the leader steps down within its renew deadline (it stops
scheduling and writing), but its simulated kubelet keeps the pods Running, unchanged, for more than a
lease duration; at no moment do both replicas lead. Start the replicas again on the same etcd: one agent
renews or takes the Lease by itself (no agent restarted), and a Job created then is placed and completes.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from e2e.ha_system import HA, clients, lease_holder, until
from e2e.harness import JOB, apply, gpu_job, job_phase, named, seed_one

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(240)]
AGENT_LEASE = ("5s", "3s", "1s")
SERVE_LEASE = ("5s", "4s", "0.5s")
ELECTION = ("caldera-agent-cluster-a", "caldera-system")
AGENT_LEASE_SECONDS = float(AGENT_LEASE[0].removesuffix("s"))


@pytest.fixture
def ha_spec() -> dict[str, Any]:
    return {"lease": SERVE_LEASE, "agent_replicas": {"cluster-a": 2}, "agent_lease": AGENT_LEASE}


async def leaders(ha: HA) -> dict[int, dict[str, Any]]:
    """replica -> /status of each agent replica that says it leads; fencing: never two."""
    statuses = {r: await ha.agent_status(("cluster-a", r)) for r in (0, 1)}
    leading = {r: s for r, s in statuses.items() if s["leading"]}
    assert len(leading) <= 1, f"both agent replicas lead: {statuses}"
    return leading


async def test_agent_keeps_its_cluster_through_a_federation_outage_and_reconnects(ha: HA) -> None:
    async with clients(ha) as rcs:
        holder = await until(lambda: lease_holder(rcs[0], *ELECTION), 60, "an agent leader for cluster-a")
        leading = int(holder.rsplit("-", 1)[1])
        await apply(rcs[1], seed_one("queue-ai-training.yaml"), seed_one("propagationpolicy-volcano-job-policy.yaml"))
        await rcs[2].create(JOB, named(seed_one("job-pytorch-dist-training.yaml"), "steady", seconds=3000), "default")

        async def pods_running() -> Any:
            status = (await leaders(ha)).get(leading)
            running = (status or {}).get("podPhases", {}).get("Running", 0)
            return status if status and running and running == status["pods"] else None

        before = await until(pods_running, 90, f"agent {holder} running the Job's pods")
        running_pods = before["podPhases"]["Running"]

    ha.kill_serves()
    killed_at = time.monotonic()

    async def stepped_down() -> Any:
        return not await leaders(ha)

    await until(stepped_down, float(AGENT_LEASE[1].removesuffix("s")) + 5, "the leader stepping down")
    # The member cluster as it is, checked on every poll for a whole lease duration after the kill.
    while time.monotonic() < killed_at + AGENT_LEASE_SECONDS + 1:
        status = await ha.agent_status(("cluster-a", leading))
        assert status["podPhases"] == {"Running": running_pods}, f"pods changed without a federation: {status}"
        assert not status["federationConnected"] and not await leaders(ha)
        assert ha.agents["cluster-a", leading].alive and ha.agents["cluster-a", 1 - leading].alive

    ha.restart_serves()
    async with clients(ha) as rcs:
        async def one_leads_again() -> Any:
            now = await leaders(ha)
            held = await lease_holder(rcs[0], *ELECTION)
            return now if now and held == f"agent-cluster-a-{next(iter(now))}" else None

        back = await until(one_leads_again, 60, "an agent replica leading cluster-a again")
        new_leader = next(iter(back))
        await rcs[0].create(JOB, gpu_job("after-outage", 1, 1, 20, queue="ai-training"), "default")

        async def completed() -> Any:
            await leaders(ha)  # fencing holds while the new Job runs
            return await job_phase(rcs[1], "after-outage", "Completed")

        await until(completed, 120, "the Job created after the outage completing")
        assert all(proc.alive for proc in ha.agents.values()), "an agent replica exited (nothing may restart)"
        if new_leader == leading:  # the same replica: its cluster kept the first Job's pods all along
            status = await ha.agent_status(("cluster-a", leading))
            assert status["podPhases"].get("Running", 0) >= running_pods, status
