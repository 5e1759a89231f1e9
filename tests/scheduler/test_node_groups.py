"""Node groups and the window search over sorted feasible rows change no decision (counted, not timed).

Rows in one state share a shape's evaluation (framework/node_groups.py): equal group ids must mean
equal states after any sequence of placements, pipelines, evictions and undos; a session with the
sharing switched off, and one visiting rows in chunks instead of searching the sorted feasible rows,
must decide exactly the same.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from member_agent.scheduler.cycle import open_session, run_cycle
from member_agent.scheduler.framework import node_classes, node_groups, node_search
from member_agent.scheduler.framework.builder import build_snapshot
from member_agent.scheduler.framework.clock import FixedClock
from member_agent.scheduler.framework.session import SessionOptions
from member_agent.scheduler.framework.statement import Statement
from member_agent.scheduler.framework.status import TaskStatus
from tests.scheduler.test_node_search_bound import CONF, job, mixed_cluster, nodes


def _decisions(result: Any) -> tuple[Any, ...]:
    return (result.bindings, result.pipelined, result.pod_groups, result.last_processed_node_index,
            {k: [c.get("message") for c in v] for k, v in result.conditions.items()})


def test_equal_group_ids_mean_equal_states_through_placements_and_undos() -> None:
    objects = nodes(60, pools=3)
    objects += job("small", 30, cpu="3")
    objects += job("gpu", 20, cpu="2", gpus=1)
    ssn = open_session(build_snapshot(objects), CONF, FixedClock())
    groups = node_groups.node_groups(ssn)
    assert groups.opening == 1  # 60 identical empty nodes
    rng = random.Random(4)
    tasks = [t for j in ssn.jobs.values() for t in j.tasks]
    first = Statement(ssn)
    first.allocate(tasks[0], 59)  # the row that stood for the opening state changes first
    assert groups.current()[59] != groups.current()[0]
    first.discard()
    assert groups.current()[59] == groups.current()[0]
    statements = []
    for step in range(120):
        stmt = Statement(ssn)
        for task in rng.sample(tasks, 3):
            if task.status == TaskStatus.PENDING:
                row = rng.choice((0, 1, 2, 3, 57, 58, 59))  # a few rows, so states repeat (59: the group's first)
                (stmt.allocate if rng.random() < 0.7 else stmt.pipeline)(task, row)
        statements.append(stmt)
        if step % 3 == 2:
            statements.pop(rng.randrange(len(statements))).discard()
        ids = groups.current()
        state = np.hstack(node_groups.state_columns(ssn))
        for gid in np.unique(ids):
            rows = np.flatnonzero(ids == gid)
            assert (state[rows] == state[rows[0]]).all(), f"group {gid} holds rows in different states"
    # states repeat: placements undone return rows to the group they were in
    assert len(np.unique(groups.current())) < 12
    assert groups.current()[40] == groups.current()[41] == 0  # never touched: still the opening group


@pytest.mark.parametrize("percentage", [0, 10, 100])
def test_sharing_by_group_and_index_search_give_the_row_by_row_answers(percentage: int,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    options = SessionOptions(percentage_nodes_to_find=percentage, minimum_feasible_nodes=20)
    shared = run_cycle(build_snapshot(mixed_cluster()), CONF, FixedClock(), options=options)
    monkeypatch.setattr(node_groups.NodeGroups, "worth_looking", lambda self: False)  # no group answers
    monkeypatch.setattr(node_classes, "MAX_MEMO_CLASSES", 2)  # most scores shared within a call only
    monkeypatch.setattr(node_search, "INDEX_SEARCH", False)  # every search visits rows in chunks
    by_rows = run_cycle(build_snapshot(mixed_cluster()), CONF, FixedClock(), options=options)
    assert len(shared.bindings) > 150
    assert _decisions(shared) == _decisions(by_rows)


def test_group_answers_are_used_when_states_repeat(monkeypatch: pytest.MonkeyPatch) -> None:
    # 3 pools of identical nodes, jobs from few templates: most re-evaluated rows take a group's answer
    looked: list[bool] = []
    original = node_groups.NodeGroups.looked

    def spy(self: Any, found: bool) -> None:
        looked.append(found)
        original(self, found)

    monkeypatch.setattr(node_groups.NodeGroups, "looked", spy)
    objects = nodes(300, pools=3)
    for j in range(30):
        objects += job(f"t{j:02d}", 8, cpu=("1", "2", "4")[j % 3], gpus=j % 2)
    result = run_cycle(build_snapshot(objects), CONF, FixedClock(), options=SessionOptions(percentage_nodes_to_find=10))
    assert len(result.bindings) == 240
    assert looked and sum(looked) > len(looked) / 2


def test_a_shapes_static_pass_is_every_static_code_zero() -> None:
    # round 8: one read of a per-shape mask instead of a generator over the plugins' static codes
    objects = nodes(60, pools=3)
    objects[4]["spec"] = {"unschedulable": True}  # a static failure in the pool the pinned shape may use
    objects += job("pinned", 2, cpu="2", pool="p1") + job("free", 2, cpu="2")
    ssn = open_session(build_snapshot(objects), CONF, FixedClock(), SessionOptions())
    for job_info in ssn.jobs.values():
        task = job_info.tasks[0]
        cache = node_search.shape_cache(ssn, task)
        statics = [static(task) for static in ssn.predicate_statics]
        assert statics
        expected = [all(not codes[row] for codes in statics) for row in range(60)]
        assert [cache._static_pass(ssn, task, row) for row in range(60)] == expected
        assert not all(expected) and any(expected)


def test_the_scalar_resource_score_of_a_row_equals_the_vectorised_one() -> None:
    # nodeorder's row scorer (cpu and memory written out in round 8) against its span scorer, on rows
    # in many states: allocated and pipelined pods of several requests
    ssn = open_session(build_snapshot(mixed_cluster()), CONF, FixedClock(), SessionOptions())
    plugin = ssn.plugins["nodeorder"]
    rng = random.Random(3)
    tasks = [t for j in ssn.jobs.values() for t in j.tasks]
    for task in rng.sample(tasks, 60):
        ssn.place(task, rng.randrange(600), rng.choice((TaskStatus.ALLOCATED, TaskStatus.PIPELINED)))
    rows = np.arange(600)
    for job_info in list(ssn.jobs.values())[:12]:
        task = job_info.tasks[-1]
        vectorised = plugin._resource_scores(task, rows)
        assert [plugin._resource_score_row(task, row) for row in range(600)] == vectorised.tolist()
        assert len(set(vectorised.tolist())) > 1
