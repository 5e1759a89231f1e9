"""Round 9: a shape's evaluation of a span and the scalar row scorers give the answers they replace.

A span is scored in place through the group memo (ids past the memo read a NaN slot and are scored
one by one), scattered rows are evaluated as spans per long run, and the row scorers of nodeorder
(balanced part) and binpack run plain loops: each is compared here with the computation it replaces.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from member_agent.scheduler.cycle import open_session
from member_agent.scheduler.framework import node_classes, shape_cache
from member_agent.scheduler.framework import rows as rows_module
from member_agent.scheduler.framework.builder import build_snapshot
from member_agent.scheduler.framework.clock import FixedClock
from member_agent.scheduler.framework.session import Session, SessionOptions
from member_agent.scheduler.framework.status import TaskStatus
from policies.scheduler_conf import parse_scheduler_conf
from tests.scheduler.test_node_search_bound import CONF, mixed_cluster

BINPACK_GPU = parse_scheduler_conf("""
actions: "enqueue, allocate"
tiers:
- plugins: [{name: gang}]
- plugins:
  - name: predicates
  - name: nodeorder
  - name: binpack
    arguments: {binpack.weight: 3, binpack.cpu: 0, binpack.memory: 2, binpack.resources: nvidia.com/gpu,
                binpack.resources.nvidia.com/gpu: 5}
""")


def busy_session(conf: Any = CONF, placements: int = 150) -> tuple[Session, list[Any]]:
    """The 600-node mixed cluster with pods allocated and pipelined on random nodes (many states)."""
    ssn = open_session(build_snapshot(mixed_cluster()), conf, FixedClock(), SessionOptions())
    rng = random.Random(7)
    tasks = [t for j in ssn.jobs.values() for t in j.tasks]
    for task in rng.sample(tasks, placements):
        ssn.place(task, rng.randrange(600), rng.choice((TaskStatus.ALLOCATED, TaskStatus.PIPELINED)))
    return ssn, tasks


@pytest.mark.parametrize("conf", [CONF, BINPACK_GPU], ids=["default-binpack", "binpack-weights"])
def test_scalar_row_scores_equal_the_vectorised_ones(conf: Any) -> None:
    ssn, tasks = busy_session(conf)
    rows = np.arange(600)
    nodeorder, binpack = ssn.plugins["nodeorder"], ssn.plugins["binpack"]
    checked = 0
    for job in list(ssn.jobs.values())[:14]:
        task = job.tasks[-1]
        balanced = nodeorder._balanced(task, rows, 600)
        assert [float(nodeorder._balanced_row(task.spec.request_list, nodeorder.alloc_rows[r], r)) for r in range(600)] \
            == balanced.tolist()
        vectorised = binpack._score(task, rows)
        assert [binpack._score_row(task, r) for r in range(600)] == vectorised.tolist()
        checked += len(set(vectorised.tolist())) > 1 and len(set(balanced.tolist())) > 1
    assert checked >= 10  # rows in many states, not one value everywhere


def test_binpack_terms_follow_the_request() -> None:
    ssn, tasks = busy_session(BINPACK_GPU, placements=0)
    binpack = ssn.plugins["binpack"]
    gpu = ssn.dims.index["nvidia.com/gpu"]
    memory = ssn.dims.index["memory"]
    by_gpus = {t.spec.request_list[gpu]: t for t in tasks}
    with_gpu, without_gpu = by_gpus[2000.0], by_gpus[0.0]  # 2 GPUs (milli-units), none
    terms, factor = binpack._terms(with_gpu.spec.request_list)
    assert [d for d, _, _ in terms] == [memory, gpu]  # cpu counted with weight 0: no term, still in the sum
    assert factor == 100.0 * 3 / (0 + 2 + 5)
    terms, factor = binpack._terms(without_gpu.spec.request_list)  # another request: its own terms
    assert [d for d, _, _ in terms] == [memory] and factor == 100.0 * 3 / 2
    assert binpack._terms(with_gpu.spec.request_list)[1] == 100.0 * 3 / 7


def test_the_memo_lookup_scores_rows_past_it_one_by_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(node_classes, "MAX_MEMO_CLASSES", 4)
    calls: list[list[int]] = []

    def compute(rows: np.ndarray) -> np.ndarray:
        calls.append(rows.tolist())
        return rows * 10.0

    # rows 0..9: groups 0, 1 (in the memo) and 5, 6 (past its 4 ids)
    ids = np.array([0, 1, 0, 5, 1, 6, 5, 0, 1, 6])
    rows = np.arange(10)
    memo = [np.full(1, np.nan)]
    values = node_classes._shared(memo, 0, 4, rows, ids, compute)
    assert len(calls) == 1  # one call: one row per memo group, every row past the memo
    called = calls[0]
    assert [r for r in called if ids[r] >= 4] == [3, 5, 6, 9]
    assert sorted(int(ids[r]) for r in called if ids[r] < 4) == [0, 1]
    for r, g in enumerate(ids.tolist()):
        if g >= 4:
            assert values[r] == 10.0 * r  # its own value, not another row's of the same id
        else:
            assert values[r] == memo[0][g] == 10.0 * next(c for c in called if ids[c] == g)
    assert len(memo[0]) == 5 and np.isnan(memo[0][-1])  # nothing kept past the memo
    calls.clear()
    # only rows 2 and 5 wanted: the memo answers row 2; row 5 (past the memo) is computed again
    want = np.zeros(10, dtype=bool)
    want[[2, 5]] = True
    out = np.full(10, -1.0)
    got = node_classes._shared(memo, 0, 4, rows, ids, compute, want, out)
    assert got is out and calls == [[5]]
    assert out[2] == memo[0][0] and out[5] == 50.0


def test_scattered_rows_are_split_into_long_runs() -> None:
    rows = np.concatenate((np.arange(3, 5), np.arange(100, 300), [400], np.arange(500, 565)))
    parts = rows_module.runs(rows)
    spans = [sel for _, sel in parts if isinstance(sel, slice)]
    assert spans == [slice(100, 300), slice(500, 565)]
    assert sorted(np.concatenate([part for part, _ in parts]).tolist()) == rows.tolist()
    rest = [part for part, sel in parts if not isinstance(sel, slice)]
    assert len(rest) == 1 and rest[0].tolist() == [3, 4, 400]
    few = np.array([1, 2, 50, 51])
    assert [p.tolist() for p, _ in rows_module.runs(few)] == [few.tolist()]


def _entries(cache: Any) -> tuple[Any, ...]:
    ok = cache.ok
    return (cache.codes.tolist(), cache.fit_idle.tolist(), cache.fit_future.tolist(), ok.tolist(),
            cache.score[ok].tolist(), cache.scored[ok].all())


def test_a_scattered_evaluation_equals_the_row_by_row_one(monkeypatch: pytest.MonkeyPatch) -> None:
    ssn, _ = busy_session()
    rows = np.concatenate((np.arange(0, 7), np.arange(40, 300), [333, 350], np.arange(380, 600)))
    for job in list(ssn.jobs.values())[:8]:
        task = job.tasks[0]
        spans = shape_cache.ShapeCache(ssn, task)
        spans._evaluate(ssn, task, rows)
        single = shape_cache.ShapeCache(ssn, task)
        single._evaluate_few(ssn, task, rows.tolist())  # every row in scalar code
        assert _entries(spans) == _entries(single)
        assert spans.missing == single.missing == 600 - len(rows)


def test_a_rise_is_counted_once_per_evaluation_and_never_on_a_first_one() -> None:
    ssn, _ = busy_session(placements=0)
    task = next(iter(ssn.jobs.values())).tasks[0]
    cache = shape_cache.ShapeCache(ssn, task)
    cache._evaluate(ssn, task, np.arange(0, 300))  # first evaluations: no rise
    assert cache.rises == 0 and cache.seen_any
    cache.ok[10:20] = False  # as if these rows had been full when last evaluated
    cache.evaluated[10:20] = False
    cache.missing += 10
    cache._evaluate(ssn, task, np.arange(10, 20))
    assert cache.rises == 1  # seen rows turned ok: one rise for the pass
    cache._evaluate(ssn, task, np.arange(300, 600))  # rows never seen: still no rise
    assert cache.rises == 1
