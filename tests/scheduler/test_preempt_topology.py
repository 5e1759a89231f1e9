"""Topology-aware preemption's pure parts (the candidate count) and the pod-slot accounting preempt relies on."""

from __future__ import annotations

import pytest

from member_agent.scheduler import build_snapshot
from member_agent.scheduler.actions.preempt_topology import num_candidates
from member_agent.scheduler.actions.victims import fits_now
from member_agent.scheduler.cycle import open_session
from member_agent.scheduler.framework.clock import FixedClock
from member_agent.scheduler.framework.session import Session
from member_agent.scheduler.framework.statement import Statement
from tests.scheduler.part2_builders import conf, node, pod, pod_group


@pytest.mark.parametrize(("n", "args", "expected"), [
    (5000, (10, 1, 100), 100),   # 10% = 500, capped at maxCandidateNodesAbsolute
    (500, (10, 1, 100), 50),
    (3, (10, 1, 100), 1),        # 10% rounds to 0: at least minCandidateNodesAbsolute
    (3, (10, 10, 100), 3),       # never more than the candidates there are
    (0, (10, 1, 100), 0),
])
def test_num_candidates_is_volcanos_clamp(n: int, args: tuple[int, int, int], expected: int) -> None:
    assert num_candidates(n, *args) == expected


def _pod_slots_session(pods: int, running: int, pending: int) -> Session:
    """One node with ``pods`` slots, ``running`` BestEffort pods on it, ``pending`` waiting."""
    n1 = node("n1")
    n1["status"]["allocatable"]["pods"] = str(pods)
    objects = [n1, pod_group("low", 0, "default", "Running"), pod_group("high", 1, "default", "Inqueue")]
    objects += [pod(f"low-{i}", "low", {}, "n1") for i in range(running)]
    objects += [pod(f"high-{i}", "high", {}) for i in range(pending)]
    return open_session(build_snapshot(objects), conf("allocate, preempt", ["predicates"]), FixedClock())


def test_an_in_session_eviction_frees_a_pod_slot_until_it_is_undone() -> None:
    ssn = _pod_slots_session(pods=2, running=2, pending=1)
    preemptor, victim = ssn.jobs["default/high"].tasks[0], ssn.jobs["default/low"].tasks[0]
    assert not fits_now(ssn, preemptor, 0)  # node(s) pod number exceeded
    stmt = Statement(ssn)
    stmt.evict(victim, "test")
    assert fits_now(ssn, preemptor, 0)
    stmt.discard()
    assert not fits_now(ssn, preemptor, 0)


def test_a_pipelined_task_takes_a_pod_slot_until_it_is_undone() -> None:
    ssn = _pod_slots_session(pods=2, running=1, pending=2)
    first, second = ssn.jobs["default/high"].tasks
    assert fits_now(ssn, second, 0)
    stmt = Statement(ssn)
    stmt.pipeline(first, 0, False)
    assert not fits_now(ssn, second, 0)
    stmt.discard()
    assert fits_now(ssn, second, 0)
