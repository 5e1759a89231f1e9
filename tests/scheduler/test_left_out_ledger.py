"""The ledger of left-out jobs (framework/left_out.py), kept across a cache's snapshots, must
describe each snapshot as a ledger filled afresh from it does, and sessions that read it must
decide as sessions that walk every job."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from member_agent.scheduler.cycle import open_session, run_cycle, session_uid
from member_agent.scheduler.framework.builder import build_snapshot
from member_agent.scheduler.framework.clock import FixedClock
from member_agent.scheduler.framework.left_out import QuiescentLedger
from member_agent.scheduler.plugins.queue_usage import _CarriedTerms, queue_usage
from member_agent.scheduler.scheduler_cache import SchedulerCache
from tests.scheduler.test_session_reuse import (
    FIFO,
    _cycle_without_quiescent,
    _objects,
    _walked_usage,
    jobs_strategy,
)

#: what a step does to the cluster: end a pod, run a pending pod on a node, move a PodGroup's
#: phase, give a pod a fractional request (the whole-number sums then step aside), write the
#: last session's phase and conditions into a PodGroup (as the agent does: gang's Scheduled
#: condition makes a left-out job steady), move a PodGroup to the other queue
steps = st.lists(st.tuples(st.sampled_from(["end", "run", "phase", "fraction", "write", "queue"]),
                           st.integers(0, 40)), max_size=8)


def _ledger_view(ledger: QuiescentLedger, zeros: np.ndarray) -> tuple[Any, ...]:
    tally = ledger.tally("queue_terms", lambda: _CarriedTerms(zeros))
    assert isinstance(tally, _CarriedTerms)
    sums = {queue: block.tolist() for queue, block in tally.sums.items()}
    return (dict(ledger.fragments), dict(ledger.running), dict(ledger.owners), dict(ledger.reports), set(ledger.steady),
            dict(ledger.plain), dict(ledger.kept), ledger.with_terms, ledger.with_scored, dict(ledger.with_ids), sums, tally.absolute.tolist(), tally.grand.tolist(), tally.fractional)


def _apply(step: tuple[str, int], objects: list[dict[str, Any]], cache: SchedulerCache, last: Any) -> None:
    kind, pick = step
    pods = [o for o in objects if o["kind"] == "Pod"]
    groups = [o for o in objects if o["kind"] == "PodGroup"]
    if kind == "end" and pods:
        gone = pods[pick % len(pods)]
        objects.remove(gone)
        cache.delete(copy.deepcopy(gone))
    elif kind == "run" and pods:
        pod = pods[pick % len(pods)]
        pod["spec"]["nodeName"], pod["status"] = f"n{pick % 4:05d}", {"phase": "Running"}
        cache.upsert(copy.deepcopy(pod))
    elif kind == "phase" and groups:
        group = groups[pick % len(groups)]
        group["status"] = {"phase": ("Pending", "Inqueue", "Running")[pick % 3]}
        cache.upsert(copy.deepcopy(group))
    elif kind == "fraction" and pods:
        pod = pods[pick % len(pods)]
        pod["spec"]["containers"][0]["resources"]["requests"]["example.com/share"] = "0.5"
        cache.upsert(copy.deepcopy(pod))
    elif kind == "queue" and groups:
        group = groups[pick % len(groups)]
        group["spec"]["queue"] = "q2" if group["spec"]["queue"] == "q1" else "q1"
        cache.upsert(copy.deepcopy(group))
    elif kind == "write" and groups and last is not None:
        group = groups[pick % len(groups)]
        key = f"b/{group['metadata']['name']}"
        if key in last.pod_groups:
            group["status"] = {"phase": last.pod_groups[key], "conditions": last.conditions[key]}
            cache.upsert(copy.deepcopy(group))


@settings(max_examples=60, deadline=None)
@given(jobs=jobs_strategy, changes=steps, every=st.integers(1, 3))
@example(jobs=[("q1", "Running", 1, ["Running", "Running"]), ("q2", "Inqueue", 1, ["Pending"])],
         changes=[("write", 0), ("phase", 0)], every=1)  # a steady job stops being left out
def test_a_ledger_kept_across_snapshots_equals_one_filled_afresh(jobs: list[tuple[str, str, int, list[str]]],
                                                                 changes: list[tuple[str, int]], every: int) -> None:
    """Sessions run on every ``every``-th snapshot: the ledger then follows several snapshots'
    noted changes at once."""
    objects = _objects(jobs)
    cache = SchedulerCache(resources=("example.com/share",))
    for obj in objects:
        cache.upsert(copy.deepcopy(obj))
    last = None
    for i, step in enumerate([("none", 0), *changes]):
        _apply(step, objects, cache, last)
        snapshot = cache.snapshot()
        # the order the cache keeps is the order a walk finds (queues by their first job)
        assert snapshot.queue_order == tuple(dict.fromkeys(spec.queue for spec in snapshot.jobs))
        if i % every:
            continue
        ledger = snapshot.ledger
        assert ledger is cache.ledger
        ledger.update(snapshot)
        fresh = QuiescentLedger()
        fresh.update(snapshot)
        zeros = snapshot.dims.zeros()
        assert _ledger_view(ledger, zeros) == _ledger_view(fresh, zeros)
        ssn = open_session(snapshot, FIFO, FixedClock())  # proportion's sums read the kept tally
        got, expected = queue_usage(ssn), _walked_usage(ssn, False)
        assert list(got) == list(expected)
        for queue, usage in expected.items():
            for field in ("allocated", "request", "inqueue", "elastic"):
                np.testing.assert_array_equal(getattr(got[queue], field), getattr(usage, field))
        ssn.dispose()
        last = run_cycle(snapshot, FIFO, FixedClock())
        assert last == _cycle_without_quiescent(snapshot, FIFO)


def test_an_unchanged_snapshot_leaves_the_ledger_as_it_was() -> None:
    cache = SchedulerCache()
    for obj in _objects([("q1", "Running", 1, ["Running", "Running"]), ("q2", "Inqueue", 1, ["Pending"])]):
        cache.upsert(obj)
    first = cache.snapshot()
    cache.ledger.update(first)
    fragments = dict(cache.ledger.fragments)
    second = cache.snapshot()
    assert second.jobs == first.jobs and all(a is b for a, b in zip(second.jobs, first.jobs, strict=True))
    cache.ledger.update(second)
    assert cache.ledger.fragments == fragments and list(fragments) == ["b/j0"]


def test_a_left_out_job_whose_unschedulable_condition_names_this_session_is_wrapped() -> None:
    """Volcano's close reads a job's Unschedulable condition of this very session (phase
    Unknown): such a job cannot be left out, though its gang runs."""
    objects = _objects([("q1", "Running", 1, ["Running", "Running"]), ("q1", "Running", 1, ["Running", "Running"]),
                        ("q2", "Inqueue", 1, ["Pending"])])
    snapshot = build_snapshot(copy.deepcopy(objects))
    uid = session_uid(FixedClock(), snapshot)
    group = next(o for o in objects if o["kind"] == "PodGroup" and o["metadata"]["name"] == "j0")
    group["status"]["conditions"] = [{"type": "Unschedulable", "status": "True", "reason": "NotEnoughResources",
                                      "message": "old", "transitionID": uid}]
    snapshot = build_snapshot(objects)
    assert session_uid(FixedClock(), snapshot) == uid
    ssn = open_session(snapshot, FIFO, FixedClock())
    assert "b/j0" in ssn.jobs and "b/j0" not in ssn.left_out and "b/j1" in ssn.left_out
    assert "b/j0" not in ssn.left_out.reports and not any(u == "b/j0" for u in ssn.left_out.owners.values())
    ssn.dispose()
    result = run_cycle(snapshot, FIFO, FixedClock())
    assert result.pod_groups["b/j0"] == "Unknown"
    assert result == _cycle_without_quiescent(snapshot, FIFO)


def test_a_ledger_that_missed_more_snapshots_than_it_keeps_compares_by_identity() -> None:
    objects = _objects([("q1", "Running", 1, ["Running", "Running"]), ("q2", "Running", 1, ["Running", "Running"]),
                        ("q1", "Inqueue", 1, ["Pending", "Pending"])])
    cache = SchedulerCache()
    for obj in objects:
        cache.upsert(copy.deepcopy(obj))
    cache.ledger.update(cache.snapshot())
    group = next(o for o in objects if o["kind"] == "PodGroup" and o["metadata"]["name"] == "j1")
    for i in range(QuiescentLedger.DELTAS + 2):  # each snapshot re-derives j1
        group["status"] = {"phase": ("Pending", "Running")[i % 2]}
        cache.upsert(copy.deepcopy(group))
        snapshot = cache.snapshot()
    assert cache.ledger._chain(snapshot.jobs) is None
    cache.ledger.update(snapshot)
    fresh = QuiescentLedger()
    fresh.update(snapshot)
    zeros = snapshot.dims.zeros()
    assert _ledger_view(cache.ledger, zeros) == _ledger_view(fresh, zeros)
    assert set(fresh.fragments) == {"b/j0", "b/j1"}
