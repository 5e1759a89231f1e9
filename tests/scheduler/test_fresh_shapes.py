"""A fresh shape's first evaluation (one shape per job): the hints and shortcuts of round 10 change
the cost only, never a decision (counted, not timed).

A fresh shape's first chunk is sized with the feasible density its placement's last fresh shape found
(``node_search.DENSITY_HINTS``): sessions with and without the hint decide the same, and with it the
fresh shapes of a placement seen before evaluate their rows in fewer passes. predicates' "pods full"
per node is kept for every shape's span (``_full_rows``) and must follow every change; the sweep
that drops the sorted feasible rows of shapes not used lately runs at every ``KEEP_OK_ROWS``-th new
shape and must still bound them. A span without anything Releasing or Pipelined takes its
FutureIdle fit from its Idle fit, which must hold after every change. A session without node groups
scores a small span on its rows (no groups built for it), with the grouped values.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from member_agent.scheduler.cycle import open_session, run_cycle
from member_agent.scheduler.framework import node_classes, node_search, shape_cache
from member_agent.scheduler.framework.builder import build_snapshot
from member_agent.scheduler.framework.clock import FixedClock
from member_agent.scheduler.framework.resource_columns import resource_columns
from member_agent.scheduler.framework.session import Session, SessionOptions
from member_agent.scheduler.framework.status import TaskStatus
from tests.scheduler.test_node_search_bound import CONF, job, nodes
from tests.scheduler.test_search_shortcuts import _decisions

OPTIONS = SessionOptions(percentage_nodes_to_find=5, minimum_feasible_nodes=10)


def per_job_pools() -> list[dict[str, Any]]:
    """800 nodes in 4 pools, 48 jobs of 2-13 pods each with its own cpu request, most pinned to a pool
    (a fresh shape per job whose windows sweep its pool; later jobs find nodes filled)."""
    objects = nodes(800, pools=4)
    for j in range(48):
        objects += job(f"j{j:02d}", 2 + j % 12, cpu=f"{3000 + 91 * j}m", gpus=j % 3,
                       pool=f"p{j % 4}" if j % 5 else None)
    return objects


def _count_passes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The rows of each vectorised evaluation (of more than ``SMALL_ROWS`` rows), in order."""
    sizes: list[int] = []
    evaluate = shape_cache.ShapeCache._evaluate

    def spy(self: Any, ssn: Any, task: Any, rows: Any) -> None:
        sizes.append(len(rows))
        evaluate(self, ssn, task, rows)

    monkeypatch.setattr(shape_cache.ShapeCache, "_evaluate", spy)
    return sizes


def test_density_hints_decide_as_without_and_save_passes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(node_search, "MIN_CHUNK", 16)  # chunks sized by the density at this scale
    passes = _count_passes(monkeypatch)
    hinted = run_cycle(build_snapshot(per_job_pools()), CONF, FixedClock(), options=OPTIONS)
    with_hints = list(passes)
    passes.clear()
    monkeypatch.setattr(node_search, "DENSITY_HINTS", False)
    plain = run_cycle(build_snapshot(per_job_pools()), CONF, FixedClock(), options=OPTIONS)
    assert len(hinted.bindings) > 300
    assert _decisions(hinted) == _decisions(plain)
    assert len(with_hints) < 0.85 * len(passes)  # 257 against 325: most shapes in one pass, not two or three


def _small_nodes(count: int) -> list[dict[str, Any]]:
    """Nodes that hold 3 pods: placements, pipelines and evictions fill and free them."""
    objects = nodes(count, pools=2)
    for node in objects:
        node["status"]["allocatable"]["pods"] = "3"
    return objects


def _changing_session(objects: list[dict[str, Any]], seed: int, steps: int) -> Iterator[tuple[Session, list[Any]]]:
    """A session over ``objects`` (pods named ``run-K`` running on node K), changed ``steps`` times at
    random (placed Allocated or Pipelined, undone, evicted in session, eviction undone); yields the
    session and its tasks after each change."""
    for pod in objects:
        if pod["kind"] == "Pod" and pod["metadata"]["name"].startswith("run-"):
            pod["spec"]["nodeName"] = f"n{int(pod['metadata']['name'].split('-')[1]):05d}"
            pod["status"]["phase"] = "Running"
    ssn = open_session(build_snapshot(objects), CONF, FixedClock(), SessionOptions())
    n = len(ssn.node_names)
    tasks = [t for j in ssn.jobs.values() for t in j.tasks]
    running = [t for t in tasks if t.status == TaskStatus.RUNNING]
    pending = [t for t in tasks if t.status == TaskStatus.PENDING]
    assert running and pending
    rng = random.Random(seed)
    placed: list[Any] = []
    evicted: list[Any] = []
    for _ in range(steps):
        pick = rng.random()
        if pick < 0.45 and pending:
            task = pending.pop(rng.randrange(len(pending)))
            ssn.place(task, rng.randrange(n), rng.choice((TaskStatus.ALLOCATED, TaskStatus.PIPELINED)))
            placed.append(task)
        elif pick < 0.7 and placed:
            task = placed.pop(rng.randrange(len(placed)))
            ssn.unplace(task)
            pending.append(task)
        elif pick < 0.85 and running:
            task = running.pop(rng.randrange(len(running)))
            ssn.mark_releasing(task)
            evicted.append(task)
        elif evicted:
            task = evicted.pop(rng.randrange(len(evicted)))
            ssn.unmark_releasing(task)
            running.append(task)
        yield ssn, tasks


def test_full_rows_follow_placements_pipelines_undos_and_evictions() -> None:
    """predicates' shared ``pod_count + pod_delta >= max_pods`` (``_full_rows``) equals the arrays'
    after every change, and its span codes equal the ones worked out from the arrays."""
    objects = _small_nodes(30) + job("run", 20, cpu="1") + job("a", 40, cpu="1") + job("b", 10, cpu="2", pool="p1")
    rng = random.Random(5)
    rows = np.arange(30)
    plugin = None
    for step, (ssn, tasks) in enumerate(_changing_session(objects, 5, 400)):
        plugin = ssn.plugins["predicates"]
        if step % 3:  # read now and then: several changes between reads too
            continue
        expected = ssn.pod_count + plugin.pod_delta >= ssn.nodes.max_pods
        probe = tasks[rng.randrange(len(tasks))]
        codes = plugin._predicate(probe, rows)
        static = plugin._static_codes(probe)
        assert plugin._full_rows().tolist() == expected.tolist()
        assert codes.tolist() == np.where((static == 0) & expected, plugin.pod_number, static).tolist()
    assert plugin is not None and plugin.full is not None and plugin.full.any() and not plugin.full.all()


def test_sorted_feasible_rows_kept_by_the_recent_shapes_only() -> None:
    """With one shape per job, at most about 2 x ``KEEP_OK_ROWS`` cached shapes keep their sorted
    feasible rows (the sweep runs at every ``KEEP_OK_ROWS``-th new shape)."""
    objects = nodes(50)
    for j in range(120):
        objects += job(f"j{j:03d}", 1, cpu=f"{100 + j}m")
    ssn = open_session(build_snapshot(objects), CONF, FixedClock(), SessionOptions())
    for j in ssn.jobs.values():
        task = j.tasks[0]
        assert len(shape_cache.shape_cache(ssn, task).ok_rows) == 50
        kept = sum(cache._ok_rows is not None for cache in ssn.shape_caches.values())
        assert kept <= 2 * shape_cache.KEEP_OK_ROWS
    assert len(ssn.shape_caches) == 120


def test_span_fits_equal_the_arrays_with_and_without_releasing_or_pipelined_rows() -> None:
    """``ResourceColumns.fit_span`` copies the Idle fit as the FutureIdle fit on spans without anything
    Releasing or Pipelined (``moved``); on every span, after every change, both fits equal the
    session arrays' and ``moved`` follows the rows."""
    objects = _small_nodes(40) + job("run", 30, cpu="3") + job("a", 60, cpu="5") + job("b", 20, cpu="7", gpus=1)
    rng = random.Random(11)
    copied = computed = 0
    for ssn, tasks in _changing_session(objects, 11, 300):
        columns = resource_columns(ssn)
        cache = shape_cache.ShapeCache(ssn, tasks[rng.randrange(len(tasks))])
        lo = rng.randrange(40)
        span = slice(lo, rng.randrange(lo + 1, 41))
        fit_idle, fit_future = np.zeros(40, dtype=bool), np.zeros(40, dtype=bool)
        columns.fit_span(ssn, cache.checked, span, fit_idle[span], fit_future[span])
        moved = ssn.releasing.any(axis=1) | ssn.pipelined.any(axis=1)
        assert columns.moved.tolist() == moved.tolist()
        copied += not moved[span].any()
        computed += bool(moved[span].any())
        future = ssn.idle + ssn.releasing - ssn.pipelined
        expected_idle = np.array([all(ssn.idle[r, d] > lim for d, lim in cache.checked) for r in range(40)])
        expected_future = np.array([all(future[r, d] > lim for d, lim in cache.checked) for r in range(40)])
        assert fit_idle[span].tolist() == expected_idle[span].tolist()
        assert fit_future[span].tolist() == expected_future[span].tolist()
    assert copied > 20 and computed > 20  # both kinds of span were met


def test_small_spans_scored_without_node_groups_equal_the_grouped_scores(monkeypatch: pytest.MonkeyPatch) -> None:
    """A session without node groups scores fewer than ``GROUPS_MIN_ROWS`` rows on the rows themselves
    (no ``NodeGroups`` built for it), with the values the group memo gives."""
    objects = nodes(600, pools=3)
    for j in range(12):
        objects += job(f"j{j:02d}", 4, cpu=f"{1000 + 370 * j}m", gpus=j % 3, pool=f"p{j % 3}" if j % 2 else None)
    tasks = []
    scores = {}
    for grouped in (False, True):
        if grouped:
            monkeypatch.setattr(node_classes, "GROUPS_MIN_ROWS", 0)
        ssn = open_session(build_snapshot(objects), CONF, FixedClock(), SessionOptions())
        tasks = [j.tasks[0] for j in ssn.jobs.values()]
        for k, task in enumerate(tasks[:6]):  # a few placements: rows in several states
            ssn.place(task, 7 * k, TaskStatus.ALLOCATED)
        values = []
        for task in tasks:
            cache = shape_cache.shape_cache(ssn, task)
            values.append(cache.scores(ssn, task, cache.ok_rows).tolist())
        assert (ssn.node_classes is not None) == grouped
        scores[grouped] = values
    assert scores[False] == scores[True]
