"""Two agent replicas for one member cluster elect a leader; only the leader schedules and writes.

Real processes: 3 etcd, 3 ``caldera serve``, two ``caldera agent --sim --leader-elect`` for
cluster-a, the only member cluster (their Lease ``caldera-system/caldera-agent-cluster-a``
lives in the federation). A Job runs: the leader holds its Works and bound pods and renews the
cluster Lease, the standby has no Work, no pod and made no federation write. kill -9 the leader:
the standby takes the Lease within the lease duration + 5 s and runs the Job's pods itself.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from e2e.ha_system import HA, clients, lease_holder, other_holder, until
from e2e.harness import JOB, apply, named, phase, seed_one

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(180)]
LEASE = ("5s", "3s", "1s")  # kubernetes-asyncio allows no retry period under 1 s
ELECTION = ("caldera-agent-cluster-a", "caldera-system")


@pytest.fixture
def ha_spec() -> dict[str, Any]:
    return {"agent_replicas": {"cluster-a": 2}, "agent_lease": LEASE}


def _acting(status: dict[str, Any]) -> bool:
    return bool(status["works"]) and status["boundPods"] > 0


async def test_one_agent_replica_leads_and_the_other_takes_over(ha: HA) -> None:
    async with clients(ha) as rcs:
        holder = await until(lambda: lease_holder(rcs[0], *ELECTION), 60, "an agent leader for cluster-a")
        leading = int(holder.rsplit("-", 1)[1])
        standby = 1 - leading
        await apply(rcs[1], seed_one("queue-ai-training.yaml"), seed_one("propagationpolicy-volcano-job-policy.yaml"))
        job = named(seed_one("job-pytorch-dist-training.yaml"), "elected", seconds=600)  # on cluster-a: the only one
        await rcs[2].create(JOB, job, "default")

        async def leader_runs() -> Any:
            status = await ha.agent_status(("cluster-a", leading))
            return status if _acting(status) else None

        await until(leader_runs, 60, f"agent {holder} running the Job's pods")
        assert phase(await rcs[0].get(JOB, "elected", "default")) in {"Pending", "Running"}
        quiet = await ha.agent_status(("cluster-a", standby))
        assert not quiet["works"] and quiet["boundPods"] == 0, f"the standby acted: {quiet}"
        assert quiet["leaseRenewals"] == 0 and not quiet["federationConnected"], "the standby wrote to the federation"
        assert (await lease_holder(rcs[0], *ELECTION)) == holder

        ha.agents["cluster-a", leading].kill()
        killed_at = time.monotonic()
        new = await until(lambda: other_holder(rcs[0], holder, *ELECTION), ha.lease_seconds + 10,
                          "the standby agent taking the Lease")
        took = time.monotonic() - killed_at
        assert new == f"agent-cluster-a-{standby}" and took <= float(LEASE[0].removesuffix("s")) + 5, \
            f"{new} after {took:.1f}s"

        async def standby_runs() -> Any:
            status = await ha.agent_status(("cluster-a", standby))
            return status if _acting(status) else None

        await until(standby_runs, 60, "the new leader agent running the Job's pods")
