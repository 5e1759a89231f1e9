"""SIGSTOP the leading ``caldera serve`` replica for longer than the lease, then SIGCONT it.

Real processes (3 etcd, 3 ``caldera serve``, 2 sim agents). Jobs are created just before the pause,
so the leader's informers hold events it had no time to act on. While it is stopped another replica
takes the Lease (within the lease duration + 5 s) and places those Jobs. After SIGCONT the old
leader steps down (its log says so), the Lease keeps its new holder, and none of its late writes
lands: every Job still has exactly one Work per cluster of its binding, of one placement
generation, the same Work objects (uid, generation) as before SIGCONT, and no binding's placement
generation moved.
"""

from __future__ import annotations

import asyncio
import signal
import time
from typing import Any

import pytest

from e2e.ha_system import HA, LEASE_KIND, clients, leads, lease_holder, other_holder, until
from e2e.harness import JOB, WORK, apply, named, seed_one
from policies.kinds import lookup

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(180)]
LEASE = ("5s", "4s", "0.5s")
BINDING = lookup("work.karmada.io/v1alpha2", "ResourceBinding")
BEFORE, DURING = 2, 4  # Jobs placed before the pause; Jobs created right before SIGSTOP


@pytest.fixture
def ha_spec() -> dict[str, Any]:
    return {"lease": LEASE}


async def placements(rc: Any) -> dict[str, Any]:
    """job -> sorted (cluster, Work uid, placement generation), and binding -> placement generation."""
    works: dict[str, list[tuple[str, str, int]]] = {}
    for work in (await rc.list(WORK))["items"]:
        job = (work["metadata"].get("labels") or {}).get("caldera.io/job", "")
        works.setdefault(job, []).append((work["metadata"]["namespace"].removeprefix("karmada-es-"),
                                          work["metadata"]["uid"], work["spec"]["placement"]["generation"]))
    bindings = {b["metadata"]["name"]: (
        (b["metadata"].get("annotations") or {}).get("caldera.io/placement-generation"),
        sorted(c["name"] for c in (b.get("spec") or {}).get("clusters") or []))
        for b in (await rc.list(BINDING, "default"))["items"]}
    return {"works": {k: sorted(v) for k, v in works.items()}, "bindings": bindings}


def placed_once(snapshot: dict[str, Any], names: list[str], strict: bool = False) -> bool:
    """Every Job has one Work per cluster of its binding, of one generation (``strict``: assert it;
    otherwise False while Works are still being written)."""
    for name in names:
        works = snapshot["works"].get(f"default.{name}") or []
        binding = next((v for k, v in snapshot["bindings"].items() if k.startswith(name)), None)
        if not works or binding is None or not binding[1]:
            return False
        clusters = [w[0] for w in works]
        good = sorted(set(clusters)) == clusters == binding[1] and len({w[2] for w in works}) == 1
        assert good or not strict, f"{name}: Works {works}, binding {binding}"
        if not good:
            return False
    return True


async def test_paused_leader_steps_down_and_its_late_writes_do_not_land(ha: HA) -> None:
    base = seed_one("job-pytorch-dist-training.yaml")
    async with clients(ha) as rcs:
        leader = await until(lambda: lease_holder(rcs[0]), 60, "a controllers leader")
        old = ha.serves[int(leader.rsplit("-", 1)[1])]
        survivor = rcs[(int(leader.rsplit("-", 1)[1]) + 1) % 3]
        # The seed's ai-training Queue caps 32 GPUs fleet-wide, two of these 16-GPU Jobs: this test is about
        # the leader, not the queue, so it runs them in the queue without its cap.
        queue = seed_one("queue-ai-training.yaml")
        queue["spec"].pop("capability", None)
        await apply(survivor, queue, seed_one("propagationpolicy-volcano-job-policy.yaml"))
        names = [f"steady-{n}" for n in range(BEFORE)]
        for name in names:
            await survivor.create(JOB, named(base, name, seconds=600), "default")

        async def placed(wanted: list[str]) -> Any:
            snapshot = await placements(survivor)
            return snapshot if placed_once(snapshot, wanted) else None

        await until(lambda: placed(names), 60, "the first Jobs placed")
        await until(lambda: _leads(ha, leader, 1.0), 30, f"{leader} leading before the pause")
        late = [f"late-{n}" for n in range(DURING)]
        for name in late:  # the leader sees these (its informers) but is stopped before it can settle them
            await survivor.create(JOB, named(base, name, seconds=600), "default")
        old._signal_group(signal.SIGSTOP)
        stopped_at = time.monotonic()
        try:
            new = await until(lambda: other_holder(survivor, leader), ha.lease_seconds + 10, "a new leader")
            took = time.monotonic() - stopped_at
            assert took <= ha.lease_seconds + 5, f"new leader {new} after {took:.1f}s"
            before = await until(lambda: placed(names + late), 60, "every Job placed by the new leader")
            # the scenario's length, not a wait for state: the pause lasts 1.5 lease durations
            await asyncio.sleep(max(0.0, ha.lease_seconds * 1.5 - (time.monotonic() - stopped_at)))
            lease = (await survivor.get(LEASE_KIND, "caldera-controllers",
                                        "caldera-system"))["spec"]
            seen = len(old.output())
        finally:
            old._signal_group(signal.SIGCONT)

        await until(lambda: _leads(ha, leader, 0.0), 30, f"{leader} to step down after SIGCONT")
        # the gauge reads 0 from the first scrape (the deadline is judged when read); the loop logs its step-down
        await until(lambda: _stepped_down(old, seen), 30, f"{leader}'s log to say it stepped down")
        for _ in range(2):  # the old leader's controllers had two of the new leader's retry periods to write
            renewed = (await survivor.get(LEASE_KIND, "caldera-controllers", "caldera-system"))["spec"]["renewTime"]
            await until(lambda r=renewed: _renewed_since(survivor, r, new), 10, "the new leader renewing")
        after = await placements(survivor)
        assert placed_once(after, names + late, strict=True)
        assert after == before, "a late write of the deposed leader landed"
        now = (await survivor.get(LEASE_KIND, "caldera-controllers",
                                  "caldera-system"))["spec"]
        assert now["holderIdentity"] == new and now["leaseTransitions"] == lease["leaseTransitions"], now
        assert old.alive, "the old leader stepped down, it did not exit"


async def _stepped_down(proc: Any, seen: int) -> bool:
    said = proc.output()[seen:]
    return "stepping down" in said or "lost Lease" in said


async def _leads(ha: HA, identity: str, wanted: float) -> bool:
    return await leads(ha.urls[int(identity.rsplit("-", 1)[1])], identity) == wanted


async def _renewed_since(rc: Any, renew_time: str, holder: str) -> bool:
    spec = (await rc.get(LEASE_KIND, "caldera-controllers", "caldera-system"))["spec"]
    return spec["holderIdentity"] == holder and spec["renewTime"] > renew_time
