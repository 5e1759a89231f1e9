"""The session's work grows with nodes x distinct task shapes, not with pods (counted, not timed).

A cluster of 300 nodes and 600 pending pods in many jobs built from a few templates: a shape
evaluates a node row once, and again only after the row changed; label/taint checks run once
per placement (node selector, affinity, tolerations), however many request sizes share it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from member_agent.scheduler.cycle import run_cycle
from member_agent.scheduler.framework import node_search, shape_cache
from member_agent.scheduler.framework.builder import build_snapshot
from member_agent.scheduler.framework.clock import FixedClock
from member_agent.scheduler.framework.session import Session
from member_agent.scheduler.plugins import predicates
from policies.scheduler_conf import parse_scheduler_conf

NODES = 300
CONF = parse_scheduler_conf("""
actions: "enqueue, allocate, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: overcommit}, {name: drf}, {name: predicates}, {name: proportion}, {name: nodeorder}, {name: binpack}]
""")


def cluster(per_job_cpu: bool) -> list[dict[str, Any]]:
    objs: list[dict[str, Any]] = []
    for i in range(NODES):
        pool = ("a", "b", "c")[i % 3]
        objs.append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{i:04d}", "labels": {"pool": pool}},
                     "status": {"allocatable": {"cpu": "16", "memory": "64Gi", "nvidia.com/gpu": "4", "pods": "110"}}})
    for j in range(60):
        name = f"job{j:03d}"
        cpu = f"{1000 + (j if per_job_cpu else 0)}m"
        spec: dict[str, Any] = {"containers": [{"name": "main", "resources": {"requests": {
            "cpu": cpu, "memory": "2Gi", "nvidia.com/gpu": str(j % 3)}}}]}
        if j % 2:
            spec["nodeSelector"] = {"pool": ("a", "b")[j % 4 // 2]}
        objs.append({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                     "metadata": {"name": name, "namespace": "w"}, "spec": {"minMember": 5}, "status": {"phase": "Inqueue"}})
        for k in range(10):
            objs.append({"apiVersion": "v1", "kind": "Pod",
                         "metadata": {"name": f"{name}-worker-{k}", "namespace": "w",
                                      "annotations": {"scheduling.k8s.io/group-name": name, "volcano.sh/task-spec": "worker"}},
                         "spec": spec, "status": {"phase": "Pending"}})
    return objs


@pytest.mark.parametrize("per_job_cpu", [False, True], ids=["templates", "request-per-job"])
def test_each_row_evaluated_once_per_shape_then_only_changed_rows(per_job_cpu: bool,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[Any, set[int]] = {}  # shape -> rows evaluated for it so far
    again = 0  # evaluations of a row the shape had evaluated before
    placements: list[Any] = []
    sessions: list[Session] = []
    evaluate = node_search.ShapeCache._evaluate
    evaluate_row = node_search.ShapeCache._evaluate_row
    placement_codes = predicates.PredicatesPlugin._placement_codes

    def count(task: Any, rows: list[int]) -> None:
        nonlocal again
        done = seen.setdefault(task.spec.shape, set())
        again += sum(1 for row in rows if row in done)
        done.update(rows)

    def counting_evaluate(self: Any, ssn: Session, task: Any, rows: np.ndarray) -> None:
        sessions.append(ssn)
        if len(rows) > node_search.SMALL_ROWS:  # fewer go row by row through _evaluate_row
            count(task, rows.tolist())
        evaluate(self, ssn, task, rows)

    def counting_evaluate_row(self: Any, ssn: Session, task: Any, row: int) -> None:
        count(task, [row])
        evaluate_row(self, ssn, task, row)

    def counting_placement_codes(self: Any, spec: Any, index: Any) -> Any:
        placements.append(index.placement(spec))
        return placement_codes(self, spec, index)

    monkeypatch.setattr(node_search.ShapeCache, "_evaluate", counting_evaluate)
    monkeypatch.setattr(node_search.ShapeCache, "_evaluate_row", counting_evaluate_row)
    monkeypatch.setattr(predicates.PredicatesPlugin, "_placement_codes", counting_placement_codes)

    snapshot = build_snapshot(cluster(per_job_cpu))
    result = run_cycle(snapshot, CONF, FixedClock())
    assert len(result.bindings) > 300  # the session did real work

    shapes = {t.shape for job in snapshot.jobs for t in job.tasks}
    assert set(seen) <= shapes
    changes = len(sessions[0].changes)
    # a shape evaluates a row again only after it was touched (at most once per touch)
    assert again <= len(shapes) * changes
    # label checks: one per (selector) placement, not one per request size
    assert len(placements) == len(set(placements)) <= 3
    if per_job_cpu:
        assert len(shapes) == 60 and len(placements) <= 3


def test_bounded_shape_caches_give_the_same_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    # one shape per job; keeping only 2 shape caches (dropped ones rebuilt) must not change a decision
    snapshot = build_snapshot(cluster(True))
    unbounded = run_cycle(snapshot, CONF, FixedClock())
    monkeypatch.setattr(shape_cache, "MAX_SHAPES", 2)
    bounded = run_cycle(build_snapshot(cluster(True)), CONF, FixedClock())
    assert len(unbounded.bindings) > 300
    assert bounded.bindings == unbounded.bindings
    assert bounded.pipelined == unbounded.pipelined and bounded.pod_groups == unbounded.pod_groups


@pytest.mark.parametrize("verbosity", [0, 4])
def test_queue_lines_are_formatted_only_when_logged(verbosity: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """proportion describes each queue's vectors for a verbosity-4 line: at verbosity 0 nothing is
    formatted (it was ~10 % of a session on a 14-queue Philly replay), at 4 the lines are kept."""
    from member_agent.scheduler.framework.dims import Dimensions
    from member_agent.scheduler.framework.session import SessionOptions

    calls = [0]
    describe = Dimensions.describe

    def counted(self: Dimensions, vector: Any) -> str:
        calls[0] += 1
        return describe(self, vector)

    monkeypatch.setattr(Dimensions, "describe", counted)
    result = run_cycle(build_snapshot(cluster(False)), CONF, FixedClock(), options=SessionOptions(verbosity=verbosity))
    considering = [line for line in result.logs if line.startswith("Considering Queue")]
    assert result.bindings  # the session did its work either way
    assert (calls[0], considering) == (0, []) if verbosity == 0 else (calls[0] > 0 and len(considering) == 1)


def test_shared_resource_columns_match_the_session_arrays_at_every_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """The Idle/FutureIdle columns the shape caches compare against are kept from Session.touch;
    at every read they must equal the row-major arrays the session mutates."""
    current = node_search.ResourceColumns.current
    reads = [0]

    def checked(self: Any, ssn: Session) -> tuple[np.ndarray, np.ndarray]:
        idle_t, future_t = current(self, ssn)
        assert np.array_equal(idle_t, ssn.idle.T)
        assert np.array_equal(future_t, (ssn.idle + ssn.releasing - ssn.pipelined).T)
        reads[0] += 1
        return idle_t, future_t

    monkeypatch.setattr(node_search.ResourceColumns, "current", checked)
    result = run_cycle(build_snapshot(cluster(True)), CONF, FixedClock())
    assert len(result.bindings) > 300 and reads[0] > 1
