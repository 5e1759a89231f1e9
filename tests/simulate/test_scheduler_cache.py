"""The incremental SchedulerCache gives the snapshot build_snapshot would give from the same objects.

A table of event sequences (add, update, delete of Nodes, Pods, PodGroups and Queues); after
each event the cache's snapshot is compared field by field with a from-scratch build.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pytest
from sim_objects import CONF, node, pod, podgroup

from member_agent.scheduler.cycle import run_cycle
from member_agent.scheduler.framework.builder import build_snapshot
from member_agent.scheduler.framework.clock import FixedClock
from member_agent.scheduler.framework.snapshot import Snapshot
from member_agent.scheduler.object_sync import ObjectSync
from member_agent.scheduler.scheduler_cache import SchedulerCache


def queue(name: str, weight: int = 1) -> dict[str, Any]:
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": name},
            "spec": {"weight": weight}}


def running(obj: dict[str, Any], node_name: str, gpu_index: str | None = None) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    out["spec"]["nodeName"] = node_name
    out["status"]["phase"] = "Running"
    if gpu_index:
        out["metadata"]["annotations"]["volcano.sh/gpu-index"] = gpu_index
    return out


def same(a: Snapshot, b: Snapshot) -> None:
    assert a.dims.names == b.dims.names
    for name in ("idle", "used", "releasing", "pipelined", "pod_count", "nonzero_used", "allocatable"):
        assert np.array_equal(getattr(a.nodes, name), getattr(b.nodes, name)), name
    assert [(j.uid, j.queue, j.min_available, [t.key for t in j.tasks]) for j in a.jobs] == \
           [(j.uid, j.queue, j.min_available, [t.key for t in j.tasks]) for j in b.jobs]
    assert sorted(a.problems) == sorted(b.problems)
    assert set(a.queues) == set(b.queues)
    # The cache also remembers requests of deleted pods (the observed distribution).
    seen = dict(a.workload)
    assert all(seen.get(k, 0) >= n for k, n in b.workload)
    # The cache folds residents with a gpu-index into device_usage and leaves out those that
    # hold no device (the node rows count them); every other resident is listed as in a build.
    gpu_dims = [b.dims.index[n] for n in ("nvidia.com/gpu", "nvidia.com/gpumem", "nvidia.com/gpucores") if n in b.dims.index]
    left_out = {t.key for t in b.residents} - {t.key for t in a.residents}
    for t in b.residents:
        if t.key in left_out:
            holds_gpu = any(t.request_list[d] > 0 for d in gpu_dims)
            assert "volcano.sh/gpu-index" in t.extras.annotations or not holds_gpu, t.key


SHARED = {"nvidia.com/gpumem": "4", "nvidia.com/gpucores": "30"}
P1 = pod("p1", SHARED, group="g1")
P2 = pod("p2", {"nvidia.com/gpu": "1"}, group=None)
P3 = pod("p3", {"cpu": "2"}, group="missing")
SCENARIOS: dict[str, list[tuple[str, dict[str, Any]]]] = {
    "grow-and-bind": [("up", node("n0", 2)), ("up", node("n1", 4)), ("up", podgroup("g1")), ("up", P1),
                      ("up", P2), ("up", running(P1, "n0", "1")), ("up", running(P2, "n1", "2")), ("up", P3)],
    "delete-and-requeue": [("up", node("n0", 2)), ("up", running(P2, "n0", "0")), ("up", podgroup("g1")),
                           ("up", P1), ("del", running(P2, "n0", "0")), ("up", queue("q2", 3)),
                           ("del", podgroup("g1")), ("up", running(P3, "n0"))],
    "cpu-only-resident": [("up", node("n0", 2)), ("up", running(pod("c1", {"cpu": "3"}, group=None), "n0")),
                          ("up", running(P2, "n0"))],
    "node-changes": [("up", node("n0", 2)), ("up", running(P2, "n0", "1")), ("up", node("n1", 2)),
                     ("del", node("n0", 2)), ("up", pod("p4", {"example.com/fpga": "1"}, group=None))],
}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_cache_matches_a_full_build_after_every_event(name: str) -> None:
    cache = SchedulerCache()
    objects: dict[tuple[str, str], dict[str, Any]] = {}
    for op, obj in SCENARIOS[name]:
        key = (obj["kind"], f"{obj['metadata'].get('namespace', '')}/{obj['metadata']['name']}")
        if op == "up":
            cache.upsert(obj)
            objects[key] = obj
        else:
            cache.delete(obj)
            objects.pop(key, None)
        same(cache.snapshot(), build_snapshot(list(objects.values())))


def test_sessions_on_cache_and_full_build_decide_the_same() -> None:
    objs = [node("n0", 2), node("n1", 2), running(P2, "n0", "0"), podgroup("g1"), P1,
            pod("p5", {"nvidia.com/gpu": "2"}, group=None)]
    cache = SchedulerCache()
    for obj in objs:
        cache.upsert(obj)
    a = run_cycle(cache.snapshot(), CONF, FixedClock())
    b = run_cycle(build_snapshot(objs), CONF, FixedClock())
    assert a.bindings == b.bindings and a.device_allocations == b.device_allocations
    assert a.bindings  # something was placed


def test_snapshot_reuses_unchanged_jobs_and_does_not_rebuild() -> None:
    cache = SchedulerCache()
    for obj in (node("n0", 2), podgroup("g1"), P1, P2):
        cache.upsert(obj)
    first = cache.snapshot()
    cache.upsert(pod("p9", {"cpu": "1"}, group=None))
    second = cache.snapshot()
    assert cache.rebuilds == 1
    assert first.jobs[0] is second.jobs[0]  # g1 untouched: the same frozen JobSpec
    assert len(second.jobs) == len(first.jobs) + 1


def test_object_sync_turns_changed_objects_into_events() -> None:
    """The agent's path: the full object list each pass; in-place edits are noticed too."""
    sync = ObjectSync(SchedulerCache())
    objs = [node("n0", 2), podgroup("g1"), P1, copy.deepcopy(P2)]
    same(sync.snapshot(objs), build_snapshot(objs))
    objs[3]["spec"]["nodeName"] = "n0"  # edited in place, as a caller may
    objs[3]["status"]["phase"] = "Running"
    same(sync.snapshot(objs), build_snapshot(objs))
    del objs[1]  # the PodGroup goes away
    same(sync.snapshot(objs), build_snapshot(objs))
    assert sync.cache.rebuilds == 1
