"""Generations as fencing tokens, and an agent restarted during a partition that still fences on time.

All on a manual clock with the simulated member cluster (no network namespace): a newer placement
generation, held or not, stops every pod of the older one (with the pods' own grace) and the status
says which generation it describes; a Work gone while the agent was cut off takes its pods with it on
reconnection; a restarted agent resumes its fence from the record in the member cluster and stops the
pods it knows only by their labels."""

from __future__ import annotations

import asyncio

import pytest
from agent_fakes import NS, Harness, job_work, settle

from member_agent.fence_store import MemoryFenceStore
from member_agent.fencing import Fence

GEN = "caldera.io/placement-generation"
TIMING = {"status": {"failoverTiming": {"leaseGraceSeconds": 10, "failoverGraceSeconds": 10,
                                        "podTerminationGraceSeconds": 3}}}


def _fenced_harness(h: Harness, store: MemoryFenceStore | None = None) -> Harness:
    h.agent.fence = Fence(h.clock, renew_period=2.0)
    h.agent.fence.learn(TIMING)  # fences: single 10 + 10 - 3 - (2 + 5) = 10 s, spanning 10 - 7 = 3 s
    h.agent.fence_store = store
    return h


async def _renew(h: Harness) -> None:
    assert h.agent.fence is not None
    h.agent.fence.renewed(h.clock.monotonic(), h.clock.now())
    await h.sync.save_fence()


async def _until_running(h: Harness, name: str, replicas: int) -> None:
    for _ in range(40):
        pods = h.pods(name)
        if h.job_phase(name) == "Running" and len(pods) == replicas and all(
                p["status"].get("phase") == "Running" for p in pods.values()):
            return
        await _renew(h)
        await h.step()
    raise AssertionError(f"{name} never ran: {h.job_phase(name)}")


def _live(h: Harness, name: str) -> dict[str, dict]:
    return {k: p for k, p in h.pods(name).items() if not p["metadata"].get("deletionTimestamp")}


@pytest.fixture
async def harness():
    h = _fenced_harness(Harness())
    await h.start()
    yield h
    await h.stop()


async def test_newer_unheld_generation_replaces_bound_pods_and_status_names_its_generation(harness: Harness) -> None:
    h = harness
    h.federation.put_work(job_work("moved", replicas=2, duration="1000s",
                                   placement={"generation": 1, "hold": False, "clusters": 1}))
    await _until_running(h, "moved", 2)
    assert h.status("moved")["observedPlacementGeneration"] == 1
    old = {p["metadata"]["uid"] for p in h.pods("moved").values()}
    h.federation.put_work(job_work("moved", replicas=2, duration="1000s",
                                   placement={"generation": 2, "hold": False, "clusters": 1}))
    await _renew(h)
    await h.step()
    terminating = [p for p in h.pods("moved").values() if p["metadata"]["uid"] in old]
    assert terminating and all(p["metadata"].get("deletionGracePeriodSeconds") == 30 for p in terminating), \
        "old-generation pods go with their own grace (terminationGracePeriodSeconds, default 30)"
    assert h.status("moved")["observedPlacementGeneration"] == 2
    counts = h.status("moved")["manifestStatuses"][0]["status"]
    assert not counts.get("running"), "the terminating pods of generation 1 are not counted for generation 2"
    await _until_running(h, "moved", 2)
    now = h.pods("moved")
    assert not {p["metadata"]["uid"] for p in now.values()} & old, "generation 1 never comes back"
    assert {p["metadata"]["labels"][GEN] for p in now.values()} == {"2"}


async def test_work_gone_during_partition_takes_its_pods_on_reconnection(harness: Harness) -> None:
    h = harness
    h.federation.put_work(job_work("gone", replicas=2, duration="1000s",
                                   placement={"generation": 4, "hold": False, "clusters": 1, "failover": False}))
    await _until_running(h, "gone", 2)
    await h.stop()  # cut off: no watch events reach the agent
    h.tasks.clear()
    h.federation.delete_work(NS, "team.gone")  # the federation moved the job elsewhere meanwhile
    for _ in range(3):
        await h.step()
    assert len(_live(h, "gone")) == 2, "pinned (failover: false): not fenced, keeps running while cut off"
    await h.sync.list_works()  # reconnected: the list is authoritative
    for _ in range(3):
        await h.step()
    assert h.pods("gone") and not _live(h, "gone")
    for _ in range(35):
        await h.step()
    assert not h.pods("gone"), "deleted, and nothing of it started again"


# (placement, seconds after the last renewal by which its pods must have been stopped; None: never)
RESTART_CASES = [
    ({"generation": 3, "hold": False, "clusters": 1}, 10),
    ({"generation": 3, "hold": False, "clusters": 2}, 3),
    ({"generation": 3, "hold": False, "clusters": 1, "failover": False}, None),
]


@pytest.mark.parametrize(("placement", "fence_after"), RESTART_CASES,
                         ids=["single", "spanning", "pinned"])
async def test_agent_restarted_during_a_partition_fences_on_time(placement: dict, fence_after: int | None) -> None:
    store = MemoryFenceStore()
    first = _fenced_harness(Harness(), store)
    await first.start()
    first.federation.put_work(job_work("r", replicas=2, duration="1000s", placement=placement))
    await _until_running(first, "r", 2)
    assert store.saves and store.record is not None
    await first.stop()  # the partition starts; 1 s later the agent restarts, knowing no Work
    first.clock.advance(1.0)
    h = _fenced_harness(Harness(first.federation, first.sim, first.clock), store)
    h.agent.fence = Fence(h.clock, renew_period=2.0)  # a new process: nothing learned, counts from now
    h.tasks.append(asyncio.create_task(h.agent.cache.run()))
    await settle()
    await h.sync.resume_fence()
    assert h.agent.fence.report()["basis"] == "federation", "the published graces came back with the record"
    since = h.agent.fence.unreachable_for()
    assert since == 2.0, "1 s of the last step and 1 s of restart, counted from the record"
    while fence_after is None or since < fence_after - 1:
        await h.step()
        since += 1
        assert len(_live(h, "r")) == 2, f"stopped at {since} s, before its fence"
        if fence_after is None and since > 40:
            break
    if fence_after is None:
        await h.stop()
        return
    await h.step(1.5)
    pods = h.pods("r")
    assert pods and not _live(h, "r"), f"not stopped {since + 1.5} s after the last renewal"
    assert {p["metadata"].get("deletionGracePeriodSeconds") for p in pods.values()} == {3}
    # healed: the federation answers, the Work is still at generation 3: it stays stopped, and says so
    h.tasks.append(asyncio.create_task(h.sync.works_loop()))
    for _ in range(6):
        await _renew(h)
        await h.step()
    assert not _live(h, "r")
    fenced = next(c for c in h.status("r")["conditions"] if c["type"] == "Fenced")
    assert fenced["status"] == "True" and fenced["observedGeneration"] == 3
    await h.stop()


async def test_new_graces_reach_the_federation_at_once_not_at_the_next_heartbeat() -> None:
    h = Harness()
    h.agent.fence = Fence(h.clock, renew_period=2.0)
    await h.start()
    h.federation.objects[("Cluster", "", "c1")].setdefault("status", {}).update(TIMING["status"])
    version = h.agent.changes.version
    await h.sync.learn_failover_timing()
    assert h.agent.changes.version > version, "the status loop is woken: status.fence goes out now"
    await h.sync.publish_status()
    fence = h.federation.objects[("Cluster", "", "c1")]["status"]["fence"]
    assert (fence["basis"], fence["fenceSeconds"], fence["spanningFenceSeconds"]) == ("federation", 10.0, 3.0)
    version = h.agent.changes.version
    await h.sync.learn_failover_timing()  # nothing new: no extra report
    assert h.agent.changes.version == version
    await h.stop()
