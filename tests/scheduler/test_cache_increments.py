"""What the scheduler cache keeps from one event to the next (issue 41, round 9) equals what it replaces:

* a pod's TaskSpec carried from its previous version (``framework/pod_versions.py``) equals the one the
  builder makes from the new version, and is not carried when more than the status, the node, the
  annotations or the resourceVersion moved;
* the snapshot's job tuple, kept as a list beside the sorted job keys, equals the specs in key order
  as jobs come, change and go.
"""

from __future__ import annotations

import copy
import random
from dataclasses import fields
from typing import Any, Callable

import numpy as np
import pytest

from member_agent.pod_writes import with_placement
from member_agent.scheduler.framework.builder import _Builder
from member_agent.scheduler.framework.dims import Dimensions
from member_agent.scheduler.framework.pod_requests import pod_request
from member_agent.scheduler.framework.pod_versions import task_again
from member_agent.scheduler.scheduler_cache import SchedulerCache

Obj = dict[str, Any]


def _pod() -> Obj:
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "job-a-worker-0", "namespace": "sim", "uid": "u-1", "resourceVersion": "4",
                     "creationTimestamp": "2023-11-14T22:13:20+00:00", "labels": {"volcano.sh/task-spec": "worker"},
                     "annotations": {"scheduling.k8s.io/group-name": "job-a", "volcano.sh/task-spec": "worker"}},
        "spec": {"schedulerName": "volcano", "priorityClassName": "high", "nodeSelector": {"pool": "a"},
                 "containers": [{"name": "main", "image": "trainer:1",
                                 "resources": {"requests": {"cpu": "2", "memory": "4Gi", "nvidia.com/gpu": "1"}}}]},
        "status": {"phase": "Pending"},
    }


def _builder() -> _Builder:
    builder = _Builder("default", ("volcano",))
    builder.add({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"}, "value": 7})
    return builder


DIMS = Dimensions({"cpu", "memory", "nvidia.com/gpu"})


def _built(builder: _Builder, pod: Obj) -> Any:
    request, nz = pod_request(pod["spec"])
    return builder.task(pod, DIMS, request, nz)


def _same(a: Any, b: Any) -> bool:
    """TaskSpecs equal field by field (the request vector by value), ``key`` included."""
    return all(np.array_equal(getattr(a, f.name), getattr(b, f.name)) if f.name == "request"
               else getattr(a, f.name) == getattr(b, f.name) for f in fields(a))


def _bound(pod: Obj) -> Obj:
    out = with_placement(pod, "node-3", {"volcano.sh/gpu-index": "0", "volcano.sh/task-priority": "9",
                                         "volcano.sh/preemptable": "false"})
    out["status"] = {"phase": "Running", "nominatedNodeName": "node-3"}
    out["metadata"] = dict(out["metadata"], resourceVersion="5")
    return out


def _ended(pod: Obj) -> Obj:
    out = copy.deepcopy(pod)
    out["status"] = {"phase": "Succeeded"}
    out["metadata"]["resourceVersion"] = "6"
    return out


def _annotated_group(pod: Obj) -> Obj:
    out = copy.deepcopy(pod)
    out["metadata"]["annotations"]["scheduling.k8s.io/group-name"] = "job-b"
    out["metadata"]["annotations"]["volcano.sh/numa-topology-policy"] = "best-effort"
    return out


@pytest.mark.parametrize("move", [_bound, _ended, lambda p: _ended(_bound(p)), _annotated_group])
def test_a_carried_taskspec_equals_the_built_one(move: Callable[[Obj], Obj]) -> None:
    builder = _builder()
    old = _pod()
    new = move(old)
    carried = task_again(builder, old, _built(builder, old), new)
    assert carried is not None
    fresh = _built(builder, new)
    assert _same(carried, fresh)
    if move is _annotated_group:  # the annotation-read fields did move: the job and the shape (numa policy)
        before = _built(builder, old)
        assert carried.job != before.job and carried.shape != before.shape


def _selector(pod: Obj) -> Obj:
    out = copy.deepcopy(pod)
    out["spec"]["nodeSelector"] = {"pool": "b"}
    return out


def _request(pod: Obj) -> Obj:
    out = copy.deepcopy(pod)
    out["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "3"
    return out


def _labels(pod: Obj) -> Obj:
    out = copy.deepcopy(pod)
    out["metadata"]["labels"]["volcano.sh/preemptable"] = "false"
    return out


def _deleting(pod: Obj) -> Obj:
    out = copy.deepcopy(pod)
    out["metadata"]["deletionTimestamp"] = "2023-11-14T22:20:00+00:00"
    return out


@pytest.mark.parametrize("move", [_selector, _request, _labels, _deleting])
def test_not_carried_when_more_moved(move: Callable[[Obj], Obj]) -> None:
    builder = _builder()
    old = _pod()
    assert task_again(builder, old, _built(builder, old), move(old)) is None


def test_the_cache_over_pod_versions_equals_a_fresh_cache() -> None:
    """Create, bind and end a pod through one cache; a cache given only the last version agrees."""
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-3", "labels": {"pool": "a"}},
            "status": {"allocatable": {"cpu": "16", "memory": "64Gi", "nvidia.com/gpu": "8", "pods": "110"}}}
    group = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup", "metadata": {"name": "job-a", "namespace": "sim"},
             "spec": {"minMember": 1, "queue": "default"}}
    for versions in ([_pod()], [_pod(), _bound(_pod())], [_pod(), _bound(_pod()), _ended(_bound(_pod()))]):
        kept = SchedulerCache()
        for obj in (node, group, *versions):
            kept.upsert(copy.deepcopy(obj))
        kept.snapshot()
        fresh = SchedulerCache()
        for obj in (node, group, versions[-1]):
            fresh.upsert(copy.deepcopy(obj))
        a, b = kept.snapshot(), fresh.snapshot()
        assert [t.uid for s in a.jobs for t in s.tasks] == [t.uid for s in b.jobs for t in s.tasks] != []
        assert all(_same(x, y) for s, t in zip(a.jobs, b.jobs, strict=True) for x, y in zip(s.tasks, t.tasks, strict=True))
        assert (a.nodes.used == b.nodes.used).all() and (a.nodes.idle == b.nodes.idle).all()


def _group(name: str, queue: str, min_member: int) -> Obj:
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "sim"}, "spec": {"minMember": min_member, "queue": queue}}


def test_the_job_tuple_follows_jobs_that_come_change_and_go() -> None:
    rng = random.Random(7)
    cache = SchedulerCache()
    for queue in ("q1", "q2"):
        cache.upsert({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": queue},
                      "spec": {"weight": 1}})
    live: dict[str, Obj] = {}
    for step in range(300):
        name = f"job-{rng.randrange(40):02d}"
        if name in live and rng.random() < 0.4:
            cache.delete(live.pop(name))
        else:
            live[name] = _group(name, rng.choice(["q1", "q2", "default"]), rng.randrange(1, 4))
            cache.upsert(copy.deepcopy(live[name]))
        if step % 3 == 0:
            jobs = cache.snapshot().jobs
            assert [j.uid for j in jobs] == sorted(f"sim/{n}" for n in live)
            assert [j.min_available for j in jobs] == [live[n]["spec"]["minMember"] for n in sorted(live)]


def test_node_index_statics_follow_the_label_and_taint_tuples() -> None:
    """Label columns and taint groups are shared by indexes over tables with the same label and taint
    tuples (the cache's snapshots until a Node changes), equal to a fresh index's, and not shared when
    the tuples are others (an index over another table)."""
    from dataclasses import replace as with_fields

    from member_agent.scheduler.framework import node_index as ni
    from member_agent.scheduler.framework.snapshot import Taint

    builder = _builder()
    for i, pool in enumerate(["a", "b", "a", "c"]):
        builder.add({"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{i}", "labels": {"pool": pool}},
                     "spec": {"taints": [{"key": "gpu", "value": "yes", "effect": "NoSchedule"}] if i % 2 else []},
                     "status": {"allocatable": {"cpu": "8", "memory": "8Gi"}}})
    table = builder.node_table(DIMS)
    first = ni.NodeIndex(table)
    assert first.label_equals("pool", "a").tolist() == [True, False, True, False]
    assert [rows.tolist() for _t, rows in first.taint_groups()] == [[1, 3]]
    copied = with_fields(table, idle=table.idle.copy())  # a later snapshot: new arrays, the same tuples
    second = ni.NodeIndex(copied)
    assert second.column("pool")[0] is first.column("pool")[0]
    assert second.taint_groups() is first.taint_groups()
    relabelled = with_fields(table, labels=tuple({"pool": "z"} for _ in table.labels),
                             taints=tuple(() if i else (Taint("x", "y", "NoSchedule"),) for i in range(len(table))))
    third = ni.NodeIndex(relabelled)
    assert third.label_equals("pool", "a").tolist() == [False] * 4
    assert [rows.tolist() for _t, rows in third.taint_groups()] == [[0]]
    with pytest.raises(ValueError):
        third.column("pool")[0][0] = 1  # shared arrays are read-only

