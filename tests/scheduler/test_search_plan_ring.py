"""Searches whose windows wrap onto the nodes their job was placed on (framework/search_plan.RingPlan:
a shape with more than ``numNodesToFind`` feasible rows but at most twice as many) decide as one
search per task does: the same node, start and sibling-failure marks, placed nodes filling and
leaving the rows; and a plan is dropped as soon as the session is not as it assumed."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from member_agent.scheduler.cycle import open_session
from member_agent.scheduler.framework import node_search
from member_agent.scheduler.framework.builder import build_snapshot
from member_agent.scheduler.framework.clock import FixedClock
from member_agent.scheduler.framework.search_plan import RingPlan, SearchPlan
from member_agent.scheduler.framework.session import Session, SessionOptions
from member_agent.scheduler.framework.shape_cache import shape_cache
from member_agent.scheduler.framework.statement import Statement
from tests.scheduler.plan_checks import CHANGES, assert_plans_decide_as_searches, make_change, pooled_gangs
from tests.scheduler.test_node_search_bound import CONF, job, nodes

#: numNodesToFind 15 of 60 nodes: a pool (20 nodes, one of three) holds more than one window, less than two.
OPTIONS = SessionOptions(percentage_nodes_to_find=25, minimum_feasible_nodes=5)


def test_ring_plans_decide_as_one_search_per_task(monkeypatch: pytest.MonkeyPatch) -> None:
    # 60 nodes in 3 pools: windows wrap onto placed nodes, nodes fill, and the last gangs are discarded
    assert_plans_decide_as_searches(monkeypatch, RingPlan, pooled_gangs(60, ("3", "5", "8")), OPTIONS)


def _pool_session(fill: tuple[int, ...] = (), cpu: str = "8", pods: int = 36, pools: int = 3,
                  options: SessionOptions = OPTIONS, fresh: bool = False) -> tuple[Session, Any]:
    """60 nodes, gang ``g`` of 36 pods of 8 cpu pinned to pool p0 (20 nodes of 16 cpu: nodes fill
    and leave the rows from the second round on), and job ``h`` of the same shape. ``fill``: rows of
    the pool that start with 8 cpu less Idle (the fullest: binpack picks them, and they fill). ``cpu``, ``pods``:
    another gang (16 cpu: every node fills at its pod, placed rows leave windows and sentinels).
    ``pools``, ``options``: the pool's size and ``numNodesToFind``. ``fresh``: the shape not evaluated yet."""
    objects = nodes(60, pools=pools) + job("g", pods, cpu=cpu, pool="p0") + job("h", 1, cpu=cpu, pool="p0")
    objects[60]["spec"]["minMember"] = pods
    ssn = open_session(build_snapshot(objects), CONF, FixedClock(), options)
    for row in fill:
        ssn.idle[row, ssn.dims.index["cpu"]] -= 8000  # millicores
        ssn.touch(row)
    gang = next(j for j in ssn.jobs.values() if j.uid.endswith("/g"))
    if not fresh:
        shape_cache(ssn, gang.tasks[0])  # current on every row, as after an earlier job of the shape
    return ssn, gang


def _search(search: node_search.NodeSearch, task: Any, plan: bool) -> tuple[int, bool]:
    rows, errors = search.feasible(task, plan=plan)
    assert errors is None
    return search.best_feasible(task, rows)


#: (fill, cpu, pods, planned searches at least). The last two, found by a random search over fills: a
#: placed node that filled lies on a window's sentinel; a node that filled moves the sentinel onto
#: another placed node that filled (checked again after the first leaves the rows).
FILLS = [((), "8", 36, 25), ((0, 27, 42), "8", 36, 25), ((), "16", 20, 10), ((0, 27, 42), "12", 17, 8),
         ((3, 15, 21, 24, 54), "6", 23, 10), ((6, 12, 51, 57), "6", 33, 15)]


@pytest.mark.parametrize(("fill", "cpu", "pods", "least"), FILLS)
def test_a_ring_planned_search_answers_and_marks_as_the_search(fill: tuple[int, ...], cpu: str, pods: int,
                                                              least: int) -> None:
    (ring_ssn, ring_job), (plain_ssn, plain_job) = _pool_session(fill, cpu, pods), _pool_session(fill, cpu, pods)
    ring, plain = node_search.NodeSearch(ring_ssn), node_search.NodeSearch(plain_ssn)
    ring_stmt, plain_stmt = Statement(ring_ssn), Statement(plain_ssn)
    planned = _step(ring, plain, ring_job, plain_job, ring_stmt, plain_stmt)
    assert planned >= least  # planned on while nodes filled and left the rows
    key = f"{ring_job.uid}/{ring_job.tasks[0].spec.role}"
    assert plain.role_errors[key][::3].sum() >= 5  # nodes of the pool filled: marked for the role


@pytest.mark.parametrize(("pools", "percentage"), [(3, 17), (1, 50)])
def test_ring_plans_mark_as_the_search_before_and_after_going_round(pools: int, percentage: int) -> None:
    # 20 feasible rows and numNodesToFind 10: two windows' spans fall short of the ring, so the third
    # search still marks rows never visited; one pool: every node feasible, no failure marked until
    # nodes fill (after the searches went round the ring)
    options = SessionOptions(percentage_nodes_to_find=percentage, minimum_feasible_nodes=5)
    pods = 40 if pools == 3 else 120
    (ring_ssn, ring_job), (plain_ssn, plain_job) = (_pool_session((), "8", pods, pools, options) for _ in "ab")
    ring, plain = node_search.NodeSearch(ring_ssn), node_search.NodeSearch(plain_ssn)
    planned = _step(ring, plain, ring_job, plain_job, Statement(ring_ssn), Statement(plain_ssn))
    assert planned >= pods // 2
    key = f"{ring_job.uid}/{ring_job.tasks[0].spec.role}"
    assert plain.role_errors[key].sum() >= 10  # marked: other pools' rows, or the nodes that filled


@pytest.mark.parametrize("min_chunk", [512, 8])
def test_a_fresh_shape_plans_after_a_search_that_evaluated_every_row(min_chunk: int,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    # The first search visits rows in chunks, evaluating them: 512 rows at least evaluate the whole
    # ring at once (then it plans, as an index search would); chunks of 8 rows for a gang of 4 leave
    # rows unevaluated (then it must not: the sorted feasible rows are not known)
    monkeypatch.setattr(node_search, "MIN_CHUNK", min_chunk)
    options = SessionOptions(percentage_nodes_to_find=10, minimum_feasible_nodes=5)  # 6 of the pool's 20
    ring_ssn, ring_job = _pool_session(pods=4, options=options, fresh=True)
    ring = node_search.NodeSearch(ring_ssn)
    _search(ring, ring_job.tasks[0], plan=True)
    cache = ring_ssn.shape_caches[ring_job.tasks[0].spec.shape]
    assert isinstance(ring.plan, SearchPlan) == (min_chunk == 512) == (cache.missing == 0)
    (ring_ssn, ring_job), (plain_ssn, plain_job) = (_pool_session(pods=4, options=options, fresh=True) for _ in "ab")
    ring, plain = node_search.NodeSearch(ring_ssn), node_search.NodeSearch(plain_ssn)
    planned = _step(ring, plain, ring_job, plain_job, Statement(ring_ssn), Statement(plain_ssn),
                    SearchPlan if min_chunk == 512 else None)
    assert planned == (2 if min_chunk == 512 else 0)


def _step(ring: Any, plain: Any, ring_job: Any, plain_job: Any, ring_stmt: Any, plain_stmt: Any,
          first: type | None = RingPlan) -> int:
    """Each task of ``ring_job`` planned or searched against one search per task of ``plain_job``
    (answer, start, marks); ``first``: the kind of plan the first search makes. Planned searches."""
    ring_ssn, plain_ssn = ring.ssn, plain.ssn
    planned = 0
    for k, (task, twin) in enumerate(zip(ring_job.tasks, plain_job.tasks, strict=True)):
        answer = ring.planned(task) if k else None
        if answer is None:  # the first search, or a plan that ended (its count, or the rows too few)
            answer = _search(ring, task, plan=True)
            if k == 0:
                assert isinstance(ring.plan, first) if first else ring.plan is None
        else:
            planned += 1
        expected = _search(plain, twin, plan=False)
        assert answer == expected, k
        assert ring_ssn.node_cursor == plain_ssn.node_cursor, k
        key = f"{ring_job.uid}/{task.spec.role}"
        assert (ring.role_errors.get(key) is None) == (plain.role_errors.get(key) is None)
        if key in plain.role_errors:
            assert np.array_equal(ring.role_errors[key], plain.role_errors[key]), k
        ring_stmt.allocate(task, answer[0])
        plain_stmt.allocate(twin, expected[0])
    return planned


@pytest.mark.parametrize("change", CHANGES)
def test_a_ring_plan_is_dropped_when_the_session_is_not_as_it_assumed(change: str) -> None:
    ssn, gang = _pool_session()
    search, stmt = node_search.NodeSearch(ssn), Statement(ssn)
    first, _ = _search(search, gang.tasks[0], plan=True)
    task = make_change(ssn, gang, stmt, first, change, cursor_step=3)
    assert isinstance(search.plan, RingPlan)
    assert search.planned(task) is None
    assert search.plan is None
