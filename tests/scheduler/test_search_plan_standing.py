"""A search whose window held every feasible row of the shape stands for its siblings' searches
(framework/search_plan.StandingWindow): each sibling's answer, start and sibling-failure marks are
the ordinary search's, and the window is dropped as soon as the session is not as it assumed."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from member_agent.scheduler.cycle import open_session
from member_agent.scheduler.framework import node_search
from member_agent.scheduler.framework.builder import build_snapshot
from member_agent.scheduler.framework.clock import FixedClock
from member_agent.scheduler.framework.search_plan import StandingWindow
from member_agent.scheduler.framework.session import Session, SessionOptions
from member_agent.scheduler.framework.shape_cache import shape_cache
from member_agent.scheduler.framework.statement import Statement
from tests.scheduler.plan_checks import CHANGES, assert_plans_decide_as_searches, make_change, pooled_gangs
from tests.scheduler.test_node_search_bound import CONF, job, nodes

#: numNodesToFind half the nodes: a pool (one of three) always fits in one window.
OPTIONS = SessionOptions(percentage_nodes_to_find=50, minimum_feasible_nodes=5)


def test_standing_windows_decide_as_one_search_per_task(monkeypatch: pytest.MonkeyPatch) -> None:
    # 120 nodes in 3 pools: windows hold the whole pool, nodes fill, and the last gangs are discarded
    assert_plans_decide_as_searches(monkeypatch, StandingWindow, pooled_gangs(120, ("4", "5", "8")), OPTIONS)


def _pool_session(fill: bool = False) -> tuple[Session, Any]:
    """30 nodes, gang ``g`` of 18 pods of 8 cpu pinned to pool p0 (10 nodes of 16 cpu: from the 11th
    pod on each fills a node, which leaves the window), and job ``h`` of the same shape. ``fill``:
    two nodes of the pool start with 8 cpu less Idle."""
    objects = nodes(30, pools=3) + job("g", 18, cpu="8", pool="p0") + job("h", 1, cpu="8", pool="p0")
    objects[30]["spec"]["minMember"] = 18
    ssn = open_session(build_snapshot(objects), CONF, FixedClock(), OPTIONS)
    if fill:
        cpu = ssn.dims.index["cpu"]
        for row in (3, 12):
            ssn.idle[row, cpu] -= 8000  # millicores
            ssn.touch(row)
    gang = next(j for j in ssn.jobs.values() if j.uid.endswith("/g"))
    shape_cache(ssn, gang.tasks[0])  # current on every row, as after an earlier job of the shape: plans need it
    return ssn, gang


def _search(search: node_search.NodeSearch, task: Any, plan: bool) -> tuple[int, bool]:
    rows, errors = search.feasible(task, plan=plan)
    assert errors is None
    return search.best_feasible(task, rows)


@pytest.mark.parametrize("fill", [False, True])
def test_a_standing_search_answers_and_marks_as_the_search(fill: bool) -> None:
    # ``fill``: rows of the pool fuller than others, so placements fill nodes and drop them from the
    # window (the marks gain them); else the first node takes four pods before it leaves
    pairs = [_pool_session(fill), _pool_session(fill)]
    (standing_ssn, standing_job), (plain_ssn, plain_job) = pairs
    standing, plain = node_search.NodeSearch(standing_ssn), node_search.NodeSearch(plain_ssn)
    standing_stmt, plain_stmt = Statement(standing_ssn), Statement(plain_ssn)
    for k, (task, twin) in enumerate(zip(standing_job.tasks, plain_job.tasks, strict=True)):
        answer = standing.planned(task) if k else None
        if k:
            assert answer is not None, k
        else:
            answer = _search(standing, task, plan=True)
            assert isinstance(standing.plan, StandingWindow)
        expected = _search(plain, twin, plan=False)
        assert answer == expected, k
        assert standing_ssn.node_cursor == plain_ssn.node_cursor
        key = f"{standing_job.uid}/{task.spec.role}"
        assert (standing.role_errors.get(key) is None) == (plain.role_errors.get(key) is None)
        if key in plain.role_errors:
            assert np.array_equal(standing.role_errors[key], plain.role_errors[key]), k
        standing_stmt.allocate(task, answer[0])
        plain_stmt.allocate(twin, expected[0])
    key = f"{standing_job.uid}/{standing_job.tasks[0].spec.role}"
    assert plain.role_errors[key][::3].sum() >= 4  # nodes of the pool filled: marked for the role


def test_a_task_placed_off_the_best_node_is_ranked_again() -> None:
    (standing_ssn, standing_job), (plain_ssn, plain_job) = _pool_session(), _pool_session()
    standing, plain = node_search.NodeSearch(standing_ssn), node_search.NodeSearch(plain_ssn)
    first = _search(standing, standing_job.tasks[0], plan=True)
    assert first == _search(plain, plain_job.tasks[0], plan=False)
    Statement(standing_ssn).allocate(standing_job.tasks[0], first[0])
    Statement(plain_ssn).allocate(plain_job.tasks[0], first[0])
    answer = standing.planned(standing_job.tasks[1])  # ranks the window, keeping its Idle group
    assert answer is not None and answer == _search(plain, plain_job.tasks[1], plan=False)
    window = standing.plan.order if isinstance(standing.plan, StandingWindow) else None
    assert window is not None
    other = next(int(r) for r in window if r != answer[0])  # a node of the window, not the best one
    Statement(standing_ssn).allocate(standing_job.tasks[1], other)
    Statement(plain_ssn).allocate(plain_job.tasks[1], other)
    answer = standing.planned(standing_job.tasks[2])
    assert answer is not None and answer == _search(plain, plain_job.tasks[2], plan=False)


@pytest.mark.parametrize("change", CHANGES)
def test_a_standing_window_is_dropped_when_the_session_is_not_as_it_assumed(change: str) -> None:
    ssn, gang = _pool_session()
    search, stmt = node_search.NodeSearch(ssn), Statement(ssn)
    first, _ = _search(search, gang.tasks[0], plan=True)
    task = make_change(ssn, gang, stmt, first, change, cursor_step=1)
    assert isinstance(search.plan, StandingWindow)
    assert search.planned(task) is None
    assert search.plan is None
