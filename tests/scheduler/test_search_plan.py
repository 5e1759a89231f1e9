"""A job's later searches decided with its first (framework/search_plan.py) decide as one search
per task does, and a plan is dropped as soon as the session is not as it assumed."""

from __future__ import annotations

from typing import Any

import pytest

from member_agent.scheduler.cycle import open_session, run_cycle
from member_agent.scheduler.framework import node_search
from member_agent.scheduler.framework.builder import build_snapshot
from member_agent.scheduler.framework.clock import FixedClock
from member_agent.scheduler.framework.session import Session, SessionOptions
from member_agent.scheduler.framework.shape_cache import shape_cache
from member_agent.scheduler.framework.statement import Statement
from tests.scheduler.test_node_search_bound import CONF, job, nodes
from tests.scheduler.test_search_shortcuts import _decisions


def gangs() -> list[dict[str, Any]]:
    """240 nodes in 3 pools; gangs of 3-40 pods (minMember = size) in three shapes, more than
    fit: windows run round the cluster, nodes fill and drop out of the feasible rows, and the
    last gangs fail and are discarded."""
    objects = nodes(240, pools=3)
    for j in range(30):
        size = (3, 14, 40)[j % 3]
        pods = job(f"g{j:02d}", size, cpu=("2", "5", "7")[j % 3], gpus=j % 3,
                   pool=f"p{j % 3}" if j % 5 == 0 else None)
        pods[0]["spec"]["minMember"] = size
        objects += pods
    return objects


@pytest.mark.parametrize("percentage", [5, 10, 30])
def test_planned_searches_decide_as_one_search_per_task(percentage: int, monkeypatch: pytest.MonkeyPatch) -> None:
    options = SessionOptions(percentage_nodes_to_find=percentage, minimum_feasible_nodes=5)
    answered: list[bool] = []
    planned = node_search.NodeSearch.planned

    def spy(self: node_search.NodeSearch, task: Any) -> Any:
        answer = planned(self, task)
        answered.append(answer is not None)
        return answer

    monkeypatch.setattr(node_search.NodeSearch, "planned", spy)
    with_plans = run_cycle(build_snapshot(gangs()), CONF, FixedClock(), options=options)
    assert sum(answered) > 20  # plans answered searches
    monkeypatch.setattr(node_search, "PLAN_SEARCHES", False)
    answered.clear()
    searched = run_cycle(build_snapshot(gangs()), CONF, FixedClock(), options=options)
    assert not any(answered)
    total = sum(1 for o in gangs() if o["kind"] == "Pod")
    assert 100 < len(searched.bindings) < total  # some gangs bound, some discarded
    assert _decisions(with_plans) == _decisions(searched)


def _gang_session() -> tuple[Session, Any]:
    """200 nodes, gang ``g`` of 6 pods and job ``h`` of one pod of the same shape."""
    objects = nodes(200) + job("g", 6, cpu="4") + job("h", 1, cpu="4")
    objects[200]["spec"]["minMember"] = 6
    ssn = open_session(build_snapshot(objects), CONF, FixedClock(),
                       SessionOptions(percentage_nodes_to_find=5, minimum_feasible_nodes=5))
    gang = next(j for j in ssn.jobs.values() if j.uid.endswith("/g"))
    shape_cache(ssn, gang.tasks[0])  # current on every row, as after an earlier job of the shape: plans need it
    return ssn, gang


def _search_and_place(search: node_search.NodeSearch, stmt: Statement, task: Any, plan: bool = True) -> int:
    rows, errors = search.feasible(task, plan=plan)
    assert errors is None
    row, fit_idle = search.best_feasible(task, rows)
    assert fit_idle
    stmt.allocate(task, row)
    return row


def test_a_planned_search_answers_as_the_search_and_moves_the_start_alike() -> None:
    planned_ssn, planned_job = _gang_session()
    plain_ssn, plain_job = _gang_session()
    planner, plain = node_search.NodeSearch(planned_ssn), node_search.NodeSearch(plain_ssn)
    planned_stmt, plain_stmt = Statement(planned_ssn), Statement(plain_ssn)
    assert _search_and_place(planner, planned_stmt, planned_job.tasks[0]) == \
        _search_and_place(plain, plain_stmt, plain_job.tasks[0], plan=False)
    assert planner.plan is not None and plain.plan is None
    for k in (1, 2, 3):
        answer = planner.planned(planned_job.tasks[k])
        assert answer is not None
        planned_stmt.allocate(planned_job.tasks[k], answer[0])
        assert answer[0] == _search_and_place(plain, plain_stmt, plain_job.tasks[k], plan=False)
        assert planned_ssn.node_cursor == plain_ssn.node_cursor


@pytest.mark.parametrize("change", ["another row touched", "placement undone", "cursor moved", "other job"])
def test_a_plan_is_dropped_when_the_session_is_not_as_it_assumed(change: str) -> None:
    ssn, gang = _gang_session()
    search, stmt = node_search.NodeSearch(ssn), Statement(ssn)
    first = _search_and_place(search, stmt, gang.tasks[0])
    answer = search.planned(gang.tasks[1])
    assert answer is not None
    stmt.allocate(gang.tasks[1], answer[0])
    task = gang.tasks[2]
    if change == "another row touched":
        ssn.touch((first + 100) % 200)
    elif change == "placement undone":
        stmt.discard()
        task = gang.tasks[1]
    elif change == "cursor moved":
        ssn.node_cursor = (ssn.node_cursor + 1) % 200
    else:  # the same shape, another job
        task = next(j for j in ssn.jobs.values() if j.uid.endswith("/h")).tasks[0]
        assert task.spec.shape == gang.tasks[2].spec.shape
    assert search.planned(task) is None
    assert search.plan is None
