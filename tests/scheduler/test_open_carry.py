"""What a session's opening carries from earlier sessions (issue 41, round 8) must give what the
plain computation gives, and must not answer when an input changed:

* the scheduler cache hands its last frozen node table and device arrays to the next snapshot
  until a pod's accounting or a device row changes;
* the ledger of left-out jobs finds the jobs a session wraps without a pass over every job;
* proportion's opening remembered by its inputs, overcommit's used sum per node table, drf's
  inverse total per total, the carried queue sums copied only where a session's job adds, and
  deviceshare's whole-number test of the carried rows read from the arrays' fractional rows;
* ``enqueue`` serving the one queue with pending jobs without the heap of every queue;
* a quiescent fragment worked out in full only for a spec a session may leave out.
"""

from __future__ import annotations

import copy
from typing import Any
from unittest.mock import patch

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from member_agent.scheduler.actions.enqueue import Enqueue
from member_agent.scheduler.cycle import open_session
from member_agent.scheduler.framework.builder import build_snapshot
from member_agent.scheduler.framework.clock import FixedClock
from member_agent.scheduler.framework.left_out import LeftOut, QuiescentLedger
from member_agent.scheduler.framework.session import SessionOptions
from member_agent.scheduler.framework.snapshot import DeviceArrays
from member_agent.scheduler.plugins import drf_shares, overcommit, proportion_opening
from member_agent.scheduler.plugins.device_carry import _fractional_rows, _whole
from member_agent.scheduler.plugins.queue_usage import _CarriedTerms, queue_usage, total_inqueue
from member_agent.scheduler.scheduler_cache import ARRAYS, SchedulerCache
from policies.scheduler_conf import parse_scheduler_conf
from tests.scheduler.test_left_out_ledger import _apply, steps
from tests.scheduler.test_session_reuse import _objects, _walked_usage, jobs_strategy

CONF = parse_scheduler_conf("""
actions: "enqueue, allocate, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: overcommit}, {name: drf}, {name: predicates}, {name: proportion}, {name: nodeorder}]
""")

RUNNING = [("q1", "Running", 1, ["Running", "Running"]), ("q2", "Running", 1, ["Running"]),
           ("q1", "Inqueue", 1, ["Pending", "Pending"]), ("q2", "Pending", 1, ["Pending"])]


def _cache(objects: list[dict[str, Any]], resources: tuple[str, ...] = ()) -> SchedulerCache:
    cache = SchedulerCache(resources=resources)
    for obj in objects:
        cache.upsert(copy.deepcopy(obj))
    return cache


def _pass(left: LeftOut, jobs: tuple[Any, ...]) -> list[Any]:
    return [spec for spec in jobs if spec.uid not in left.fragments]


# ---------------------------------------------------------------- the cache's frozen copies
def test_an_unchanged_cache_hands_on_its_frozen_table_and_a_change_copies_it_again() -> None:
    objects = _objects(RUNNING)
    cache = _cache(objects)
    first = cache.snapshot()
    second = cache.snapshot()
    assert second.nodes is first.nodes and second.device_arrays is first.device_arrays
    assert not first.nodes.used.flags.writeable
    pod = next(o for o in objects if o["kind"] == "Pod" and o["status"]["phase"] == "Pending")
    pod["spec"]["nodeName"], pod["status"] = "n00003", {"phase": "Running"}  # a pod's accounting moves
    cache.upsert(copy.deepcopy(pod))
    third = cache.snapshot()
    assert third.nodes is not first.nodes
    fresh = build_snapshot(copy.deepcopy(objects))
    for name in ARRAYS:
        np.testing.assert_array_equal(getattr(third.nodes, name), getattr(fresh.nodes, name))
    assert not np.array_equal(third.nodes.used, first.nodes.used)
    gone = next(o for o in objects if o["kind"] == "Pod" and o["status"]["phase"] == "Running")
    objects.remove(gone)
    cache.delete(copy.deepcopy(gone))  # a pod that ends frees its node's row
    fourth = cache.snapshot()
    assert fourth.nodes is not third.nodes
    np.testing.assert_array_equal(fourth.nodes.used, build_snapshot(copy.deepcopy(objects)).nodes.used)


def test_device_arrays_are_copied_again_once_a_device_row_changed() -> None:
    cache = _cache(_objects(RUNNING))
    first = cache.snapshot()
    cache._held.dirty_rows.add(0)  # what folding a resident's GPUs into row 0 records
    second = cache.snapshot()
    assert second.device_arrays is not first.device_arrays
    assert cache.snapshot().device_arrays is second.device_arrays


# ---------------------------------------------------------------- the jobs a session wraps
@settings(max_examples=40, deadline=None)
@given(jobs=jobs_strategy, changes=steps)
def test_the_wrapped_jobs_read_from_the_ledger_equal_a_pass_over_every_job(jobs: Any, changes: Any) -> None:
    objects = _objects(jobs)
    cache = _cache(objects, ("example.com/share",))  # a step may ask for it
    for step in [("none", 0), *changes]:
        _apply(step, objects, cache, None)
        snapshot = cache.snapshot()
        cache.ledger.update(snapshot)
        left = LeftOut(cache.ledger)
        assert list(left.kept_in(snapshot.jobs)) == _pass(left, snapshot.jobs)


def test_the_ledger_answers_for_the_cache_tuple_it_reached_by_notes_only() -> None:
    objects = _objects(RUNNING)
    cache = _cache(objects)
    first = cache.snapshot()
    cache.ledger.update(first)
    assert cache.ledger.wrapped_in_order(first.jobs) is None  # compared, not noted: order unknown
    group = next(o for o in objects if o["kind"] == "PodGroup" and o["metadata"]["name"] == "j3")
    group["status"] = {"phase": "Inqueue"}
    cache.upsert(copy.deepcopy(group))
    second = cache.snapshot()
    cache.ledger.update(second)
    wrapped = cache.ledger.wrapped_in_order(second.jobs)
    left = LeftOut(cache.ledger)
    assert wrapped is not None and wrapped == _pass(left, second.jobs)
    assert {"b/j2", "b/j3"} <= {spec.uid for spec in wrapped} and "b/j0" not in {spec.uid for spec in wrapped}
    assert cache.ledger.wrapped_in_order(tuple(list(second.jobs))) is None  # another tuple
    assert cache.ledger.wrapped_in_order(first.jobs) is None  # not the tuple described now
    fresh = QuiescentLedger()
    fresh.update(second)
    assert fresh.wrapped_in_order(second.jobs) is None


# ---------------------------------------------------------------- the plugins' openings
def _attrs(ssn: Any) -> dict[str, list[Any]]:
    plugin = ssn.plugins["proportion"]
    return {name: [a.weight, a.priority, a.state, a.share, a.inv_any,
                   *(getattr(a, f).tolist() for f in ("capability", "guarantee", "real_capability", "allocated",
                                                        "request", "inqueue", "elastic", "deserved", "inv_deserved"))]
            for name, a in plugin.attrs.items()}


def _forget() -> None:
    proportion_opening._OPENED.clear()
    proportion_opening._CAPABILITIES.clear()


def test_a_remembered_proportion_opening_equals_a_fresh_one_and_hands_out_arrays_of_its_own() -> None:
    snapshot = build_snapshot(_objects(RUNNING))
    _forget()
    fresh = open_session(snapshot, CONF, FixedClock())
    assert len(proportion_opening._OPENED) == 1
    again = open_session(snapshot, CONF, FixedClock())
    assert len(proportion_opening._OPENED) == 1  # answered from the memo
    assert _attrs(again) == _attrs(fresh)
    a, b = fresh.plugins["proportion"].attrs["q1"], again.plugins["proportion"].attrs["q1"]
    assert a.deserved is not b.deserved and b.deserved.flags.writeable and b.inv_deserved.flags.writeable
    assert not np.shares_memory(a.allocated, b.allocated)
    b.allocated += 1.0  # a placement's handler: the other session's queue does not move
    assert _attrs(fresh) == _attrs(open_session(snapshot, CONF, FixedClock()))


def test_a_proportion_opening_with_another_input_is_not_answered_from_the_memo() -> None:
    objects = _objects(RUNNING)
    cache = _cache(objects)  # as an agent's: the queues' specs and the dims kept across snapshots
    _forget()
    open_session(cache.snapshot(), CONF, FixedClock())
    pod = next(o for o in objects if o["kind"] == "Pod" and o["status"]["phase"] == "Pending")
    pod["spec"]["nodeName"], pod["status"] = "n00003", {"phase": "Running"}  # a queue's allocated moves
    cache.upsert(copy.deepcopy(pod))
    moved = cache.snapshot()
    got = open_session(moved, CONF, FixedClock())
    # the requests as before: the deserved answered from the memo, the shares worked out again (below)
    assert len(proportion_opening._OPENED) == 1 and len(proportion_opening._CAPABILITIES) == 1
    assert got.plugins["proportion"].attrs["q1"].share != 0.0
    pending = next(o for o in objects if o["kind"] == "Pod" and o["status"]["phase"] == "Pending")
    cache.delete(copy.deepcopy(pending))  # a queue's request moves
    objects.remove(pending)
    open_session(cache.snapshot(), CONF, FixedClock())
    assert len(proportion_opening._OPENED) == 2 and len(proportion_opening._CAPABILITIES) == 1  # the queues as before
    queue = next(o for o in objects if o["kind"] == "Queue" and o["metadata"]["name"] == "q2")
    queue["spec"]["weight"] = 3  # another Queue spec, the sums as before
    cache.upsert(copy.deepcopy(queue))
    reweighted = open_session(cache.snapshot(), CONF, FixedClock())
    assert len(proportion_opening._OPENED) == 3 and len(proportion_opening._CAPABILITIES) == 2
    assert _attrs(reweighted)["q2"][0] == 3
    _forget()
    assert _attrs(got) == _attrs(open_session(moved, CONF, FixedClock()))
    assert _attrs(reweighted) == _attrs(open_session(cache.snapshot(), CONF, FixedClock()))


def test_overcommit_reads_the_used_sum_of_an_unchanged_table_and_sums_a_changed_session() -> None:
    cache = _cache(_objects(RUNNING))
    ssn = open_session(cache.snapshot(), CONF, FixedClock())
    summed = overcommit._used(ssn)
    np.testing.assert_array_equal(summed, ssn.used.sum(axis=0))
    later = open_session(cache.snapshot(), CONF, FixedClock())  # the same table handed on
    assert later.nodes is ssn.nodes and overcommit._used(later) is summed
    later.used[0] += later.used[1]  # a row changed in the session, recorded as every change is
    later.changes.append(0)
    np.testing.assert_array_equal(overcommit._used(later), later.used.sum(axis=0))
    assert not np.array_equal(overcommit._used(later), summed)
    other = open_session(build_snapshot(_objects(RUNNING)), CONF, FixedClock())  # another table
    assert overcommit._used(other) is not summed
    np.testing.assert_array_equal(overcommit._used(other), summed)


def test_drf_inverse_total_remembered_by_its_bytes() -> None:
    total = np.array([8.0, 0.05, 4.0, 0.0])
    counted = total >= 0.1
    expected = np.zeros_like(total)
    expected[counted] = 1.0 / total[counted]
    any_dim, inverse = drf_shares._inverse(total)
    assert any_dim and inverse.tolist() == expected.tolist() and not inverse.flags.writeable
    assert drf_shares._inverse(total.copy())[1] is inverse
    other = np.array([8.0, 0.05, 2.0, 0.0])
    assert drf_shares._inverse(other)[1].tolist() == [0.125, 0.0, 0.5, 0.0]
    assert drf_shares._inverse(np.zeros(3)) == (False, drf_shares._inverse(np.zeros(3))[1])


def test_carried_sums_of_many_queues_equal_a_walk_and_stay_as_the_tally_keeps_them() -> None:
    """Six queues (overcommit's total inqueue then adds them with one cumsum), jobs of the session
    in two of them: the tally's arrays are not written, and the sums equal the walk."""
    jobs = [(f"q{i % 2 + 1}", "Running", 1, ["Running", "Running"]) for i in range(6)]  # gangs ready: left out
    objects = _objects([*jobs, ("q1", "Inqueue", 2, ["Pending"]), ("q2", "Pending", 1, ["Pending"])])
    for i in range(3, 7):
        objects.append({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": f"q{i}"},
                        "spec": {"weight": 1}, "status": {"state": "Open"}})
    for n, group in enumerate(o for o in objects if o["kind"] == "PodGroup" and o["metadata"]["name"] in
                              ("j0", "j1", "j2", "j3")):
        group["spec"]["queue"] = f"q{n + 3}"
    cache = _cache(objects)
    snapshot = cache.snapshot()
    ssn = open_session(snapshot, CONF, FixedClock())
    assert ssn.left_out and len(ssn.job_queues()) == 6
    tally = cache.ledger.tally("queue_terms", lambda: _CarriedTerms(ssn.dims.zeros()))
    assert isinstance(tally, _CarriedTerms)
    kept = {queue: block.copy() for queue, block in tally.sums.items()}
    for full in (False, True):
        walked = _walked_usage(ssn, full)
        got = queue_usage(ssn, full_min_for_inqueue=full)
        assert {q: [u.allocated.tolist(), u.request.tolist(), u.inqueue.tolist(), u.elastic.tolist()]
                for q, u in got.items()} == \
               {q: [u.allocated.tolist(), u.request.tolist(), u.inqueue.tolist(), u.elastic.tolist()]
                for q, u in walked.items()}
        looped = ssn.dims.zeros()
        for usage in walked.values():
            looped += usage.inqueue
        assert total_inqueue(ssn, full_min_for_inqueue=full).tolist() == looped.tolist()
    assert {q: b.tolist() for q, b in tally.sums.items()} == {q: b.tolist() for q, b in kept.items()}


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([0.0, 1.0, 0.5, 7.0, np.inf, np.nan]), st.sampled_from([0.0, 2.0, 0.25]),
                          st.booleans()), min_size=1, max_size=8))
def test_the_carried_rows_whole_test_reads_the_fractional_rows_as_the_masked_arrays_did(
        cells: list[tuple[float, float, bool]]) -> None:
    memory = np.array([[m, 1.0] for m, _c, _r in cells])
    cores = np.array([[c, 3.0] for _m, c, _r in cells])
    rows = np.array([r for _m, _c, r in cells])
    base = DeviceArrays(np.full(len(cells), 2), np.full((len(cells), 2), 16.0), memory, cores,
                        np.zeros((len(cells), 2)), np.zeros((len(cells), 2), dtype=bool))
    expected = _whole(memory[rows]) and _whole(cores[rows])
    fractional = _fractional_rows(base)
    assert (not (len(fractional) and rows[fractional].any())) == expected
    assert _fractional_rows(base) is fractional  # the same arrays: remembered
    other = DeviceArrays(base.count, base.memory, np.full_like(memory, 0.5), cores, base.holders, base.exclusive)
    assert len(_fractional_rows(other)) == len(cells)  # other arrays: tested again


class _HeapOnly(Enqueue):
    """Every session through the heap of queues, as before the one-queue path."""

    def _serve_one(self, ssn: Any, listed: list[str], jobs_by_queue: dict[str, Any]) -> None:
        self._serve(ssn, listed, jobs_by_queue)


def _enqueued(snapshot: Any, action: Enqueue) -> tuple[Any, ...]:
    ssn = open_session(snapshot, CONF, FixedClock(), SessionOptions(verbosity=5))
    action.execute(ssn)
    out = ({uid: (job.phase, job.job_fit_error) for uid, job in ssn.jobs.items()}, list(ssn.logs),
           {q: a.inqueue.tolist() for q, a in ssn.plugins["proportion"].attrs.items()},
           ssn.plugins["overcommit"].inqueue.tolist())
    ssn.dispose()
    return out


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["q1", "q2"]), st.integers(1, 12)), min_size=1, max_size=12),
       st.booleans())
def test_one_queue_with_pending_jobs_is_served_as_the_heap_of_queues_serves_it(
        pending: list[tuple[str, int]], one_queue: bool) -> None:
    """Pending jobs whose minimum may not fit (overcommit and proportion reject some), all in
    one queue or in both; a job of each queue running, so both queues are listed."""
    jobs = [("q1", "Running", 1, ["Running", "Running"]), ("q2", "Running", 1, ["Running", "Running"])]
    jobs += [("q1" if one_queue else queue, "Pending", size, ["Pending"] * size) for queue, size in pending]
    snapshot = build_snapshot(_objects(jobs))
    assert _enqueued(snapshot, Enqueue()) == _enqueued(snapshot, _HeapOnly())


def _full_fragment(spec: Any, node_names: tuple[str, ...], index: Any) -> Any:
    """The fragment as worked out before round 8: every field, for every spec."""
    from member_agent.scheduler.framework.infos import JobInfo
    from member_agent.scheduler.framework.quiescent import SCHEDULED, SETTLED, Fragment
    from member_agent.scheduler.framework.result import JobReport

    eligible = (spec.phase == "Running" and bool(spec.tasks) and all(
        t.status in SETTLED and t.node and t.node in index and not t.nominated_node and not t.pod_affinity
        for t in spec.tasks))
    report = None
    kept = tuple(dict(c) for c in spec.conditions if c.get("type") != SCHEDULED[0])
    if eligible:
        probe = JobInfo.at_snapshot(spec)
        eligible = probe.check_task_ready() and probe.is_ready()
        message = next((str(c.get("message", "")) for c in kept if c.get("type") == "Unschedulable"), "")
        report = JobReport(job=spec.uid, queue=spec.queue, phase="Running", min_available=spec.min_available,
                           tasks=len(spec.tasks), bound=len(spec.tasks), pipelined=0, pending=0, reason="",
                           message=message)
    ids = frozenset(str(c.get("transitionID")) for c in spec.conditions
                    if c.get("type") == "Unschedulable" and c.get("status") == "True")
    kind, reason, message = SCHEDULED
    last = spec.conditions[-1] if spec.conditions else {}
    steady = (sum(1 for c in spec.conditions if c.get("type") == kind) == 1
              and {k: v for k, v in last.items() if k != "transitionID"}
              == {"type": kind, "status": "True", "reason": reason, "message": message})
    return Fragment(node_names, spec.uid, eligible, any(t.pod_affinity for t in spec.tasks),
                    {t.key: spec.uid for t in spec.tasks}, kept, ids, report, steady,
                    any(t.pod_affinity.scored for t in spec.tasks))


@settings(max_examples=40, deadline=None)
@given(jobs=jobs_strategy, changes=steps)
def test_a_ledger_of_fragments_worked_out_for_eligible_specs_only_equals_one_of_full_fragments(
        jobs: Any, changes: Any) -> None:
    """Eligible specs' fragments are equal field by field; of the others the ledger reads the
    same counts (inter-pod terms) and nothing else."""
    from member_agent.scheduler.framework import left_out as left_out_module
    from tests.scheduler.test_left_out_ledger import _ledger_view

    objects = _objects(jobs)
    cache = _cache(objects, ("example.com/share",))
    for step in [("none", 0), *changes]:
        _apply(step, objects, cache, None)
        snapshot = cache.snapshot()
        cache.ledger.update(snapshot)
        full = QuiescentLedger()
        with patch.object(left_out_module, "fragment", _full_fragment):
            full.update(snapshot)
        zeros = snapshot.dims.zeros()
        assert _ledger_view(cache.ledger, zeros) == _ledger_view(full, zeros)
        assert {f.uid: f.eligible for f in cache.ledger._found.values()} == \
               {f.uid: bool(f.eligible) for f in full._found.values()}


@given(st.lists(st.lists(st.sampled_from([0.0, -0.0, 1.0, 5e-324, np.inf, np.nan]), min_size=3, max_size=3),
                max_size=5))
def test_the_rows_with_a_nonzero_value_read_as_count_nonzero_does(rows: list[list[float]]) -> None:
    array = np.array(rows).reshape(len(rows), 3)
    assert proportion_opening.has_nonzero(array) == tuple(bool(n > 0) for n in np.count_nonzero(array, axis=1))
