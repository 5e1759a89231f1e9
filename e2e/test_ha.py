"""The highly available federation as real processes on loopback: a 3-member etcd, 3 ``caldera serve``
(controllers leader-elected), 2 sim agents that know every replica (``--server`` x3).

kill -9 the leading replica in the middle of a burst of Job creates spread over the replicas
(e2e/ha_burst.py): every acknowledged create exists afterwards, another replica leads and places a
new Job within the lease duration + 5 s, every Job is placed exactly once (one Work per cluster of
its binding, one generation) and completes. Then one etcd member is killed and writes go on.
The same with 500 Jobs: bench/ha_burst.py. Two of three etcd members down: test_ha_quorum.py; a
paused leader: test_ha_paused_leader.py; two agent replicas: test_ha_agent_election.py.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from kubernetes_asyncio.client.exceptions import ApiException

from e2e.ha_burst import burst, check
from e2e.ha_system import HA, clients, until
from e2e.harness import JOB, named, seed_one

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(300)]
LEASE = ("6s", "4s", "0.5s")
JOBS = 12  # the CI size; bench/ha_burst.py runs 500


@pytest.fixture
async def ha(tmp_path: Path) -> AsyncIterator[HA]:
    system = HA(tmp_path, lease=LEASE)
    try:
        system.start()
        yield system
    finally:
        system.stop()


async def test_kill_the_leading_replica_mid_burst(ha: HA) -> None:
    figures = await burst(ha, JOBS)
    check(figures, ha.lease_seconds)
    ha.etcd.members[0].kill()  # one etcd member down: writes go on
    async with clients(ha) as rcs:
        survivor = rcs[int(figures.new_leader.rsplit("-", 1)[1])]
        await until(lambda: _create_ok(survivor), 30, "a write with one etcd member down")


async def _create_ok(rc: object) -> bool:
    try:
        await rc.create(JOB, named(seed_one("job-pytorch-dist-training.yaml"), "after-etcd-kill", seconds=1),  # type: ignore[attr-defined]
                        "default")
    except ApiException as exc:
        return exc.status == 409
    return True
