"""The agent does no work while nothing changes: status reports follow changes (debounced, plus a
heartbeat), and scheduling sessions run only when something changed or work is pending."""

from __future__ import annotations

import asyncio

import pytest

from member_agent.changes import SessionGate
from tests.agent.agent_fakes import Harness, job_work, settle

GATE_CASES = [
    # (name, steps [(now, version, pending)], expected due per step)
    ("the first period always runs", [(0.0, 0, False)], [True]),
    ("nothing changed, nothing pending: no session", [(0.0, 0, False), (1.0, 0, False), (60.0, 0, False)],
     [True, False, False]),
    ("a change runs at once", [(0.0, 0, False), (0.2, 1, False)], [True, True]),
    ("pending work runs once a period passed", [(0.0, 0, True), (0.5, 0, True), (1.0, 0, True)],
     [True, False, True]),
]


@pytest.mark.parametrize(("steps", "expected"), [c[1:] for c in GATE_CASES], ids=[c[0] for c in GATE_CASES])
def test_session_gate(steps: list[tuple[float, int, bool]], expected: list[bool]) -> None:
    gate = SessionGate(period=1.0)
    seen = []
    for now, version, pending in steps:
        due = gate.due(now, version, pending)
        seen.append(due)
        if due:
            gate.ran(now, version)
    assert seen == expected


def pod(name: str, gpus: int) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "other"},
            "spec": {"schedulerName": "default-scheduler", "nodeName": "n-0",
                     "containers": [{"name": "c", "image": "x",
                                     "resources": {"requests": {"nvidia.com/gpu": str(gpus)}}}]}}


def free_gpus(harness: Harness) -> float:
    status = harness.federation.objects[("Cluster", "", "c1")]["status"]
    return sum(int(g.get("free") or 0) for g in status.get("gpus") or [])


async def test_status_is_reported_on_change_debounced_and_not_recomputed_while_idle() -> None:
    h = Harness()
    await h.start()
    computed = 0
    original = h.agent.cluster_status

    def counting() -> dict:
        nonlocal computed
        computed += 1
        return original()

    h.agent.cluster_status = counting  # type: ignore[method-assign]
    h.tasks.append(asyncio.create_task(h.sync.status_loop()))
    await settle()
    assert h.sync.status_writes == 1
    before, computed_before = free_gpus(h), computed
    for _ in range(20):  # 10 s of nothing happening
        h.clock.advance(0.5)
        await settle()
    assert (h.sync.status_writes, computed) == (1, computed_before)

    h.sim.create_pod(pod("a", 4))  # someone else's pod takes 4 GPUs; two more events follow at once
    h.sim.create_pod(pod("b", 1))
    await settle()
    h.clock.advance(0.5)
    await settle()
    h.clock.advance(0.5)
    await settle()
    assert h.sync.status_writes == 2  # one report for the burst
    assert free_gpus(h) == before - 5

    for _ in range(62):  # the heartbeat re-sends an unchanged status after 30 s
        h.clock.advance(0.5)
        await settle()
    assert h.sync.status_writes == 3
    await h.stop()


async def test_no_scheduling_session_while_nothing_changes() -> None:
    h = Harness()
    await h.start()
    sessions = 0

    async def counting() -> None:
        nonlocal sessions
        sessions += 1

    h.agent.schedule_pass = counting  # type: ignore[assignment,method-assign]
    h.tasks.append(asyncio.create_task(h.agent.schedule_loop()))
    for _ in range(20):
        h.clock.advance(0.5)
        await settle()
    assert sessions == 0 and h.agent.session_gate.skipped >= 9  # no pod or PodGroup of ours at all
    h.sim.create_pod({**pod("waiting", 1), "spec": {"schedulerName": "volcano", "containers": []}})
    for _ in range(8):
        h.clock.advance(0.5)
        await settle()
    assert sessions >= 3  # the change, then every period while the pod waits for a node
    await h.stop()


def test_an_idle_spell_is_noted_once_after_sessions() -> None:
    gate = SessionGate(period=1.0)
    assert not any(gate.went_idle(3) for _ in range(5) if not gate.skip())  # never ran: nothing to release
    gate.ran(0.0, 1)
    noted = []
    for _ in range(6):
        gate.skip()
        noted.append(gate.went_idle(3))
    assert noted == [False, False, True, False, False, False]


async def test_a_change_starts_the_sessions_a_job_needs_without_waiting_for_a_period() -> None:
    """A Work's PodGroup is enqueued and its pods bound by sessions the changes start: with a
    scheduling period of an hour, the pods are bound within seconds of the Work arriving."""
    h = Harness()
    h.agent.options.schedule_period = 3600.0
    h.agent.session_gate.period = 3600.0
    await h.start()
    h.tasks += [asyncio.create_task(h.agent.schedule_loop()), asyncio.create_task(h.agent.controller_loop())]
    for _ in range(10):  # the loops start and find nothing to do
        h.clock.advance(0.05)
        await settle()
    h.federation.put_work(job_work("train", replicas=2, cpu="2"))

    def bound() -> bool:
        pods = h.pods("train")
        return len(pods) == 2 and all(p["spec"].get("nodeName") for p in pods.values())

    for _ in range(200):  # at most 10 s of the manual clock, far below the period
        if bound():
            break
        h.clock.advance(0.05)
        await settle()
    assert bound(), f"pods not bound: {h.pods('train')}"
    await h.stop()


async def test_freed_capacity_after_a_quiet_spell_is_reported_at_once_then_rate_limited() -> None:
    h = Harness()
    h.sync.status_period = 5.0
    await h.start()
    h.tasks.append(asyncio.create_task(h.sync.status_loop()))
    await settle()
    assert h.sync.status_writes == 1
    for _ in range(20):  # 10 s of nothing: longer than status_period
        h.clock.advance(0.5)
        await settle()
    before = free_gpus(h)
    h.sim.create_pod(pod("a", 4))
    for _ in range(20):  # at most 1 s of the manual clock, well inside status_period
        if h.sync.status_writes == 2:
            break
        h.clock.advance(0.05)
        await settle()
    assert (h.sync.status_writes, free_gpus(h)) == (2, before - 4)
    h.sim.create_pod(pod("b", 1))  # a second change right after a report waits for status_period
    for _ in range(10):
        h.clock.advance(0.2)
        await settle()
    assert h.sync.status_writes == 2
    for _ in range(20):
        h.clock.advance(0.5)
        await settle()
    assert (h.sync.status_writes, free_gpus(h)) == (3, before - 5)
    await h.stop()
