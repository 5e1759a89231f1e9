"""What the scheduler cache and a session's close carry from one event or session to the next (issue 41,
round 10) equals what they replace:

* a job's JobSpec derived again with the last one's fields (``framework/job_versions.py``) equals the
  spec a fresh cache derives from the same objects, over random pod and PodGroup events, and the
  snapshot's queue order kept by the roster equals a walk over its jobs;
* the PodGroups a session's result lists as moved (``CycleResult.moved_pod_groups``) are those of
  ``pod_groups`` outside ``steady_pod_groups``, in its order.
"""

from __future__ import annotations

import copy
import random
from dataclasses import fields
from typing import Any

import numpy as np
from hypothesis import example, given, settings

from member_agent.scheduler.cycle import run_cycle
from member_agent.scheduler.framework import job_versions
from member_agent.scheduler.framework.clock import FixedClock
from member_agent.scheduler.framework.result import CycleResult
from member_agent.scheduler.framework.snapshot import JobSpec
from member_agent.scheduler.scheduler_cache import SchedulerCache
from tests.scheduler.test_cache_increments import _same
from tests.scheduler.test_left_out_ledger import _apply, steps
from tests.scheduler.test_session_reuse import FIFO, _objects, jobs_strategy

Obj = dict[str, Any]
QUEUES = ("q1", "q2", "q3")


def _queue(name: str, weight: int = 1) -> Obj:
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": name},
            "spec": {"weight": weight}, "status": {"state": "Open"}}


def _group(name: str, rng: random.Random) -> Obj:
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "b", "creationTimestamp": f"2024-01-0{rng.randrange(1, 9)}T00:00:00Z"},
            "spec": {"minMember": rng.randrange(1, 3), "queue": rng.choice(QUEUES),
                     "minResources": {"cpu": str(rng.randrange(1, 4)), "memory": "1Gi"}},
            "status": {"phase": "Pending"}}


def _pod(group: str, k: int) -> Obj:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"{group}-{k}", "namespace": "b", "uid": f"u-{group}-{k}",
                         "annotations": {"scheduling.k8s.io/group-name": group, "volcano.sh/task-spec": "worker"}},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]},
            "status": {"phase": "Pending"}}


def _same_job(a: JobSpec, b: JobSpec) -> bool:
    """JobSpecs equal field by field (vectors by value, tasks field by field); ``memo`` aside."""
    for f in fields(JobSpec):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if f.name == "memo":
            continue
        if f.name == "min_resources":
            if (x is None) != (y is None) or (x is not None and not np.array_equal(x, y)):
                return False
        elif f.name == "tasks":
            if len(x) != len(y) or not all(_same(s, t) for s, t in zip(x, y, strict=True)):
                return False
        elif x != y:
            return False
    return list(a.__dict__) == list(b.__dict__)  # the fields in the dataclass's order


def _event(rng: random.Random, objects: dict[str, Obj], cache: SchedulerCache) -> None:
    """One random change, handed to ``cache`` as an informer would (a private copy; a status changed
    in place and the same object handed again now and then)."""
    groups = [k for k, o in objects.items() if o["kind"] == "PodGroup"]
    pods = [k for k, o in objects.items() if o["kind"] == "Pod"]
    kind = rng.choice(["group", "pod", "pod", "bind", "end", "phase", "phase", "in-place", "spec", "note",
                       "queue", "drop-pod", "drop-group", "queue-object", "drop-queue"])
    if kind == "group" or not groups:
        name = f"j{rng.randrange(12)}"
        objects.setdefault(f"pg/{name}", _group(name, rng))
        cache.upsert(copy.deepcopy(objects[f"pg/{name}"]))
        return
    group = objects[rng.choice(groups)]
    name = group["metadata"]["name"]
    if kind == "pod":
        k = rng.randrange(3)
        objects.setdefault(f"pod/{name}-{k}", _pod(name, k))
        cache.upsert(copy.deepcopy(objects[f"pod/{name}-{k}"]))
    elif kind in ("bind", "end", "drop-pod") and pods:
        key = rng.choice(pods)
        pod = objects[key]
        if kind == "drop-pod":
            cache.delete(objects.pop(key))
            return
        if kind == "bind":
            pod["spec"]["nodeName"] = f"n{rng.randrange(4):05d}"
            pod["status"] = {"phase": "Running"}
            pod["metadata"].setdefault("annotations", {})["volcano.sh/gpu-index"] = str(rng.randrange(2))
        else:
            pod["status"] = {"phase": rng.choice(["Succeeded", "Failed"])}
        cache.upsert(copy.deepcopy(pod))
    elif kind == "phase":
        group["status"] = {"phase": rng.choice(["Pending", "Inqueue", "Running"]),
                           "conditions": [{"type": "Scheduled", "status": "True", "transitionID": str(rng.random())}]}
        cache.upsert(copy.deepcopy(group))
    elif kind == "in-place":  # the sender moves a status in place and hands the same object again
        handed = cache._objects["PodGroup"].get(f"b/{name}")
        if handed is not None:
            group["status"] = {"phase": rng.choice(["Inqueue", "Running", "Completed"])}
            handed["status"] = copy.deepcopy(group["status"])
            cache.upsert(handed)
    elif kind == "spec":
        group["spec"]["minMember"] = rng.randrange(1, 4)
        group["spec"]["minResources"] = {"cpu": str(rng.randrange(1, 4)), "memory": "2Gi"}
        cache.upsert(copy.deepcopy(group))
    elif kind == "note":
        group["metadata"]["annotations"] = {"volcano.sh/preemptable": rng.choice(["true", "false"])}
        cache.upsert(copy.deepcopy(group))
    elif kind == "queue":
        group["spec"]["queue"] = rng.choice([*QUEUES, "missing"])  # a queue not in the state: a problem
        cache.upsert(copy.deepcopy(group))
    elif kind == "drop-group":
        cache.delete(objects.pop(f"pg/{name}"))
    elif kind == "drop-queue" and "queue/q3" in objects:  # its jobs' specs go (a problem each) until it is back
        cache.delete(objects.pop("queue/q3"))
    elif kind == "queue-object":  # a Queue changes: the cache's queue table is a new one
        queue = _queue(rng.choice(QUEUES), rng.randrange(1, 4))
        objects[f"queue/{queue['metadata']['name']}"] = queue
        cache.upsert(copy.deepcopy(queue))


def test_job_specs_carried_over_random_events_equal_a_fresh_cache(monkeypatch: Any) -> None:
    carried = []
    again = job_versions.JobHeaders.again

    def counted(self: job_versions.JobHeaders, *args: Any) -> JobSpec | None:
        spec = again(self, *args)
        carried.append(spec is not None)
        return spec

    monkeypatch.setattr(job_versions.JobHeaders, "again", counted)
    rng = random.Random(11)
    objects: dict[str, Obj] = {f"queue/{q}": _queue(q) for q in QUEUES}
    objects.update({f"node/{i}": o for i, o in enumerate(_objects([], node_count=4)) if o["kind"] == "Node"})
    cache = SchedulerCache()
    for obj in objects.values():
        cache.upsert(copy.deepcopy(obj))
    for step in range(600):
        _event(rng, objects, cache)
        if step % 3:
            continue
        kept = cache.snapshot()
        fresh = SchedulerCache()
        for obj in objects.values():
            fresh.upsert(copy.deepcopy(obj))
        expected = fresh.snapshot()
        assert [j.uid for j in kept.jobs] == [j.uid for j in expected.jobs]
        assert all(_same_job(a, b) for a, b in zip(kept.jobs, expected.jobs, strict=True))
        assert kept.problems == expected.problems
        assert kept.queue_order == expected.queue_order == tuple(dict.fromkeys(j.queue for j in kept.jobs))
    assert sum(carried) > 50 and not all(carried)  # both ways were taken


def _walked(result: CycleResult) -> list[str]:
    return [key for key in result.pod_groups if key not in result.steady_pod_groups]


@settings(max_examples=40, deadline=None)
@given(jobs=jobs_strategy, changes=steps)
@example(jobs=[("q1", "Running", 1, ["Running", "Running"]), ("q2", "Inqueue", 1, ["Pending"])],
         changes=[("write", 0), ("write", 1), ("phase", 0)])  # left out unsteady, then steady, then wrapped
def test_the_moved_pod_groups_are_the_ones_outside_the_steady_ones(jobs: list[tuple[str, str, int, list[str]]],
                                                                   changes: list[tuple[str, int]]) -> None:
    objects = _objects(jobs)
    cache = SchedulerCache(resources=("example.com/share",))
    for obj in objects:
        cache.upsert(copy.deepcopy(obj))
    last = None
    for step in [("none", 0), *changes]:
        _apply(step, objects, cache, last)
        last = run_cycle(cache.snapshot(), FIFO, FixedClock())
        assert last.moved_pod_groups() == _walked(last)


def test_moved_pod_groups_from_close_skip_the_steady_ones_and_follow_pod_groups() -> None:
    jobs = [("q1", "Running", 1, ["Running", "Running"]), ("q2", "Inqueue", 1, ["Pending"])]
    objects = _objects(jobs)
    cache = SchedulerCache()
    for obj in objects:
        cache.upsert(copy.deepcopy(obj))
    first = run_cycle(cache.snapshot(), FIFO, FixedClock())
    assert first.moved is None and "b/j0" in _walked(first)  # left out, not steady: closing did not list them
    _apply(("write", 0), objects, cache, first)
    second = run_cycle(cache.snapshot(), FIFO, FixedClock())
    assert second.steady_pod_groups == {"b/j0"} and second.moved == ["b/j1"] == second.moved_pod_groups()
    second.pod_groups["b/extra"] = "Pending"  # changed after close: the list no longer describes it
    assert second.moved_pod_groups() == ["b/j1", "b/extra"]


def test_frozen_accounting_arrays_equal_fresh_copies_and_unwritten_ones_are_handed_on() -> None:
    """Pods of every accounting kind come and go on a table: after each, the frozen table's arrays
    equal copies of the live ones, and an array no pod wrote since the last table is the same copy."""
    from dataclasses import replace as with_fields

    from member_agent.scheduler.framework.status import TaskStatus
    from member_agent.scheduler.node_accounts import ARRAYS, NodeAccounts
    from tests.scheduler.test_cache_increments import DIMS, _builder, _built, _pod

    builder = _builder()
    for i in range(3):
        builder.add({"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"node-{i}"},
                     "status": {"allocatable": {"cpu": "16", "memory": "64Gi", "nvidia.com/gpu": "8", "pods": "110"}}})
    accounts = NodeAccounts(builder.node_table(DIMS))
    base = _built(builder, _pod())
    rng = random.Random(3)
    placed: list[Any] = []
    last = accounts.frozen_table()
    running = {"idle", "used", "pod_count", "nonzero_used"}
    for _ in range(300):
        if placed and rng.random() < 0.4:
            task = placed.pop(rng.randrange(len(placed)))
            accounts.account(task, -1)
        else:
            status = rng.choice([TaskStatus.RUNNING, TaskStatus.PIPELINED, TaskStatus.RELEASING, TaskStatus.BOUND])
            task = with_fields(base, status=status, node=f"node-{rng.randrange(3)}")
            accounts.account(task, 1)
            placed.append(task)
        touched = ({"pipelined"} if task.status == TaskStatus.PIPELINED
                   else running | {"releasing"} if task.status == TaskStatus.RELEASING else running)
        table = accounts.frozen_table()
        assert accounts.frozen_table() is table and table is not last
        for name in ARRAYS:
            np.testing.assert_array_equal(getattr(table, name), accounts.arrays[name])
            assert not getattr(table, name).flags.writeable
            if name not in touched:  # not written: the last copy handed on
                assert getattr(table, name) is getattr(last, name)
        last = table
    assert not accounts.account(with_fields(base, node="elsewhere"), 1)  # a node not in the table


def test_parse_time_remembered_equals_a_fresh_parse_and_raises_each_time() -> None:
    from member_agent.scheduler.framework.object_fields import parse_time
    from policies.k8s.timestamps import epoch_seconds

    rng = random.Random(9)
    for _ in range(200):
        text = f"2023-{rng.randrange(1, 13):02d}-{rng.randrange(1, 29):02d}T{rng.randrange(24):02d}:" \
               f"{rng.randrange(60):02d}:{rng.randrange(60):02d}{rng.choice(['Z', '+02:00', '.5Z'])}"
        assert parse_time(text) == epoch_seconds(text) == parse_time(text)
    for _ in range(2):
        try:
            parse_time("not a time")
        except ValueError:
            continue
        raise AssertionError("an unreadable stamp must raise every time")
