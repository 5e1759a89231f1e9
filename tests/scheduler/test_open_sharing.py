"""What a session's opening computes once and shares, or keeps across sessions, must equal what
each plugin computed on its own:

* the per-queue sums (plugins/queue_usage.py) computed once while plugins open
  (``Session.open_memo``) serve overcommit (``full_min_for_inqueue``) and proportion (without),
  in either order, with the walk's floats and arrays of their own;
* proportion's guarantee and capability vectors kept in a Queue's spec memo follow the Queue and
  the cache's resource dimensions (a session over the cache equals one over a fresh snapshot).
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from member_agent.scheduler.cycle import open_session, run_cycle
from member_agent.scheduler.framework.builder import build_snapshot
from member_agent.scheduler.framework.clock import FixedClock
from member_agent.scheduler.plugins.queue_usage import queue_usage
from member_agent.scheduler.scheduler_cache import SchedulerCache
from tests.scheduler.test_node_search_bound import CONF
from tests.scheduler.test_session_reuse import FIFO, _objects, _walked_usage, jobs_strategy

FIELDS = ("allocated", "request", "inqueue", "elastic")


def _assert_usage(got: dict[str, Any], expected: dict[str, Any]) -> None:
    assert list(got) == list(expected)
    for queue, usage in expected.items():
        for field in FIELDS:
            np.testing.assert_array_equal(getattr(got[queue], field), getattr(usage, field), err_msg=f"{queue}.{field}")


@settings(max_examples=60, deadline=None)
@given(jobs=jobs_strategy, full_first=st.booleans(), fraction=st.booleans())
def test_sums_shared_while_plugins_open_equal_a_walk_under_either_flag(jobs: list[tuple[str, str, int, list[str]]],
                                                                       full_first: bool, fraction: bool) -> None:
    objects = _objects(jobs)
    if fraction:  # a fractional request: no whole-number sums, nothing shared
        for pod in [o for o in objects if o["kind"] == "Pod"][:1]:
            pod["spec"]["containers"][0]["resources"]["requests"]["example.com/share"] = "0.3"
    snapshot = build_snapshot(objects)
    for conf in (FIFO, CONF):  # FIFO leaves running gangs out (the carried sums); CONF too, with overcommit
        ssn = open_session(snapshot, conf, FixedClock())
        ssn.open_memo.clear()  # as while plugins open: the first call below fills it, the second reads it
        flags = (True, False) if full_first else (False, True)
        first = queue_usage(ssn, full_min_for_inqueue=flags[0])
        second = queue_usage(ssn, full_min_for_inqueue=flags[1])
        _assert_usage(first, _walked_usage(ssn, flags[0]))
        _assert_usage(second, _walked_usage(ssn, flags[1]))
        for queue in first:  # each caller owns its arrays (proportion adds to ``allocated`` in place)
            for field in FIELDS:
                assert not np.shares_memory(getattr(first[queue], field), getattr(second[queue], field))
        ssn.dispose()


def _queue(name: str, capability: dict[str, str] | None, guarantee: dict[str, str] | None, weight: int) -> dict[str, Any]:
    spec: dict[str, Any] = {"weight": weight}
    if capability:
        spec["capability"] = capability
    if guarantee:
        spec["guarantee"] = {"resource": guarantee}
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": name},
            "spec": spec, "status": {"state": "Open"}}


amounts = st.sampled_from([None, {"cpu": "2"}, {"cpu": "3", "memory": "4Gi"}, {"example.com/fpga": "1"}])
queue_changes = st.lists(st.tuples(st.sampled_from(["q1", "q2"]), amounts, amounts, st.integers(1, 3),
                                   st.booleans()), min_size=1, max_size=5)


def _proportion_view(snapshot: Any) -> dict[str, tuple[Any, ...]]:
    ssn = open_session(snapshot, FIFO, FixedClock())
    try:
        return {name: (a.weight, a.capability.tolist(), a.guarantee.tolist(), a.real_capability.tolist(),
                       a.deserved.tolist(), a.share) for name, a in ssn.plugins["proportion"].attrs.items()}
    finally:
        ssn.dispose()


@settings(max_examples=40, deadline=None)
@given(changes=queue_changes)
def test_queue_vectors_kept_on_the_spec_follow_the_queue_and_the_dimensions(
        changes: list[tuple[str, Any, Any, int, bool]]) -> None:
    """Each step rewrites a Queue (capability, guarantee, weight) and may add a node with a new
    resource (the cache's dimensions change); every session over the cache's snapshot opens
    proportion as one over a snapshot built afresh, and decides the same."""
    objects = _objects([("q1", "Inqueue", 1, ["Pending", "Pending"]), ("q2", "Running", 1, ["Running"]),
                        ("q2", "Inqueue", 2, ["Pending", "Pending"])])
    cache = SchedulerCache()
    for obj in objects:
        cache.upsert(copy.deepcopy(obj))
    assert _proportion_view(cache.snapshot()) == _proportion_view(build_snapshot(copy.deepcopy(objects)))
    for step, (name, capability, guarantee, weight, new_node) in enumerate(changes):
        queue = _queue(name, capability, guarantee, weight)
        objects = [o for o in objects if not (o["kind"] == "Queue" and o["metadata"]["name"] == name)] + [queue]
        cache.upsert(copy.deepcopy(queue))
        if new_node:
            node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"extra-{step}"},
                    "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110",
                                               ("example.com/fpga" if step % 2 else f"example.com/r{step}"): "2"}}}
            objects.append(node)
            cache.upsert(copy.deepcopy(node))
        snapshot = cache.snapshot()
        fresh = build_snapshot(copy.deepcopy(objects))
        assert snapshot.dims.names == fresh.dims.names
        assert _proportion_view(snapshot) == _proportion_view(fresh)
        assert run_cycle(snapshot, FIFO, FixedClock()) == run_cycle(fresh, FIFO, FixedClock())


def test_a_queue_spec_read_under_other_dimensions_gets_vectors_of_those() -> None:
    """A snapshot rebuilt with more resources may carry the same QueueSpec object."""
    from member_agent.scheduler.framework.dims import Dimensions
    from member_agent.scheduler.plugins.proportion_opening import queue_vectors

    spec = build_snapshot([_queue("q", {"cpu": "2", "example.com/fpga": "1"}, {"cpu": "1"}, 1)]).queues["q"]
    narrow, wide = Dimensions(), Dimensions(["example.com/fpga"])
    assert [v.tolist() for v in queue_vectors(narrow, spec)] == [[1000.0, 0.0, 0.0], [2000.0, np.inf, np.inf]]
    guarantee, capability = queue_vectors(wide, spec)
    assert guarantee.tolist() == [1000.0, 0.0, 0.0, 0.0] and capability.tolist() == [2000.0, np.inf, np.inf, 1000.0]
    assert queue_vectors(wide, spec)[1] is capability and not capability.flags.writeable


@settings(max_examples=40, deadline=None)
@given(jobs=jobs_strategy, full_min=st.booleans())
def test_the_total_inqueue_is_the_queues_inqueue_added_in_order(jobs: list[tuple[str, str, int, list[str]]],
                                                                full_min: bool) -> None:
    from member_agent.scheduler.plugins.queue_usage import total_inqueue

    snapshot = build_snapshot(_objects(jobs))
    for conf in (FIFO, CONF):
        ssn = open_session(snapshot, conf, FixedClock())
        expected = ssn.dims.zeros()
        for usage in _walked_usage(ssn, full_min).values():
            expected += usage.inqueue
        assert total_inqueue(ssn, full_min_for_inqueue=full_min).tolist() == expected.tolist()
        ssn.dispose()


def test_whether_nodes_list_images_follows_the_nodes_of_the_cache() -> None:
    """Read once per node layout (``NodeTable.lists_images``), shared by the cache's snapshots."""
    cache = SchedulerCache()
    plain = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "a"},
             "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}
    cache.upsert(copy.deepcopy(plain))
    assert cache.snapshot().nodes.lists_images is False
    listed = copy.deepcopy(plain)
    listed["metadata"]["name"] = "b"
    listed["status"]["images"] = [{"names": ["repo/app:1"], "sizeBytes": 300 * 1024 * 1024}]
    cache.upsert(listed)
    assert cache.snapshot().nodes.lists_images is True and cache.snapshot().nodes.lists_images is True
    cache.delete(listed)
    assert cache.snapshot().nodes.lists_images is False
