"""Shape caches carried from one session of a scheduler cache to the next (member_agent/scheduler/shape_carry.py).

Every carried cache handed to a session is compared with a fresh cache of that session, on every row
the carried one calls current; sessions over random sequences (binds written back or not, pod ends,
evictions, GPU annotations moved, a node relabelled, another conf object) decide as sessions over a
snapshot built afresh; and for each kind of change the moved-rows detection covers, a scenario where
missing it would leave a wrong entry current.
"""

from __future__ import annotations

import copy
from collections import Counter
from typing import Any, Iterator

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from member_agent.scheduler import shape_carry
from member_agent.scheduler.cycle import run_cycle
from member_agent.scheduler.framework.builder import build_snapshot
from member_agent.scheduler.framework.clock import FixedClock
from member_agent.scheduler.framework.shape_cache import ShapeCache
from member_agent.scheduler.scheduler_cache import SchedulerCache
from policies.scheduler_conf import parse_scheduler_conf
from tests.scheduler.test_session_reuse import _cycle_without_quiescent

CONF_TEXT = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: overcommit}, {name: drf}, {name: predicates}, {name: proportion}, {name: nodeorder},
            {name: deviceshare, arguments: {deviceshare.GPUSharingEnable: true}}]
"""
CONF = parse_scheduler_conf(CONF_TEXT)
#: Pod templates: (requests, node selector)
TEMPLATES = (({"nvidia.com/gpu": "1"}, {}), ({"nvidia.com/gpu": "2"}, {}), ({"nvidia.com/gpu": "4"}, {"pool": "a"}),
             ({"nvidia.com/gpumem": "4", "nvidia.com/gpucores": "25"}, {}), ({"nvidia.com/gpu": "1"}, {"pool": "b"}),
             ({"cpu": "14"}, {}), ({"cpu": "4"}, {}))  # no GPU: only the accounting moves (not the devices)


def _node(i: int, pool: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{i}", "labels": {"pool": pool}},
            "status": {"allocatable": {"cpu": "16", "memory": "64Gi", "pods": "110", "nvidia.com/gpu": "4",
                                       "nvidia.com/gpumem": "64", "nvidia.com/gpucores": "400"}}}


def _job(name: str, template: int, pods: int, node: str | None = None, gpus: str = "",
         priority: str = "") -> list[dict[str, Any]]:
    """A PodGroup and its pods, Pending or Running on ``node`` (with ``gpus`` as their GPU index)."""
    requests, selector = TEMPLATES[template]
    group = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
             "metadata": {"name": name, "namespace": "b"},
             "spec": {"minMember": 1, "queue": "q", **({"priorityClassName": priority} if priority else {})},
             "status": {"phase": "Running" if node else "Inqueue"}}
    objects: list[dict[str, Any]] = [group]
    for k in range(pods):
        annotations = {"scheduling.k8s.io/group-name": name, **({"volcano.sh/gpu-index": gpus} if gpus else {})}
        spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": {
            "cpu": "1", "memory": "1Gi", **requests}}}]}
        if selector:
            spec["nodeSelector"] = dict(selector)
        if node:
            spec["nodeName"] = node
        if priority:
            spec["priorityClassName"] = priority
        objects.append({"apiVersion": "v1", "kind": "Pod",
                        "metadata": {"name": f"{name}-{k}", "namespace": "b", "annotations": annotations},
                        "spec": spec, "status": {"phase": "Running" if node else "Pending"}})
    return objects


QUEUE = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "q"},
         "spec": {"weight": 1}, "status": {"state": "Open"}}


def _check_against_fresh(ssn: Any, task: Any, carried: ShapeCache) -> int:
    """Every entry the carried cache calls current equals a fresh cache's; the rows compared."""
    fresh = ShapeCache(ssn, task)
    fresh.ensure_all(ssn, task)
    rows = np.flatnonzero(carried.evaluated)
    texts = ssn.reasons.texts
    assert [texts[c] for c in carried.codes[rows]] == [texts[c] for c in fresh.codes[rows]]
    for name in ("fit_idle", "fit_future", "ok"):
        np.testing.assert_array_equal(getattr(carried, name)[rows], getattr(fresh, name)[rows], err_msg=name)
    scored = rows[carried.scored[rows]]
    np.testing.assert_array_equal(carried.score[scored], fresh.scores(ssn, task, scored))
    assert carried.missing == len(carried.evaluated) - len(rows)
    assert carried.stale <= set(np.flatnonzero(~carried.evaluated).tolist())
    return len(rows)


@pytest.fixture
def checked(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter[str]]:
    """Every cache the carry hands out is checked against a fresh one; counts what was checked."""
    counts: Counter[str] = Counter()
    take = shape_carry.ShapeCarry.take

    def checked_take(self: shape_carry.ShapeCarry, ssn: Any, task: Any) -> ShapeCache | None:
        cache = take(self, ssn, task)
        if cache is not None:
            counts["carried"] += 1
            counts["rows"] += _check_against_fresh(ssn, task, cache)
        return cache

    monkeypatch.setattr(shape_carry.ShapeCarry, "take", checked_take)
    yield counts


# ---------------------------------------------------------------------------------- random sequences
events = st.lists(st.sampled_from(["write back", "keep", "end", "evict", "reannotate", "relabel", "conf", "arrive"]),
                  min_size=3, max_size=8)


@settings(max_examples=30, deadline=None)
@given(steps=events, seed=st.integers(0, 1000))
@example(steps=["write back", "write back", "keep", "write back", "end"], seed=0)
@example(steps=["write back", "reannotate", "write back", "evict", "write back"], seed=1)
@example(steps=["write back", "relabel", "write back", "conf", "write back"], seed=2)
def test_carried_caches_equal_fresh_ones_and_sessions_decide_alike(steps: list[str], seed: int) -> None:
    rng = np.random.default_rng(seed)
    objects: list[dict[str, Any]] = [_node(i, "a" if i % 2 else "b") for i in range(5)] + [QUEUE]
    for j in range(6):
        objects += _job(f"j{j}", int(rng.integers(len(TEMPLATES))), int(rng.integers(1, 3)))
    cache = SchedulerCache()
    for obj in objects:
        cache.upsert(copy.deepcopy(obj))
    conf = CONF
    counts = Counter[str]()
    with pytest.MonkeyPatch.context() as patch:
        take = shape_carry.ShapeCarry.take

        def checked_take(self: shape_carry.ShapeCarry, ssn: Any, task: Any) -> ShapeCache | None:
            found = take(self, ssn, task)
            if found is not None:
                counts["carried"] += 1
                _check_against_fresh(ssn, task, found)
            return found

        patch.setattr(shape_carry.ShapeCarry, "take", checked_take)
        arrivals = 6
        for step in steps:
            result = run_cycle(cache.snapshot(), conf, FixedClock())
            assert result == _cycle_without_quiescent(build_snapshot(copy.deepcopy(objects)), conf)
            pods = {f"b/{o['metadata']['name']}": o for o in objects if o["kind"] == "Pod"}
            running = sorted(k for k, p in pods.items() if p["status"]["phase"] == "Running")
            if step == "write back":  # the session's bindings become Running pods with their GPU indices
                for key, node in result.bindings.items():
                    pod = pods[key]
                    pod["spec"]["nodeName"], pod["status"] = node, {"phase": "Running"}
                    pod["metadata"]["annotations"].update(result.pod_annotations.get(key, {}))
                    cache.upsert(copy.deepcopy(pod))
            elif step in ("end", "evict") and running:  # a pod ends (Succeeded) or is deleted
                pod = pods[running[int(rng.integers(len(running)))]]
                objects.remove(pod)
                if step == "end":
                    pod["status"] = {"phase": "Succeeded"}
                    objects.append(pod)
                    cache.upsert(copy.deepcopy(pod))
                else:
                    cache.delete(copy.deepcopy(pod))
            elif step == "reannotate" and running:  # the same pod on other GPUs: only the devices move
                pod = pods[running[int(rng.integers(len(running)))]]
                pod["metadata"]["annotations"]["volcano.sh/gpu-index"] = str(int(rng.integers(4)))
                cache.upsert(copy.deepcopy(pod))
            elif step == "relabel":
                node = next(o for o in objects if o["kind"] == "Node")
                node["metadata"]["labels"]["pool"] = "b" if node["metadata"]["labels"]["pool"] == "a" else "a"
                cache.upsert(copy.deepcopy(node))
            elif step == "conf":  # an equal conf, another object: no carry
                conf = parse_scheduler_conf(CONF_TEXT)
            elif step == "arrive":
                for obj in _job(f"j{arrivals}", int(rng.integers(len(TEMPLATES))), 1):
                    objects.append(obj)
                    cache.upsert(copy.deepcopy(obj))
                arrivals += 1
            # "keep": the bindings are not written back (the next snapshot is this one's)


# ---------------------------------------------------------------------------------- each kind of change
def _cache_of(objects: list[dict[str, Any]]) -> SchedulerCache:
    cache = SchedulerCache()
    for obj in objects:
        cache.upsert(copy.deepcopy(obj))
    return cache


def _rows_not_current(monkeypatch: pytest.MonkeyPatch) -> list[np.ndarray]:
    """Records, for each cache the carry hands out, the rows it marked not current."""
    seen: list[np.ndarray] = []
    adopt = shape_carry.ShapeCarry._adopt

    def recording(self: shape_carry.ShapeCarry, ssn: Any, cache: ShapeCache) -> None:
        adopt(self, ssn, cache)
        seen.append(np.flatnonzero(~cache.evaluated))

    monkeypatch.setattr(shape_carry.ShapeCarry, "_adopt", recording)
    return seen


def test_a_row_the_last_session_placed_on_is_not_current_when_the_placement_is_not_written_back(
        checked: Counter[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Found only through the rows the last session touched (no GPU: the device rows do not move, and
    the second snapshot's accounting is the first's)."""
    not_current = _rows_not_current(monkeypatch)
    objects = [_node(0, "a"), _node(1, "b"), QUEUE, *_job("big", 5, 1), *_job("probe", 6, 1)]
    objects[-3]["spec"]["nodeSelector"] = objects[-1]["spec"]["nodeSelector"] = {"pool": "a"}  # n0 only
    cache = _cache_of(objects)
    first = run_cycle(cache.snapshot(), CONF, FixedClock())
    assert "b/big-0" in first.bindings and "b/probe-0" not in first.bindings  # n0 is full for the probe
    cache.delete(copy.deepcopy(next(o for o in objects if o["metadata"]["name"] == "big-0")))  # never bound
    second = run_cycle(cache.snapshot(), CONF, FixedClock())
    assert checked["carried"] == 1 and 0 in not_current[0]
    assert second.bindings.get("b/probe-0") == "n0"  # n0 is empty again: the probe fits


def test_a_row_whose_pod_ended_between_sessions_is_not_current(checked: Counter[str],
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Found only through the accounting arrays of the two snapshots (the last session did not touch n0,
    no GPU: the device rows do not move)."""
    not_current = _rows_not_current(monkeypatch)
    running = _job("running", 5, 1, node="n0")
    objects = [_node(0, "a"), _node(1, "b"), QUEUE, *running, *_job("probe", 6, 1)]
    objects[-1]["spec"]["nodeSelector"] = {"pool": "a"}
    cache = _cache_of(objects)
    assert not run_cycle(cache.snapshot(), CONF, FixedClock()).bindings
    cache.delete(copy.deepcopy(running[1]))
    second = run_cycle(cache.snapshot(), CONF, FixedClock())
    assert checked["carried"] == 1 and 0 in not_current[0]
    assert second.bindings.get("b/probe-0") == "n0"


def test_a_row_whose_gpus_moved_without_its_accounting_is_not_current(checked: Counter[str],
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Found only through the device matrix: a one-GPU pod said to hold three GPUs, then one."""
    not_current = _rows_not_current(monkeypatch)
    running = _job("running", 0, 1, node="n0", gpus="0,1,2")
    objects = [_node(0, "a"), _node(1, "b"), QUEUE, *running, *_job("probe", 1, 1)]
    objects[-1]["spec"]["nodeSelector"] = {"pool": "a"}
    cache = _cache_of(objects)
    assert not run_cycle(cache.snapshot(), CONF, FixedClock()).bindings  # one GPU free on n0 for two
    running[1]["metadata"]["annotations"]["volcano.sh/gpu-index"] = "0"
    cache.upsert(copy.deepcopy(running[1]))
    second = run_cycle(cache.snapshot(), CONF, FixedClock())
    assert checked["carried"] == 1 and 0 in not_current[0]
    assert second.bindings.get("b/probe-0") == "n0"


def test_nothing_is_carried_across_another_conf_object_or_a_relabelled_node(checked: Counter[str]) -> None:
    objects = [_node(0, "a"), _node(1, "b"), QUEUE, *_job("probe", 2, 1, priority="")]
    cache = _cache_of(objects)
    run_cycle(cache.snapshot(), CONF, FixedClock())
    run_cycle(cache.snapshot(), parse_scheduler_conf(CONF_TEXT), FixedClock())
    assert checked["carried"] == 0
    run_cycle(cache.snapshot(), CONF, FixedClock())  # another conf object than the last session's again
    assert checked["carried"] == 0
    run_cycle(cache.snapshot(), CONF, FixedClock())
    assert checked["carried"] == 1
    node = copy.deepcopy(objects[0])
    node["metadata"]["labels"]["pool"] = "b"
    cache.upsert(node)
    run_cycle(cache.snapshot(), CONF, FixedClock())
    assert checked["carried"] == 1


def test_a_snapshot_without_a_scheduler_cache_has_no_carry() -> None:
    objects = [_node(0, "a"), QUEUE, *_job("probe", 2, 1)]
    assert shape_carry.carry_for(build_snapshot(objects)) is None
