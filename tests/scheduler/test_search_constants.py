"""Round 9: the per-search constant work around the shape cache gives the answers it replaces.

``best_feasible`` skips the boolean selection when every candidate fits Idle and reads scores with
``take``; a few rows scored by call go through the row scorers; the shared resource columns copy a
short list of changed rows without removing repeats. Each is compared with the computation it replaces,
including the inputs where the shortcut must not answer.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from member_agent.scheduler.framework import node_classes, node_search, resource_columns
from member_agent.scheduler.framework.status import TaskStatus
from tests.scheduler.test_span_evaluation import busy_session


def _best_feasible_before(search: node_search.NodeSearch, task: Any, candidates: np.ndarray) -> tuple[int, bool]:
    """``best_feasible`` as it was: the Idle group by a boolean selection, scores by fancy indexing."""
    cache = search.ssn.shape_caches[task.spec.shape]
    fit_idle = cache.fit_idle
    if len(candidates) == 1:
        row = int(candidates[0])
        return row, bool(fit_idle[row])
    group = candidates[fit_idle[candidates]]
    if len(group) == 0:
        group = candidates
    row = int(group[0]) if len(group) == 1 else int(group[search.top(task, group, cache.score[group])])
    return row, bool(fit_idle[row])


def test_best_feasible_equals_the_selection_it_replaces() -> None:
    ssn, _ = busy_session(placements=200)
    search = node_search.NodeSearch(ssn)
    kinds: set[str] = set()
    for job in list(ssn.jobs.values())[:30]:
        task = next((t for t in job.tasks if t.status == TaskStatus.PENDING), None)
        rows = search.feasible(task)[0] if task is not None else []
        if not len(rows):
            continue
        cache = ssn.shape_caches[task.spec.shape]
        saved = cache.fit_idle.copy()
        # every candidate fits Idle (the shortcut), some do not (the selection), none does (all rows
        # ranked), one candidate only
        for kind, short in (("all", []), ("some", rows[::3]), ("none", rows), ("one", [])):
            cache.fit_idle[:] = saved
            cache.fit_idle[short] = False
            candidates = rows[:1] if kind == "one" else rows
            got = search.best_feasible(task, candidates)
            assert got == _best_feasible_before(search, task, candidates)
            kinds.add(kind)
        cache.fit_idle[:] = saved
    assert kinds == {"all", "some", "none", "one"}


def test_some_fit_idle_ranks_only_those() -> None:
    """The shortcut must not answer when a candidate does not fit Idle: the best score among the
    rows that fit Idle wins, even when a row outside them scores higher."""
    ssn, _ = busy_session(placements=0)
    search = node_search.NodeSearch(ssn)
    task = next(iter(ssn.jobs.values())).tasks[0]
    rows, _ = search.feasible(task)
    cache = ssn.shape_caches[task.spec.shape]
    candidates = rows[:4]
    cache.score[candidates] = [1.0, 5.0, 2.0, 3.0]
    assert search.best_feasible(task, candidates) == (int(candidates[1]), True)
    cache.fit_idle[candidates[1]] = False
    assert search.best_feasible(task, candidates) == (int(candidates[3]), True)


@pytest.mark.parametrize("size", [1, 2, 5, 8, 9, 20, 21, 40])
def test_a_few_rows_scored_by_call_equal_the_vectorised_scores(size: int, monkeypatch: pytest.MonkeyPatch) -> None:
    ssn, _ = busy_session()
    scalar_calls: list[int] = []
    total = node_classes._total

    def spy_total(ssn: Any, task: Any, rows: np.ndarray) -> np.ndarray:
        scalar_calls.append(len(rows))
        return total(ssn, task, rows)

    rng = np.random.default_rng(size)
    for job in list(ssn.jobs.values())[:10]:
        task = job.tasks[0]
        rows = np.sort(rng.choice(600, size, replace=False))
        monkeypatch.setattr(node_classes, "_total", spy_total)
        got = node_classes._score_by_call(ssn, task, rows)
        monkeypatch.setattr(node_classes, "ROW_BY_ROW", 0)  # the vectorised scorers on the rows
        expected = node_classes._score_by_call(ssn, task, rows)
        monkeypatch.undo()
        assert got.tolist() == expected.tolist()
    assert scalar_calls == ([size] * 10 if size <= node_classes.ROW_BY_ROW else [])


def test_a_scorer_without_a_row_function_keeps_the_vectorised_call(monkeypatch: pytest.MonkeyPatch) -> None:
    ssn, _ = busy_session()
    task = next(iter(ssn.jobs.values())).tasks[0]
    rows = np.array([3, 70, 200])
    expected = node_classes._score_by_call(ssn, task, rows).tolist()
    ssn.node_order_fns = [(fn, None) for fn, _ in ssn.node_order_fns]  # no scalar form
    monkeypatch.setattr(node_classes, "_total", lambda *args: pytest.fail("row functions used"))
    assert node_classes._score_by_call(ssn, task, rows).tolist() == expected


@pytest.mark.parametrize("changed", [[5, 9, 5, 5, 300], list(range(0, 600, 7)) * 2])
def test_resource_columns_copy_the_changed_rows(changed: list[int]) -> None:
    ssn, tasks = busy_session(placements=0)
    columns = resource_columns.resource_columns(ssn)
    columns.current(ssn)
    rng = np.random.default_rng(len(changed))
    for row in changed:  # changes the columns do not see until read
        ssn.idle[row] -= rng.integers(1, 50, ssn.idle.shape[1])
        ssn.pipelined[row] += rng.integers(0, 5, ssn.idle.shape[1])
        ssn.touch(row)
    assert (len(changed) <= resource_columns.FEW) == (len(changed) == 5)
    idle, future = columns.current(ssn)
    fresh = resource_columns.ResourceColumns(ssn)
    assert np.array_equal(idle, fresh.idle) and np.array_equal(future, fresh.future)
