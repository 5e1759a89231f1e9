"""Shortcuts of the allocate path change no decision (counted, not timed).

A window of feasible rows skips the sibling-failure check while no row of the shape turned feasible
since the role's first mark (framework/node_search.py), and a placed row's next node group id is
looked up by (id before, placement) instead of its state's bytes (framework/node_groups.py). Both are
switched off here on workloads where gangs are discarded (rows become feasible again, states
return) and must give the same bindings, pipelined pods, conditions and search start; and rows
a role marked that a discarded gang frees must stay skipped by its siblings (the rises counter moves).
"""

from __future__ import annotations

from typing import Any

import pytest

from member_agent.scheduler.cycle import open_session, run_cycle
from member_agent.scheduler.framework import node_groups, node_search
from member_agent.scheduler.framework.builder import build_snapshot
from member_agent.scheduler.framework.clock import FixedClock
from member_agent.scheduler.framework.session import SessionOptions
from member_agent.scheduler.framework.statement import Statement
from tests.scheduler.test_node_search_bound import CONF, job, nodes


def _decisions(result: Any) -> tuple[Any, ...]:
    return (result.bindings, result.pipelined, result.pod_groups, result.last_processed_node_index,
            {k: [c.get("message") for c in v] for k, v in result.conditions.items()})


def over_full() -> list[dict[str, Any]]:
    """120 nodes in 3 pools and more gang pods than fit: big gangs fill nodes, then fail and are
    discarded, freeing rows their siblings had found full."""
    objects = nodes(120, pools=3)
    for j in range(36):
        objects += job(f"j{j:02d}", (4, 12, 40)[j % 3], cpu=("3", "5", "7")[j % 3], gpus=j % 3,
                       pool=f"p{j % 3}" if j % 4 == 0 else None)
    return objects


def _count_trusted_windows(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Whether each indexed search skipped the sibling-failure check (its window trusted), in order."""
    skipped: list[bool] = []
    by_index = node_search.NodeSearch._by_index

    def spy(cache: Any, start: int, want: int, role: Any) -> Any:
        skipped.append(role is None)
        return by_index(cache, start, want, role)

    monkeypatch.setattr(node_search.NodeSearch, "_by_index", staticmethod(spy))
    return skipped


@pytest.mark.parametrize("percentage", [0, 100])
def test_trusted_role_marks_and_group_transitions_decide_as_without(percentage: int,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    options = SessionOptions(percentage_nodes_to_find=percentage, minimum_feasible_nodes=10)
    skipped = _count_trusted_windows(monkeypatch)
    fast = run_cycle(build_snapshot(over_full()), CONF, FixedClock(), options=options)
    assert any(skipped)  # the shortcut was taken
    monkeypatch.setattr(node_search, "TRUST_ROLE_MARKS", False)
    monkeypatch.setattr(node_groups.NodeGroups, "placed", lambda self, row, _effect: self.touched(row))
    slow = run_cycle(build_snapshot(over_full()), CONF, FixedClock(), options=options)
    assert 100 < len(fast.bindings) < sum(1 for _ in over_full()) - 120  # some gangs bound, some not
    assert _decisions(fast) == _decisions(slow)


def _rows_0_to_4_filled() -> tuple[Any, Any, Statement]:
    """A session of 20 nodes whose rows 0-4 a statement fills (a gang it may discard), and job ``b``
    of 4 tasks that fit any free node."""
    objects = nodes(20) + job("fill", 5, cpu="16") + job("b", 4, cpu="8")
    ssn = open_session(build_snapshot(objects), CONF, FixedClock(), SessionOptions(percentage_nodes_to_find=100))
    fill = next(j for j in ssn.jobs.values() if j.uid.endswith("fill"))
    b = next(j for j in ssn.jobs.values() if j.uid.endswith("/b"))
    stmt = Statement(ssn)
    for row, task in enumerate(fill.tasks):
        stmt.allocate(task, row)
    return ssn, b, stmt


@pytest.mark.parametrize("trusted", [True, False])
def test_rows_freed_after_a_mark_stay_skipped_by_the_roles_siblings(trusted: bool,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    # rows 0-4 full when the role's first search marks them; freed (a discarded gang) before the
    # sibling's search: the shape's rises counter moved, so the check runs and still skips them
    monkeypatch.setattr(node_search, "TRUST_ROLE_MARKS", trusted)
    ssn, b, stmt = _rows_0_to_4_filled()
    search = node_search.NodeSearch(ssn)
    first, errors = search.feasible(b.tasks[0])
    assert errors is None and not set(first.tolist()) & set(range(5))
    cache = ssn.shape_caches[b.tasks[0].spec.shape]
    rises = cache.rises
    stmt.discard()  # rows 0-4 are free again
    second, errors = search.feasible(b.tasks[1])
    assert cache.rises > rises
    assert errors is None and len(second) == 15 and not set(second.tolist()) & set(range(5))


def per_job_shapes() -> list[dict[str, Any]]:
    """600 nodes in 3 pools, a fifth of them taken by a filler gang first, then jobs with their own
    cpu request (a fresh shape each, evaluated a chunk at a time) and some pinned to a pool."""
    objects = nodes(600, pools=3) + job("filler", 120, cpu="15")
    for j in range(40):
        objects += job(f"j{j:02d}", 3 + j % 7, cpu=f"{1000 + 37 * j}m", gpus=j % 3,
                       pool=f"p{j % 3}" if j % 2 else None)
    return objects


def test_a_fresh_shape_evaluated_by_chunks_keeps_its_role_marks_trusted(monkeypatch: pytest.MonkeyPatch) -> None:
    # A row's first evaluation cannot turn a marked row feasible (marks are only on evaluated rows), so
    # it does not move the rises counter: later windows of the job skip the sibling check, and decide
    # as the check (TRUST_ROLE_MARKS off) does.
    options = SessionOptions(percentage_nodes_to_find=10, minimum_feasible_nodes=10)
    skipped = _count_trusted_windows(monkeypatch)
    fast = run_cycle(build_snapshot(per_job_shapes()), CONF, FixedClock(), options=options)
    trusted = skipped[:]
    monkeypatch.setattr(node_search, "TRUST_ROLE_MARKS", False)
    slow = run_cycle(build_snapshot(per_job_shapes()), CONF, FixedClock(), options=options)
    assert _decisions(fast) == _decisions(slow)
    assert len(fast.bindings) > 200
    # every window trusted here; counting first evaluations as rises left about 30 % of them untrusted
    assert len(trusted) > 100 and sum(trusted) >= 0.95 * len(trusted)


def test_first_evaluations_do_not_move_rises_and_a_freed_row_does() -> None:
    ssn, b, stmt = _rows_0_to_4_filled()
    cache = node_search.shape_cache(ssn, b.tasks[0], lazy=True)
    cache.ensure_span(ssn, b.tasks[0], 0, 10)  # rows 0-4 full, 5-9 feasible: first evaluations
    cache.ensure_span(ssn, b.tasks[0], 10, 20)
    assert cache.rises == 0 and cache.ok.tolist() == [False] * 5 + [True] * 15
    stmt.discard()  # rows 0-4 free again: evaluated again, they rise
    cache = node_search.shape_cache(ssn, b.tasks[0])
    assert cache.rises > 0 and cache.ok.all()
