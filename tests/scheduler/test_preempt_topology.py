"""Topology-aware preemption's pure parts: the candidate count and the reprieve."""

from __future__ import annotations

import pytest

from member_agent.scheduler.actions.preempt_topology import num_candidates


@pytest.mark.parametrize(("n", "args", "expected"), [
    (5000, (10, 1, 100), 100),   # 10% = 500, capped at maxCandidateNodesAbsolute
    (500, (10, 1, 100), 50),
    (3, (10, 1, 100), 1),        # 10% rounds to 0: at least minCandidateNodesAbsolute
    (3, (10, 10, 100), 3),       # never more than the candidates there are
    (0, (10, 1, 100), 0),
])
def test_num_candidates_is_volcanos_clamp(n: int, args: tuple[int, int, int], expected: int) -> None:
    assert num_candidates(n, *args) == expected
