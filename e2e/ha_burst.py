"""kill -9 the leading ``caldera serve`` in the middle of a burst of Job creates spread over the replicas.

Shared by e2e/test_ha.py (a few Jobs) and bench/ha_burst.py (500). :func:`burst` returns the
figures; :func:`check` asserts the issue's promises on them:

* every acknowledged create exists afterwards;
* another replica holds the controllers' Lease within the lease duration + 5 s of the kill, and acts:
  a Work that did not exist at the kill appears (a Job created right after the kill is placed too,
  once the burst's gangs free the GPUs: that time is reported, not bounded);
* every Job is placed exactly once: its Works are exactly one per cluster of its binding, all of one
  placement generation (no duplicate Work, no half-placed gang);
* every Job completes (each gang ran whole).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass, field
from typing import Any

from kubernetes_asyncio.client.exceptions import ApiException

from e2e.ha_system import HA, clients, lease_holder, other_holder, until
from e2e.harness import JOB, WORK, apply, named, phase, seed_one
from policies.kinds import lookup

BINDING = lookup("work.karmada.io/v1alpha2", "ResourceBinding")
PROBE = "after-kill"


@dataclass
class Figures:
    jobs: int
    acknowledged: set[str] = field(default_factory=set)
    errors: list[str] = field(default_factory=list)
    created: int = 0
    listed: set[str] = field(default_factory=set)
    placed_once: int = 0
    misplaced: list[str] = field(default_factory=list)
    completed: int = 0
    failover_s: float = 0.0  # kill -> another replica holds the Lease
    acted_s: float = 0.0  # kill -> the first Work created after the kill (only a leader creates Works)
    probe_placed_s: float = 0.0  # kill -> that Job has its Works (waits for GPUs the burst holds)
    burst_s: float = 0.0  # first create -> last acknowledgement
    complete_s: float = 0.0  # kill -> every Job Completed
    old_leader: str = ""
    new_leader: str = ""

    def lines(self) -> list[str]:
        return [f"jobs requested      {self.jobs}",
                f"acknowledged        {len(self.acknowledged)}",
                f"created (listed)    {self.created}",
                f"placed once         {self.placed_once}",
                f"completed           {self.completed}",
                f"burst               {self.burst_s:.1f} s",
                f"failover (Lease)    {self.failover_s:.1f} s  ({self.old_leader} -> {self.new_leader})",
                f"new leader acts     {self.acted_s:.1f} s  (its first new Work)",
                f"that Job placed     {self.probe_placed_s:.1f} s  (Works; it queues behind the burst for GPUs)",
                f"all completed after {self.complete_s:.1f} s from the kill",
                f"create errors       {len(self.errors)} (retried on another replica)"]


async def _create(rcs: list[Any], alive: list[int], body: dict[str, Any], n: int, figures: Figures) -> None:
    name = body["metadata"]["name"]
    for attempt in range(8):  # a create that failed on the killed replica is retried elsewhere
        rc = rcs[n % len(rcs)] if attempt == 0 else rcs[alive[(n + attempt) % len(alive)]]
        try:
            await rc.create(JOB, body, "default")
            figures.acknowledged.add(name)
            return
        except ApiException as exc:
            if exc.status == 409:  # an earlier attempt committed although its answer was lost
                figures.acknowledged.add(name)
                return
            figures.errors.append(f"{name}: {exc.status} {exc.reason}")
        except Exception as exc:  # noqa: BLE001 (connection refused/reset by the killed replica)
            figures.errors.append(f"{name}: {exc!r}")
        await asyncio.sleep(0.2 * (attempt + 1))


async def _placements(rc: Any, names: set[str]) -> tuple[int, list[str]]:
    bindings = {b["metadata"]["name"]: b for b in (await rc.list(BINDING, "default"))["items"]}
    works: dict[str, list[tuple[str, int]]] = {}
    for work in (await rc.list(WORK))["items"]:
        job = (work["metadata"].get("labels") or {}).get("caldera.io/job", "")
        works.setdefault(job, []).append((work["metadata"]["namespace"].removeprefix("karmada-es-"),
                                          work["spec"]["placement"]["generation"]))
    once, wrong = 0, []
    for name in sorted(names):
        binding = bindings.get(f"{name}-job") or bindings.get(name) or {}
        placed = sorted(c["name"] for c in (binding.get("spec") or {}).get("clusters") or [])
        found = sorted(works.get(f"default.{name}", []))
        clusters = [c for c, _ in found]
        if placed and clusters == placed and len({g for _, g in found}) == 1:
            once += 1
        else:
            wrong.append(f"{name}: Works {found}, binding clusters {placed}")
    return once, wrong


async def burst(ha: HA, jobs: int, seconds: int = 2, kill_after: float = 1 / 3,
                complete_timeout: float = 150.0) -> Figures:
    """Create ``jobs`` Jobs over the 3 replicas; kill -9 the leader once ``kill_after`` of them are acknowledged."""
    figures = Figures(jobs)
    async with clients(ha) as rcs:
        figures.old_leader = await until(lambda: lease_holder(rcs[0]), 60, "a controllers leader")
        index = int(figures.old_leader.rsplit("-", 1)[1])
        alive = [i for i in range(3) if i != index]
        await apply(rcs[alive[0]], seed_one("queue-ai-training.yaml"),
                    seed_one("propagationpolicy-volcano-job-policy.yaml"))
        base = seed_one("job-pytorch-dist-training.yaml")
        bodies = [named(base, f"burst-{n}", seconds=seconds) for n in range(jobs)]
        started = time.monotonic()
        tasks = [asyncio.ensure_future(_create(rcs, alive, body, n, figures)) for n, body in enumerate(bodies)]
        wanted = max(1, int(jobs * kill_after))
        await until(lambda: asyncio.sleep(0, len(figures.acknowledged) >= wanted), 120,
                    f"{wanted} creates acknowledged")
        killed_at = time.monotonic()
        ha.serves[index].kill()
        survivor = rcs[alive[0]]
        before = await until(lambda: _work_uids(survivor), 30, "the Works at the kill")
        await until(lambda: _create_probe(survivor, named(base, PROBE, seconds=seconds)), 30, "the probe Job")
        figures.new_leader = await until(lambda: other_holder(survivor, figures.old_leader),
                                         ha.lease_seconds + 30, "a new controllers leader")
        figures.failover_s = time.monotonic() - killed_at
        await until(lambda: _new_work(survivor, before), ha.lease_seconds + 60, "the new leader creating a Work")
        figures.acted_s = time.monotonic() - killed_at
        await asyncio.gather(*tasks)
        figures.burst_s = time.monotonic() - started
        names = {o["metadata"]["name"] for o in (await survivor.list(JOB, "default"))["items"]
                 if o["metadata"]["name"].startswith("burst-")}
        figures.created, figures.listed = len(names), names
        await until(lambda: _has_works(survivor, PROBE), complete_timeout, "the new leader placing a Job")
        figures.probe_placed_s = time.monotonic() - killed_at

        async def all_completed() -> bool:
            items = (await survivor.list(JOB, "default"))["items"]
            figures.completed = sum(1 for o in items if o["metadata"]["name"] in names and phase(o) == "Completed")
            return figures.completed == len(names)

        with contextlib.suppress(AssertionError):  # the figures say how many did; check() fails on it
            await until(all_completed, complete_timeout, "every burst Job Completed")
        figures.complete_s = time.monotonic() - killed_at
        figures.placed_once, figures.misplaced = await _placements(survivor, names)
    return figures


async def _create_probe(rc: Any, body: dict[str, Any]) -> bool:
    try:
        await rc.create(JOB, body, "default")
    except ApiException as exc:
        if exc.status != 409:
            raise
    return True


async def _work_uids(rc: Any) -> set[str] | None:
    uids = {w["metadata"]["uid"] for w in (await rc.list(WORK))["items"]}
    return uids or {""}  # a non-empty (truthy) answer even before the first Work


async def _new_work(rc: Any, before: set[str]) -> bool:
    return bool(await _work_uids(rc) - before - {""})


async def _has_works(rc: Any, name: str) -> bool:
    listed = await rc.list(WORK, label_selector=f"caldera.io/job=default.{name}")
    return bool(listed.get("items"))


def check(figures: Figures, lease_seconds: float) -> None:
    lost = figures.acknowledged - figures.listed
    assert not lost, f"acknowledged but missing: {sorted(lost)[:5]}"
    assert len(figures.acknowledged) == figures.jobs, f"not acknowledged after retries: {figures.errors[-3:]}"
    assert figures.new_leader != figures.old_leader
    assert figures.failover_s <= lease_seconds + 5, f"new leader after {figures.failover_s:.1f}s"
    assert figures.acted_s <= lease_seconds + 5, f"the new leader's first Work {figures.acted_s:.1f}s after the kill"
    assert figures.placed_once == figures.jobs, f"not placed exactly once: {figures.misplaced[:3]}"
    assert figures.completed == figures.jobs, f"{figures.completed}/{figures.jobs} Completed"
