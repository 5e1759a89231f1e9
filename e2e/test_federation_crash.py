"""The federation is SIGKILLed during a burst of applies and restarted: every Job the API accepted
(answered 201) is still there, and runs to completion."""

from __future__ import annotations

import asyncio

import aiohttp
import pytest
from kubernetes_asyncio import client as k8s

from e2e.harness import JOB, api, apply, capacity_reported, gpu_job, phase, seed_one, until
from federation.client import ResourceClient
from federation.demo.observe import wait_clusters_ready
from federation.demo.processes import System

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(240)]
BURST = 40
KILL_AFTER = 12  # accepted creates before the SIGKILL
STREAMS = 4


async def _burst(rc: ResourceClient, system: System, accepted: list[str], killed: asyncio.Event, stream: int) -> None:
    for i in range(stream, BURST, STREAMS):
        name = f"burst-{i:02d}"
        try:
            await apply(rc, gpu_job(name, 1, 1, seconds=20))
        except (TimeoutError, k8s.ApiException, OSError, aiohttp.ClientError):
            if killed.is_set():
                return
            raise
        accepted.append(name)
        if len(accepted) == KILL_AFTER:
            # SIGKILL right here, while the other streams have requests in flight
            killed.set()
            assert system.federation is not None
            system.federation.kill()


async def test_federation_crash_keeps_every_accepted_job(systems) -> None:  # type: ignore[no-untyped-def]
    system: System = systems()
    accepted: list[str] = []
    killed = asyncio.Event()
    async with api(system) as rc:
        await capacity_reported(rc, system)  # placement counts on every cluster's capacity
        await apply(rc, seed_one("propagationpolicy-volcano-job-policy.yaml"))
        streams = [asyncio.ensure_future(_burst(rc, system, accepted, killed, s)) for s in range(STREAMS)]
        await asyncio.wait_for(asyncio.gather(*streams), 90)
    assert killed.is_set() and system.federation is not None and not system.federation.alive
    acknowledged = list(accepted)
    assert KILL_AFTER <= len(acknowledged) < BURST, "the kill landed in the middle of the burst"

    system.start_federation()
    async with api(system) as rc:
        await wait_clusters_ready(rc, ["cluster-a", "cluster-b"], 60)
        listed = await rc.list(JOB, "default")
        present = {j["metadata"]["name"] for j in listed["items"]}
        missing = sorted(set(acknowledged) - present)
        assert not missing, f"accepted before the crash but gone after the restart: {missing}"

        async def all_completed() -> bool:
            jobs = {j["metadata"]["name"]: phase(j) for j in (await rc.list(JOB, "default"))["items"]}
            return all(jobs.get(name) == "Completed" for name in acknowledged)

        await until(all_completed, 150, "every accepted job Completed after the restart")
