"""Self-fencing: fence-time derivation (a table), and an agent on a manual clock that stops the
shares the federation may re-place once it has been cut off for its fence time."""

from __future__ import annotations

import pytest
from agent_fakes import Harness, job_work

from member_agent.cluster.clock import ManualClock
from member_agent.fencing import Fence, derive, published_timing

# (lease grace, failover grace, termination grace, renew period) -> (single, spanning, grace used)
DERIVE_CASES = [
    ((40, 300, 30, 10), (295.0, 25.0, 30)),   # Karmada's defaults: margin 10 + 5
    ((10, 10, 3, 2), (10.0, 3.0, 3)),          # the short graces, 3 s pods
    ((10, 10, 30, 2), (7.0, 3.0, 6)),          # 30 s pods do not fit: the grace is cut to half the room
    ((5, 0, 30, 2), (0.0, 0.0, 0)),            # no room at all: fence at once, kill at once
    ((40, 0, 0, 10), (25.0, 25.0, 0)),         # no failover grace: single == spanning
    ((4, 600, 30, 2), (567.0, 3.0, 30)),       # lease grace under the margin: once a renewal is overdue, not at once
]


@pytest.mark.parametrize(("args", "expected"), DERIVE_CASES)
def test_derive_fence_times(args: tuple[float, float, int, float], expected: tuple[float, float, int]) -> None:
    times = derive(*args)
    assert (times.single, times.spanning, times.termination_grace) == expected
    lease, failover, _grace, _renew = args
    # the fence always comes first: pods are gone before the re-placement can happen
    assert times.single + times.termination_grace <= max(0.0, lease + failover - times.margin) + 1e-9
    assert times.spanning <= times.single


def test_fence_counts_from_the_last_successful_renewal_start() -> None:
    clock = ManualClock()
    fence = Fence(clock, renew_period=2.0)
    fence.learn({"status": {"failoverTiming": {"leaseGraceSeconds": 10, "failoverGraceSeconds": 10,
                                               "podTerminationGraceSeconds": 3}}})
    assert fence.report()["basis"] == "federation" and fence.report()["fenceSeconds"] == 10.0
    started = clock.monotonic()
    clock.advance(1.5)                       # the renewal's round trip
    fence.renewed(started, clock.now())
    clock.advance(8.4)                       # 9.9 s since the renewal *started*
    assert not fence.fenced(spanning=False)
    clock.advance(0.2)
    assert fence.fenced(spanning=False) and fence.fenced(spanning=True)
    assert fence.reason().startswith("fenced: federation unreachable since ")
    fence.renewed(clock.monotonic(), clock.now())
    assert not fence.fenced(spanning=True)


def test_flags_override_and_disable() -> None:
    clock = ManualClock()
    fence = Fence(clock, renew_period=10.0, termination_grace=5, fence_after=60.0)
    times = fence.times()  # defaults 40 + 300 until the federation answers
    assert (times.single, times.spanning, times.termination_grace) == (60.0, 25.0, 5)
    off = Fence(clock, renew_period=10.0, enabled=False)
    clock.advance(10_000)
    assert not off.fenced(spanning=True) and off.report()["enabled"] is False


@pytest.mark.parametrize("timing", [None, {}, {"leaseGraceSeconds": "x", "failoverGraceSeconds": 1},
                                    {"leaseGraceSeconds": -1, "failoverGraceSeconds": 1}])
def test_bad_published_timing_is_ignored(timing: object) -> None:
    assert published_timing({"status": {"failoverTiming": timing}}) is None


@pytest.fixture
async def harness():
    h = Harness()
    h.agent.fence = Fence(h.clock, renew_period=2.0, termination_grace=3)
    h.agent.fence.learn({"status": {"failoverTiming": {"leaseGraceSeconds": 10, "failoverGraceSeconds": 10}}})
    await h.start()
    yield h
    await h.stop()


def _renew(h: Harness) -> None:
    assert h.agent.fence is not None
    h.agent.fence.renewed(h.clock.monotonic(), h.clock.now())


async def _running(h: Harness, name: str) -> None:
    async def renewing_step() -> None:
        _renew(h)
        await h.step()

    for _ in range(40):
        if h.job_phase(name) == "Running":
            return
        await renewing_step()
    assert h.job_phase(name) == "Running"


async def test_cut_off_agent_stops_a_replaceable_share_and_keeps_it_stopped(harness: Harness) -> None:
    h = harness
    h.federation.put_work(job_work("solo", replicas=2, duration="1000s",
                                   placement={"generation": 1, "hold": False, "clusters": 1}))
    await _running(h, "solo")
    # no renewal from now on (the last one was a step ago): the single fence is 10 + 10 - 3 - (2 + 5) = 10 s
    for _ in range(8):
        await h.step()
    assert all(not p["metadata"].get("deletionTimestamp") for p in h.pods("solo").values())
    await h.step(2.0)
    pods = h.pods("solo")
    assert pods and all(p["metadata"].get("deletionGracePeriodSeconds") == 3 for p in pods.values())
    fenced = next(c for c in h.status("solo")["conditions"] if c["type"] == "Fenced")
    assert fenced["status"] == "True" and fenced["observedGeneration"] == 1
    assert fenced["message"].startswith("fenced: federation unreachable since ")
    state = h.status("solo")["manifestStatuses"][0]["status"]["state"]
    assert state["reason"] == "Fenced" and state["message"] == fenced["message"]
    for _ in range(4):  # still cut off: the pods go, the Job's status changes, and still says why
        await h.step()
        state = h.status("solo")["manifestStatuses"][0]["status"]["state"]
        assert state["reason"] == "Fenced" and state["message"] == fenced["message"], state
    # reaching the federation again does not bring generation 1 back to life
    for _ in range(8):
        _renew(h)
        await h.step()
    assert not h.pods("solo")
    # the federation answers with a new generation: the share starts afresh
    h.federation.put_work(job_work("solo", replicas=2, duration="1000s",
                                   placement={"generation": 2, "hold": False, "clusters": 1}))
    for _ in range(10):
        _renew(h)
        await h.step()
    pods = h.pods("solo")
    assert len(pods) == 2 and all(p["metadata"]["labels"]["caldera.io/placement-generation"] == "2"
                                  and p["status"].get("phase") == "Running" for p in pods.values())
    assert not any(c["type"] == "Fenced" for c in h.status("solo")["conditions"]), h.status("solo")["conditions"]


async def test_spanning_share_fences_at_the_lease_grace_and_pinned_share_never(harness: Harness) -> None:
    h = harness
    h.federation.put_work(job_work("span", replicas=1, duration="1000s",
                                   placement={"generation": 1, "hold": False, "clusters": 2}))
    h.federation.put_work(job_work("pinned", replicas=1, duration="1000s",
                                   placement={"generation": 1, "hold": False, "clusters": 1, "failover": False}))
    await _running(h, "span")
    await _running(h, "pinned")
    await h.step()  # 2 s since the last renewal: the spanning fence is 10 - (2 + 5) = 3 s
    assert all(not p["metadata"].get("deletionTimestamp") for p in h.pods("span").values())
    await h.step()
    assert all(p["metadata"].get("deletionTimestamp") for p in h.pods("span").values())
    for _ in range(30):
        await h.step()
    assert h.pods("pinned") and all(not p["metadata"].get("deletionTimestamp") for p in h.pods("pinned").values())
    assert h.job_phase("pinned") == "Running"


async def test_newer_held_generation_stops_bound_pods_of_the_older_one(harness: Harness) -> None:
    h = harness
    h.federation.put_work(job_work("gen", replicas=2, duration="1000s",
                                   placement={"generation": 1, "hold": False, "clusters": 1}))
    await _running(h, "gen")
    old = {k: p["metadata"]["uid"] for k, p in h.pods("gen").items()}
    h.federation.put_work(job_work("gen", replicas=2, duration="1000s",
                                   placement={"generation": 2, "hold": True, "clusters": 2}))
    _renew(h)
    await h.step()
    assert all(h.sim.pods[k]["metadata"].get("deletionTimestamp") for k in old if k in h.sim.pods)
    for _ in range(35):  # the old pods' 30 s grace
        _renew(h)
        await h.step()
    now = h.pods("gen")
    assert all(p["metadata"]["uid"] not in old.values() for p in now.values())
    assert all(p["metadata"]["labels"]["caldera.io/placement-generation"] == "2" for p in now.values())
    assert all(not p["spec"].get("nodeName") for p in now.values()), "held: reserved, not bound"


async def test_cancelled_generation_after_release_tears_down_bound_pods(harness: Harness) -> None:
    h = harness
    placement = {"generation": 3, "hold": False, "clusters": 2}
    h.federation.put_work(job_work("torn", replicas=2, duration="1000s", placement=placement))
    await _running(h, "torn")
    h.federation.put_work(job_work("torn", replicas=2, duration="1000s", placement=dict(placement, cancelled=True)))
    _renew(h)
    await h.step()
    assert h.pods("torn") and all(p["metadata"].get("deletionTimestamp") for p in h.pods("torn").values())
