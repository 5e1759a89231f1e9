"""Volcano's node-search bound, counted (no timing): how many nodes a task's search evaluates,
where it starts, and that bounding, lazy evaluation and per-state scoring change no decision
they should not.

Volcano (``util/predicate_helper.go``): a task's search starts at the global
``lastProcessedNodeIndex``, stops once ``numNodesToFind`` feasible nodes are found, and moves
the index past the nodes it processed; ``numNodesToFind`` is every node up to
``--minimum-feasible-nodes`` or at ``--percentage-nodes-to-find`` >= 100, else that percentage
(0: adaptive, ``max(--minimum-percentage-nodes-to-find, 50 - nodes/125)``) of the nodes, at
least ``--minimum-feasible-nodes``.
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np
import pytest

from member_agent import node_search_flags, schedule_cmd
from member_agent.scheduler.cycle import run_cycle
from member_agent.scheduler.framework import node_classes, node_search
from member_agent.scheduler.framework import shape_cache as shape_cache_module
from member_agent.scheduler.framework.builder import build_snapshot
from member_agent.scheduler.framework.clock import FixedClock
from member_agent.scheduler.framework.session import Session, SessionOptions
from member_agent.scheduler.plugins import nodeorder
from policies.scheduler_conf import parse_scheduler_conf

CONF = parse_scheduler_conf("""
actions: "enqueue, allocate, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: overcommit}, {name: drf}, {name: predicates}, {name: proportion}, {name: nodeorder}, {name: binpack}]
""")


def nodes(count: int, pools: int = 1) -> list[dict[str, Any]]:
    return [{"apiVersion": "v1", "kind": "Node",
             "metadata": {"name": f"n{i:05d}", "labels": {"pool": f"p{i % pools}"}},
             "status": {"allocatable": {"cpu": "16", "memory": "64Gi", "nvidia.com/gpu": "4", "pods": "110"}}}
            for i in range(count)]


def job(name: str, pods: int, cpu: str = "1", gpus: int = 0, pool: str | None = None) -> list[dict[str, Any]]:
    spec: dict[str, Any] = {"containers": [{"name": "main", "resources": {"requests": {
        "cpu": cpu, "memory": "1Gi", "nvidia.com/gpu": str(gpus)}}}]}
    if pool:
        spec["nodeSelector"] = {"pool": pool}
    objs: list[dict[str, Any]] = [{"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                                   "metadata": {"name": name, "namespace": "b"}, "spec": {"minMember": 1},
                                   "status": {"phase": "Inqueue"}}]
    for k in range(pods):
        objs.append({"apiVersion": "v1", "kind": "Pod",
                     "metadata": {"name": f"{name}-{k}", "namespace": "b",
                                  "annotations": {"scheduling.k8s.io/group-name": name,
                                                  "volcano.sh/task-spec": "worker"}},
                     "spec": spec, "status": {"phase": "Pending"}})
    return objs


def mixed_cluster() -> list[dict[str, Any]]:
    """600 nodes in 3 pools, 40 jobs with their own cpu request, some pinned to a pool."""
    objs = nodes(600, pools=3)
    for j in range(40):
        objs += job(f"j{j:02d}", 3 + j % 7, cpu=f"{1000 + 37 * j}m", gpus=j % 3, pool=f"p{j % 3}" if j % 2 else None)
    return objs


def evaluated_rows(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Spy: the number of (shape, node) evaluations, appended to the returned list."""
    seen: list[int] = []
    evaluate = node_search.ShapeCache._evaluate

    def counting(self: Any, ssn: Session, task: Any, rows: np.ndarray) -> None:
        seen.append(len(rows))
        evaluate(self, ssn, task, rows)

    monkeypatch.setattr(node_search.ShapeCache, "_evaluate", counting)
    return seen


# ---------------------------------------------------------------- numNodesToFind, Volcano's formula
@pytest.mark.parametrize(("n", "options", "expected"), [
    (100, SessionOptions(), 100),  # up to --minimum-feasible-nodes: every node
    (1000, SessionOptions(), 420),  # adaptive: 50 - 1000/125 = 42 %
    (5000, SessionOptions(), 500),  # 50 - 40 = 10 %
    (20000, SessionOptions(), 1000),  # 50 - 160 < 5: --minimum-percentage-nodes-to-find
    (20000, SessionOptions(minimum_percentage_nodes_to_find=10), 2000),
    (200, SessionOptions(), 100),  # 48 % of 200 = 96, raised to --minimum-feasible-nodes
    (1000, SessionOptions(percentage_nodes_to_find=30), 300),
    (1000, SessionOptions(percentage_nodes_to_find=100), 1000),
    (1000, SessionOptions(percentage_nodes_to_find=5, minimum_feasible_nodes=20), 50),
], ids=["small", "adaptive-1k", "adaptive-5k", "adaptive-floor-20k", "min-percentage-10", "min-feasible-raises",
        "fixed-30", "all", "min-feasible-20"])
def test_num_nodes_to_find(n: int, options: SessionOptions, expected: int) -> None:
    ssn = type("S", (), {"options": options})()
    assert node_search.num_nodes_to_find(ssn, n) == expected  # type: ignore[arg-type]


# ---------------------------------------------------------------- the bound limits evaluation
@pytest.mark.parametrize(("percentage", "bounded"), [(10, True), (0, True), (100, False)])
def test_one_task_evaluates_only_the_nodes_its_search_visits(percentage: int, bounded: bool,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    seen = evaluated_rows(monkeypatch)
    snapshot = build_snapshot(nodes(2000) + job("one", 1))
    result = run_cycle(snapshot, CONF, FixedClock(), options=SessionOptions(percentage_nodes_to_find=percentage))
    assert len(result.bindings) == 1
    if bounded:  # 200 (10 %) or 300 (adaptive: 15 %) nodes to find: one chunk of at most 2 x that
        want = node_search.num_nodes_to_find(type("S", (), {"options": SessionOptions(
            percentage_nodes_to_find=percentage)})(), 2000)  # type: ignore[arg-type]
        assert 0 < sum(seen) <= max(node_search.MIN_CHUNK, 2 * (want + 1)) < 2000
    else:
        assert sum(seen) == 2000


def test_unfeasible_rows_make_the_search_evaluate_further(monkeypatch: pytest.MonkeyPatch) -> None:
    # only one node in 4 matches the selector: the search must visit ~4x the rows it keeps
    seen = evaluated_rows(monkeypatch)
    snapshot = build_snapshot(nodes(4000, pools=4) + job("pinned", 1, pool="p3"))
    result = run_cycle(snapshot, CONF, FixedClock(), options=SessionOptions(percentage_nodes_to_find=5))
    assert result.bindings == {"b/pinned-0": "n00003"}  # the first p3 node from the start
    assert 4 * 200 <= sum(seen) < 4000


def test_a_jobs_siblings_evaluate_the_cluster_in_one_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    # 8 tasks x 201 nodes to find sweep all 2000 nodes: one vectorised pass over every row,
    # then only the rows the siblings were placed on are evaluated again (one at a time)
    seen = evaluated_rows(monkeypatch)
    snapshot = build_snapshot(nodes(2000) + job("eight", 8))
    result = run_cycle(snapshot, CONF, FixedClock(), options=SessionOptions(percentage_nodes_to_find=10))
    assert len(result.bindings) == 8
    passes = [rows for rows in seen if rows > node_search.SMALL_ROWS]
    assert passes == [2000]
    assert sum(seen) - 2000 <= 8


def test_chunk_sizes_change_no_decision(monkeypatch: pytest.MonkeyPatch) -> None:
    # 60 of 600 nodes to find: the sized first chunk covers a job's windows; 16-row chunks
    # make every search take many small steps over partly evaluated spans
    options = SessionOptions(percentage_nodes_to_find=10, minimum_feasible_nodes=10)
    sized = run_cycle(build_snapshot(mixed_cluster()), CONF, FixedClock(), options=options)
    monkeypatch.setattr(node_search, "first_chunk", lambda task, cache, want: 16)
    small = run_cycle(build_snapshot(mixed_cluster()), CONF, FixedClock(), options=options)
    assert len(sized.bindings) > 150
    assert sized.bindings == small.bindings and sized.pod_groups == small.pod_groups
    assert sized.last_processed_node_index == small.last_processed_node_index


# ---------------------------------------------------------------- the start rotates, across sessions too
def test_the_search_start_rotates_across_sessions() -> None:
    options = SessionOptions(percentage_nodes_to_find=10)  # 1000 identical nodes: 100 to find
    first = run_cycle(build_snapshot(nodes(1000) + job("a", 1)), CONF, FixedClock(), options=options)
    # equal scores: the first node in visiting order wins; the search stopped at the 101st feasible
    assert first.bindings == {"b/a-0": "n00000"}
    assert first.last_processed_node_index == 100
    carried = SessionOptions(percentage_nodes_to_find=10, last_processed_node_index=first.last_processed_node_index)
    second = run_cycle(build_snapshot(nodes(1000) + job("b", 1)), CONF, FixedClock(), options=carried)
    assert second.bindings == {"b/b-0": "n00100"}
    assert second.last_processed_node_index == 200
    # the start wraps around the end of the node list
    wrapped = run_cycle(build_snapshot(nodes(1000) + job("c", 1)), CONF, FixedClock(),
                        options=SessionOptions(percentage_nodes_to_find=10, last_processed_node_index=2950))
    assert wrapped.bindings == {"b/c-0": "n00950"}
    assert wrapped.last_processed_node_index == 50


def test_tasks_of_a_session_share_the_rotating_start() -> None:
    result = run_cycle(build_snapshot(nodes(1000) + job("a", 3)), CONF, FixedClock(),
                       options=SessionOptions(percentage_nodes_to_find=10))
    assert sorted(result.bindings.values()) == ["n00000", "n00100", "n00200"]
    assert result.last_processed_node_index == 300


def test_without_a_bound_the_start_never_moves() -> None:
    result = run_cycle(build_snapshot(mixed_cluster()), CONF, FixedClock(),
                       options=SessionOptions(percentage_nodes_to_find=100, last_processed_node_index=7))
    assert result.last_processed_node_index == 7


# ---------------------------------------------------------------- optimisations change no decision
def eager_shape_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every shape evaluated on every row at first use (the pre-lazy behaviour)."""
    original = node_search.shape_cache

    def complete(ssn: Session, task: Any, lazy: bool = False) -> Any:
        return original(ssn, task, lazy=False)

    monkeypatch.setattr(node_search, "shape_cache", complete)


@pytest.mark.parametrize("percentage", [100, 0, 10])
def test_lazy_evaluation_gives_the_eager_answers(percentage: int, monkeypatch: pytest.MonkeyPatch) -> None:
    options = SessionOptions(percentage_nodes_to_find=percentage)
    lazy = run_cycle(build_snapshot(mixed_cluster()), CONF, FixedClock(), options=options)
    eager_shape_cache(monkeypatch)
    eager = run_cycle(build_snapshot(mixed_cluster()), CONF, FixedClock(), options=options)
    assert len(lazy.bindings) > 150
    assert lazy.bindings == eager.bindings and lazy.pod_groups == eager.pod_groups
    assert lazy.last_processed_node_index == eager.last_processed_node_index


@pytest.mark.parametrize("memo", [True, False], ids=["memo-per-shape", "classes-per-call"])
def test_scores_per_node_state_equal_scores_per_row(memo: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    if not memo:
        monkeypatch.setattr(node_classes, "MAX_MEMO_CLASSES", 0)
    monkeypatch.setattr(node_classes, "GROUPS_MIN_ROWS", 0)  # groups for 600 rows too: the sharing is counted
    options = SessionOptions(percentage_nodes_to_find=100)
    scored: list[int] = []
    plugin_rows: list[int] = []
    score_rows = shape_cache_module.score_rows
    resource_scores = nodeorder.NodeOrderPlugin._resource_scores
    total = node_classes._total
    computed: list[int] = []  # rows the memo's scorers ran on (vectorised or row by row)

    def spy_cache(ssn: Session, task: Any, rows: np.ndarray, memo: Any, sel: Any = None, want: Any = None,
                  out: Any = None) -> Any:
        scored.append(len(rows) if want is None else int(want.sum()))  # a span's ok rows need a score
        return score_rows(ssn, task, rows, memo, sel, want, out)

    def spy_plugin(self: Any, task: Any, rows: np.ndarray) -> Any:
        plugin_rows.append(len(rows))
        return resource_scores(self, task, rows)

    def spy_total(ssn: Session, task: Any, rows: np.ndarray) -> np.ndarray:
        computed.append(len(rows))
        return total(ssn, task, rows)

    monkeypatch.setattr(shape_cache_module, "score_rows", spy_cache)
    monkeypatch.setattr(nodeorder.NodeOrderPlugin, "_resource_scores", spy_plugin)
    monkeypatch.setattr(node_classes, "_total", spy_total)
    shared = run_cycle(build_snapshot(mixed_cluster()), CONF, FixedClock(), options=options)
    # 3 pools of identical nodes: most rows are scored through one representative of their state
    assert sum(plugin_rows) < sum(scored) / 2
    if memo:
        assert 0 < sum(computed) < sum(scored) / 2
    monkeypatch.setattr(node_classes, "MIN_ROWS", 10**9)  # every row scored by itself
    monkeypatch.setattr(node_classes, "MEMO_MIN_ROWS", 10**9)
    monkeypatch.setattr(node_classes, "ROW_BY_ROW", 0)  # a few rows too: the vectorised scorers, counted
    plugin_rows.clear()
    scored.clear()
    per_row = run_cycle(build_snapshot(mixed_cluster()), CONF, FixedClock(), options=options)
    assert sum(plugin_rows) == sum(scored)
    assert len(shared.bindings) > 150 and shared.bindings == per_row.bindings


# ---------------------------------------------------------------- the flags
def schedule_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="caldera schedule")
    schedule_cmd.register(parser)
    return parser


@pytest.mark.parametrize(("argv", "flag", "rule"), [
    (["--percentage-nodes-to-find", "101"], "--percentage-nodes-to-find", "from 0 to 100, got 101"),
    (["--percentage-nodes-to-find", "-1"], "--percentage-nodes-to-find", "from 0 to 100, got -1"),
    (["--minimum-percentage-nodes-to-find", "250"], "--minimum-percentage-nodes-to-find", "from 0 to 100, got 250"),
    (["--minimum-feasible-nodes", "-5"], "--minimum-feasible-nodes", "0 or more, got -5"),
    (["--minimum-feasible-nodes", "many"], "--minimum-feasible-nodes", "must be an integer, got 'many'"),
], ids=["percentage-above-100", "percentage-negative", "min-percentage-above-100", "min-feasible-negative",
        "min-feasible-not-a-number"])
def test_bad_flag_values_are_refused_naming_the_flag(argv: list[str], flag: str, rule: str,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        schedule_parser().parse_args(["-f", "state.yaml", *argv])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {flag}: " in err and rule in err


def test_flags_default_to_volcano_and_reach_the_session() -> None:
    defaults = node_search_flags.session_options(schedule_parser().parse_args(["-f", "s.yaml"]))
    assert (defaults.percentage_nodes_to_find, defaults.minimum_feasible_nodes,
            defaults.minimum_percentage_nodes_to_find) == (0, 100, 5)
    args = schedule_parser().parse_args(["-f", "s.yaml", "--percentage-nodes-to-find", "30",
                                         "--minimum-feasible-nodes", "20", "--minimum-percentage-nodes-to-find", "7"])
    options = node_search_flags.session_options(args, SessionOptions(verbosity=3))
    assert options == SessionOptions(percentage_nodes_to_find=30, minimum_feasible_nodes=20,
                                     minimum_percentage_nodes_to_find=7, verbosity=3)


def test_agent_command_takes_the_same_flags() -> None:
    from member_agent import agent_cmd

    parser = argparse.ArgumentParser(prog="caldera agent")
    agent_cmd.register(parser)
    args = parser.parse_args(["--cluster", "c", "--kubeconfig", "k", "--sim", "s.yaml",
                              "--percentage-nodes-to-find", "50"])
    assert node_search_flags.session_options(args).percentage_nodes_to_find == 50
