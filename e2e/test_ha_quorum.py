"""etcd loses quorum under a running HA federation (3 etcd, 3 ``caldera serve``, 2 sim agents).

Two of three etcd members are killed: a write through any replica is a 503 Status that says the
storage is unavailable and nothing changed, a read says etcd cannot serve it. The members come back:
everything acknowledged before is there, and the controllers resume by themselves (no process is
restarted): a Job created after quorum returns is placed, runs and completes, and so does the Job
acknowledged just before quorum was lost.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio.client.exceptions import ApiException

from e2e.ha_system import HA, clients, lease_holder, until
from e2e.harness import JOB, apply, named, phase, seed_one

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(180)]
LEASE = ("4s", "3s", "0.5s")


@pytest.fixture
async def ha(tmp_path: Path) -> AsyncIterator[HA]:
    system = HA(tmp_path, lease=LEASE)
    try:
        system.start()
        yield system
    finally:
        system.stop()


async def _status_of(call: Any) -> Any:
    """The ApiException a call raises (None when it succeeds)."""
    try:
        await call()
    except ApiException as exc:
        return exc
    return None


async def _created(rc: Any, body: dict[str, Any]) -> bool:
    try:
        await rc.create(JOB, body, "default")
    except ApiException as exc:
        if exc.status == 409:  # an earlier attempt that answered 503 did commit
            return True
        raise
    return True


async def test_quorum_lost_and_back_controllers_resume(ha: HA) -> None:
    base = seed_one("job-pytorch-dist-training.yaml")
    async with clients(ha) as rcs:
        await until(lambda: lease_holder(rcs[0]), 60, "a controllers leader")
        await apply(rcs[1], seed_one("queue-ai-training.yaml"), seed_one("propagationpolicy-volcano-job-policy.yaml"))
        await until(lambda: _created(rcs[2], named(base, "before-quorum-loss", seconds=2)), 30, "a first create")
        ha.etcd.members[1].kill()
        ha.etcd.members[2].kill()

        async def refused_write() -> Any:
            exc = await _status_of(lambda: rcs[0].create(JOB, named(base, "no-quorum", seconds=2), "default"))
            return exc if exc is not None and exc.status == 503 else None

        exc = await until(refused_write, 30, "a write refused with 503")
        assert "storage unavailable: etcd" in exc.body and "nothing changed" in exc.body, exc.body
        read = await _status_of(lambda: rcs[1].get(JOB, "before-quorum-loss", "default"))
        assert read is not None and read.status == 503 and "etcd cannot serve the read" in read.body, read
        for member in ha.etcd.members[1:]:
            ha.etcd.restart(member)
        ha.etcd.wait_healthy()
        await until(lambda: _created(rcs[0], named(base, "after-quorum-back", seconds=2)), 30,
                    "a write once quorum is back")
        names = {o["metadata"]["name"] for o in (await rcs[1].list(JOB, "default"))["items"]}
        assert "before-quorum-loss" in names, "acknowledged before the loss, missing after"

        async def both_completed() -> Any:
            phases = {n: phase(await rcs[2].get(JOB, n, "default"))
                      for n in ("before-quorum-loss", "after-quorum-back")}
            return all(p == "Completed" for p in phases.values()) or None

        await until(both_completed, 90, "both Jobs Completed with no process restarted")
        assert await lease_holder(rcs[0]) in {"serve-0", "serve-1", "serve-2"}
        assert all(proc.alive for proc in ha.serves), "no replica exited"
