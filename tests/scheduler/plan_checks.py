"""Shared by the search-plan tests (test_search_plan_ring.py, test_search_plan_standing.py): gangs pinned
to pools, and the check that a kind of plan decides a whole session as one search per task does."""

from __future__ import annotations

from typing import Any

import pytest

from member_agent.scheduler.cycle import run_cycle
from member_agent.scheduler.framework import node_search
from member_agent.scheduler.framework.builder import build_snapshot
from member_agent.scheduler.framework.clock import FixedClock
from member_agent.scheduler.framework.session import SessionOptions
from tests.scheduler.test_node_search_bound import CONF, job, nodes
from tests.scheduler.test_search_shortcuts import _decisions


def pooled_gangs(node_count: int, cpus: tuple[str, str, str]) -> list[dict[str, Any]]:
    """``node_count`` nodes in 3 pools; 24 gangs (minMember = size 5, 12 or 30) pinned to one pool each,
    more than fit: nodes fill, and the last gangs fail and are discarded."""
    objects = nodes(node_count, pools=3)
    for j in range(24):
        size = (5, 12, 30)[j % 3]
        pods = job(f"g{j:02d}", size, cpu=cpus[j % 3], gpus=j % 2, pool=f"p{j % 3}")
        pods[0]["spec"]["minMember"] = size
        objects += pods
    return objects


def assert_plans_decide_as_searches(monkeypatch: pytest.MonkeyPatch, plan: type, objects: list[dict[str, Any]],
                                    options: SessionOptions) -> None:
    """A session where ``plan`` answers more than 50 searches binds exactly what it binds with plans off,
    and some gangs bind while others are discarded (so both outcomes are compared)."""
    answered: list[bool] = []
    search = plan.search

    def spy(self: Any, searcher: Any, task: Any) -> Any:
        answer = search(self, searcher, task)
        answered.append(answer is not None)
        return answer

    monkeypatch.setattr(plan, "search", spy)
    planned = run_cycle(build_snapshot(objects), CONF, FixedClock(), options=options)
    assert sum(answered) > 50  # the plans answered searches
    monkeypatch.setattr(node_search, "PLAN_SEARCHES", False)
    answered.clear()
    searched = run_cycle(build_snapshot(objects), CONF, FixedClock(), options=options)
    assert not answered
    total = sum(1 for o in objects if o["kind"] == "Pod")
    assert 100 < len(searched.bindings) < total  # some gangs bound, some discarded
    assert _decisions(planned) == _decisions(searched)


#: What can make a plan wrong between two searches of a gang (see :func:`make_change`).
CHANGES = ["another row touched", "placement undone", "cursor moved", "other job", "placed off the plan"]


def make_change(ssn: Any, gang: Any, stmt: Any, first: int, change: str, cursor_step: int) -> Any:
    """Place the gang's first task (on ``first``, the node its planning search found, or off the plan
    on node 1 of pool p1, which the shape cannot use), make ``change``, and return the task to ask the
    plan about next."""
    task = gang.tasks[1]
    stmt.allocate(gang.tasks[0], 1 if change == "placed off the plan" else first)
    n = len(ssn.node_names)
    if change == "another row touched":
        ssn.touch((first + 3) % n)
    elif change == "placement undone":
        stmt.discard()
        task = gang.tasks[0]
    elif change == "cursor moved":
        ssn.node_cursor = (ssn.node_cursor + cursor_step) % n
    elif change == "other job":  # the same shape, another job
        task = next(j for j in ssn.jobs.values() if j.uid.endswith("/h")).tasks[0]
        assert task.spec.shape == gang.tasks[1].spec.shape
    return task
