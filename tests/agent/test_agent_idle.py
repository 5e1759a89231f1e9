"""The agent does no work while nothing changes: status reports follow changes (debounced, plus a
heartbeat), and scheduling sessions run only when something changed or work is pending."""

from __future__ import annotations

import asyncio

import pytest

from member_agent.changes import SessionGate
from tests.agent.agent_fakes import Harness, settle

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
