"""Round 10's opening shortcuts against the computations they replace: proportion's fill straight from
the queues' vectors, its memo answering sessions whose ``allocated`` differ (shares worked out again),
a job's queue terms on Python floats, and overcommit's total inqueue from the sums over every queue."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from member_agent.scheduler.framework.infos import JobInfo, TaskInfo
from member_agent.scheduler.framework.status import ALLOCATED_STATUSES, TaskStatus
from member_agent.scheduler.plugins import proportion_opening
from member_agent.scheduler.plugins.queue_terms import _terms
from member_agent.scheduler.plugins.water_fill import _fill_floats, fill_values
from tests.scheduler.test_proportion_water_fill import ALWAYS, DIMS, _attrs, finite, finite_queues

totals = st.lists(finite, min_size=DIMS, max_size=DIMS)
allocations = st.lists(st.lists(finite, min_size=DIMS, max_size=DIMS), min_size=9, max_size=9)


def _rows(attrs: list[proportion_opening.QueueAttr]) -> list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    return [(a.real_capability, a.request, a.guarantee, a.allocated) for a in attrs]


@settings(max_examples=200, deadline=None)
@given(spec=finite_queues, total=totals, other=allocations)
def test_a_fill_from_the_vectors_equals_the_attributes_fill_and_its_shares_follow_allocated(
        spec: list[tuple[int, list[float], list[float], list[float], list[float]]], total: list[float],
        other: list[list[float]]) -> None:
    attrs = _attrs(spec)
    filled = fill_values(_rows(attrs), [a.weight for a in attrs], np.array(total), ALWAYS)
    assert _fill_floats(attrs, np.array(total), ALWAYS) and filled is not None
    deserved, shares = filled
    assert np.array(deserved).tobytes() == np.array([a.deserved for a in attrs]).tobytes()
    assert shares == [a.share for a in attrs]
    # Another allocated, the rest as before: the same deserved, and the shares share_of works out
    # from them (inside the floats' domain) equal a fill's.
    moved = _attrs([(w, c, r, g, other[i]) for i, (w, c, r, g, _a) in enumerate(spec)])
    refilled = fill_values(_rows(moved), [a.weight for a in moved], np.array(total), ALWAYS)
    assert refilled is not None and refilled[0] == deserved
    sums = {a.name: np.array([a.allocated, a.request, a.elastic, a.inqueue]) for a in moved}
    assert proportion_opening._in_domain(sums)
    shares_of = tuple(proportion_opening.share_of(block[0].tolist(), row)
                      for block, row in zip(sums.values(), deserved, strict=True))
    assert shares_of == tuple(refilled[1])


def test_shares_are_not_worked_out_for_an_allocated_outside_the_floats_domain() -> None:
    for odd in (np.inf, np.nan, -0.0, -1.0):
        sums = {"q": np.array([[odd, 1.0, 0.0, 0.0], [1.0] * 4, [0.0] * 4, [0.0] * 4])}
        assert not proportion_opening._in_domain(sums)
        values = [np.array([odd, 1.0, 0.0, 0.0]), np.ones(4), np.zeros(4), np.zeros(4)]
        assert fill_values([tuple(values)], [1], np.full(4, 4.0), ALWAYS) is None  # type: ignore[list-item]
    assert proportion_opening._in_domain({})


odd_values = st.sampled_from([0.0, -0.0, 0.5, 1.0, 3.0, 1e16, np.inf, np.nan])
term_tasks = st.lists(st.tuples(st.sampled_from(list(TaskStatus)), st.booleans(),
                                st.lists(odd_values, min_size=3, max_size=3)), max_size=4)


def _term_spec(tasks: list[tuple[TaskStatus, bool, list[float]]], phase: str, min_res: list[float] | None,
               min_available: int) -> Any:
    specs = tuple(SimpleNamespace(role="worker", best_effort=False, status=status, name=f"t{i}", gated=gated,
                                  request=np.array(request)) for i, (status, gated, request) in enumerate(tasks))
    return SimpleNamespace(uid="ns/j", name="j", queue="q", min_available=min_available, min_task_member={},
                           priority=0, phase=phase, conditions=(), tasks=specs, memo={},
                           min_resources=None if min_res is None else np.array(min_res))


def _numpy_block(spec: Any, zeros: np.ndarray, full: bool) -> tuple[np.ndarray, bool, bool]:
    """The terms as the vector code worked them out before (the reference): the four rows, whether
    every value is whole, whether there is an inqueue term."""
    with np.errstate(all="ignore"):  # inf - inf: NaN, as the sums give
        return _numpy_terms(spec, zeros, full)


def _numpy_terms(spec: Any, zeros: np.ndarray, full: bool) -> tuple[np.ndarray, bool, bool]:
    allocated, gated, request = zeros.copy(), zeros.copy(), zeros.copy()
    pending = []
    for t in spec.tasks:
        if t.status in ALLOCATED_STATUSES:
            allocated += t.request
        elif t.status == TaskStatus.PENDING:
            pending.append(t.request)
            if t.gated:
                gated += t.request
    for part in (allocated, *pending):
        request += part
    min_res = spec.min_resources
    elastic = np.maximum(allocated - (min_res if min_res is not None else zeros), 0.0)
    inqueue = None
    placed = sum(t.status in ALLOCATED_STATUSES for t in spec.tasks)
    if min_res is not None and spec.phase == "Inqueue":
        reserve = min_res if full else np.maximum(min_res - allocated, 0.0)
        inqueue = np.maximum(reserve - gated, 0.0)
    elif min_res is not None and spec.phase == "Running" and placed >= spec.min_available:
        inqueue = np.maximum(np.maximum(min_res - allocated, 0.0) - gated, 0.0)
    values = np.concatenate([allocated, *pending, elastic, *(() if inqueue is None else (inqueue,))])
    whole = bool(np.isfinite(values).all() and (np.floor(values) == values).all())
    return np.array([allocated, request, elastic, inqueue if inqueue is not None else zeros]), whole, inqueue is None


@settings(max_examples=300, deadline=None)
@given(tasks=term_tasks, phase=st.sampled_from(["Pending", "Inqueue", "Running"]),
       min_res=st.none() | st.lists(odd_values, min_size=3, max_size=3), min_available=st.integers(0, 3),
       full=st.booleans())
def test_a_jobs_queue_terms_on_floats_equal_the_vector_code_bit_for_bit(
        tasks: list[tuple[TaskStatus, bool, list[float]]], phase: str, min_res: list[float] | None,
        min_available: int, full: bool) -> None:
    zeros = np.zeros(3)
    expected, whole, no_inqueue = _numpy_block(_term_spec(tasks, phase, min_res, min_available), zeros, full)
    for wrapped in (True, False):  # a session's job, and a quiescent job's spec read without wrapping it
        spec = _term_spec(tasks, phase, min_res, min_available)
        job: Any = spec
        if wrapped:
            job = JobInfo(spec)
            job.adopt([TaskInfo(t, job, None, i) for i, t in enumerate(spec.tasks)])
        terms = _terms(job, zeros, full)
        assert terms.block.tobytes() == expected.tobytes() and terms.integral == whole
        assert not terms.block.flags.writeable
        assert terms.allocated.tobytes() == expected[0].tobytes() and terms.elastic.tobytes() == expected[2].tobytes()
        assert (terms.inqueue is None) == no_inqueue


def test_a_queues_attributes_built_late_read_the_sums_as_the_session_opened() -> None:
    """Proportion builds a queue's attributes when first asked for; by then a later snapshot may have
    moved the ledger's sums (a queue of left-out jobs only shares the ledger's arrays): they are the
    opening's all the same, and equal those of a session that read them at once."""
    import copy

    from member_agent.scheduler.cycle import open_session
    from member_agent.scheduler.framework.clock import FixedClock
    from tests.scheduler.test_open_carry import CONF, _attrs, _cache
    from tests.scheduler.test_session_reuse import _objects

    objects = _objects([("q1", "Inqueue", 1, ["Pending"]), *[("q2", "Running", 1, ["Running", "Running"])] * 3])
    cache = _cache(objects)
    snapshot = cache.snapshot()
    late = open_session(snapshot, CONF, FixedClock())
    assert len(late.left_out.fragments) >= 2 and not late.plugins["proportion"]._attrs  # nothing built yet
    at_once = _attrs(open_session(snapshot, CONF, FixedClock()))
    pod = next(o for o in objects if o["kind"] == "Pod" and o["status"]["phase"] == "Running")
    cache.delete(copy.deepcopy(pod))  # a left-out job of q2 is no longer ready: the ledger's q2 sums move
    open_session(cache.snapshot(), CONF, FixedClock())
    assert _attrs(late) == at_once


@settings(max_examples=100, deadline=None)
@given(statuses=st.lists(st.sampled_from([TaskStatus.RUNNING, TaskStatus.BOUND]), max_size=5),
       best_effort=st.booleans(), min_available=st.integers(0, 6))
def test_a_settled_job_without_role_minimums_is_ready_by_its_count(statuses: list[TaskStatus], best_effort: bool,
                                                                    min_available: int) -> None:
    """quiescent._fragment reads gang's JobReady of such a job as the count, without wrapping it."""
    from member_agent.scheduler.framework import quiescent
    from member_agent.scheduler.framework.pod_affinity import NO_POD_AFFINITY

    tasks = tuple(SimpleNamespace(role="worker", best_effort=best_effort, status=status, name=f"t{i}", node="n0",
                                  nominated_node="", pod_affinity=NO_POD_AFFINITY, key=f"ns/t{i}")
                  for i, status in enumerate(statuses))
    spec: Any = SimpleNamespace(uid="ns/j", name="j", queue="q", min_available=min_available, min_task_member={},
                                priority=0, phase="Running", conditions=(), tasks=tasks, memo={}, min_resources=None)
    probe = JobInfo.at_snapshot(spec)
    assert quiescent._fragment(spec, ("n0",), {"n0": 0}).eligible == (
        bool(tasks) and probe.check_task_ready() and probe.is_ready())


def test_whether_a_conf_leaves_jobs_out_is_read_for_each_conf_asked_about() -> None:
    from member_agent.scheduler.framework import left_out as left_out_module
    from member_agent.scheduler.framework.builder import build_snapshot
    from policies.scheduler_conf import parse_scheduler_conf
    from tests.scheduler.test_open_carry import CONF
    from tests.scheduler.test_session_reuse import _objects

    evicting = parse_scheduler_conf('actions: "enqueue, allocate, preempt"\ntiers:\n- plugins:\n  - name: gang\n')
    objects = _objects([("q1", "Pending", 1, ["Pending"]), *[("q2", "Running", 1, ["Running", "Running"])] * 2])
    for conf in (CONF, evicting, CONF, CONF, evicting):
        left = left_out_module.left_out(conf, build_snapshot(objects), "uid")
        assert bool(left) == (conf is CONF)
