"""The highly available federation as real processes on loopback: a 3-member etcd, 3 ``caldera serve``
(controllers leader-elected), 2 sim agents that know every replica (``--server`` x3).

One system, one story (a second system would cost its start-up again):

1. kill -9 the leading replica in the middle of a burst of Job creates spread over the replicas
   (e2e/ha_burst.py): every acknowledged create exists afterwards, another replica leads and creates
   a Work within the lease duration + 5 s, every Job is placed exactly once (one Work per cluster of
   its binding, one generation) and completes. The same with 500 Jobs: bench/ha_burst.py.
2. kill one etcd member: writes go on.
3. kill a second one: a write through any replica is a 503 Status that says the storage is
   unavailable and nothing changed, a read says etcd cannot serve it.
4. both members back: everything acknowledged is there, and the controllers resume by themselves (no
   process restarted): a Job created then is placed, runs and completes.

A paused leader: test_ha_paused_leader.py; two agent replicas: test_ha_agent_election.py.
"""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes_asyncio.client.exceptions import ApiException

from e2e.ha_burst import burst, check
from e2e.ha_system import HA, clients, lease_holder, until
from e2e.harness import JOB, named, phase, seed_one

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(300)]
LEASE = ("6s", "4s", "0.5s")
JOBS = 12  # the CI size; bench/ha_burst.py runs 500


@pytest.fixture
def ha_spec() -> dict[str, Any]:
    return {"lease": LEASE}


async def _created(rc: Any, body: dict[str, Any]) -> bool:
    try:
        await rc.create(JOB, body, "default")
    except ApiException as exc:
        if exc.status == 409:  # an earlier attempt that answered 503 did commit
            return True
        raise
    return True


async def _error_of(call: Any) -> ApiException | None:
    try:
        await call()
    except ApiException as exc:
        return exc
    return None


async def test_leader_killed_mid_burst_then_etcd_members_lost_and_back(ha: HA) -> None:
    figures = await burst(ha, JOBS)
    check(figures, ha.lease_seconds)
    base = seed_one("job-pytorch-dist-training.yaml")
    async with clients(ha) as all_rcs:
        rcs = [rc for i, rc in enumerate(all_rcs) if ha.serves[i].alive]
        ha.etcd.members[0].kill()  # one etcd member down: writes go on
        await until(lambda: _created(rcs[0], named(base, "one-etcd-down", seconds=2)), 30,
                    "a write with one etcd member down")
        ha.etcd.members[1].kill()  # two of three: no quorum

        async def refused_write() -> Any:
            exc = await _error_of(lambda: rcs[1].create(JOB, named(base, "no-quorum", seconds=2), "default"))
            return exc if exc is not None and exc.status == 503 else None

        exc = await until(refused_write, 30, "a write refused with 503")
        assert "storage unavailable: etcd" in exc.body and "nothing changed" in exc.body, exc.body
        read = await _error_of(lambda: rcs[0].get(JOB, "one-etcd-down", "default"))
        assert read is not None and read.status == 503 and "etcd cannot serve the read" in read.body, read
        for member in ha.etcd.members[:2]:
            ha.etcd.restart(member)
        ha.etcd.wait_healthy()
        await until(lambda: _created(rcs[1], named(base, "quorum-back", seconds=2)), 30, "a write once quorum is back")
        names = {o["metadata"]["name"] for o in (await rcs[0].list(JOB, "default"))["items"]}
        missing = (figures.acknowledged | {"one-etcd-down"}) - names
        assert not missing, f"acknowledged before the loss, missing after: {sorted(missing)}"

        async def both_completed() -> Any:
            phases = [phase(await rcs[0].get(JOB, n, "default")) for n in ("one-etcd-down", "quorum-back")]
            return all(p == "Completed" for p in phases) or None

        await until(both_completed, 90, "Jobs Completed after quorum returned, no process restarted")
        assert await lease_holder(rcs[0]) in {f"serve-{i}" for i, p in enumerate(ha.serves) if p.alive}
        assert sum(p.alive for p in ha.serves) == 2, "the surviving replicas did not exit"
