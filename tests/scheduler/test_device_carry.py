"""deviceshare's ledger with the left-out jobs' GPUs carried across sessions (plugins/device_carry.py):
a session that starts from the carried tally decides as one that wraps and replays every job, and
the tally kept across a cache's snapshots equals one filled afresh."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from member_agent.scheduler.cycle import open_session, run_cycle
from member_agent.scheduler.framework.builder import build_snapshot
from member_agent.scheduler.framework.clock import FixedClock
from member_agent.scheduler.framework.left_out import QuiescentLedger
from member_agent.scheduler.plugins.device_carry import TALLY_KEY, CarriedDevices
from member_agent.scheduler.plugins.device_ledger import ledger_for
from member_agent.scheduler.scheduler_cache import SchedulerCache
from policies.scheduler_conf import parse_scheduler_conf
from tests.scheduler.test_session_reuse import _cycle_without_quiescent, end_oldest_and_write_back

#: Volcano's default conf plus deviceshare (examples/scheduler-conf/volcano-default.conf)
CONF = parse_scheduler_conf("""
actions: "enqueue, allocate, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: overcommit}, {name: drf}, {name: predicates}, {name: proportion}, {name: nodeorder},
            {name: deviceshare, arguments: {deviceshare.GPUSharingEnable: true}}]
""")
NODES = 3
#: a pod's GPU request: whole GPUs, or a share of one (whole or fractional GB of memory)
REQUESTS = ({"nvidia.com/gpu": "1"}, {"nvidia.com/gpu": "2"},
            {"nvidia.com/gpumem": "4", "nvidia.com/gpucores": "25"}, {"nvidia.com/gpumem": "2.5"}, {})


def _objects(jobs: list[tuple[int, int, list[str]]]) -> list[dict[str, Any]]:
    """Per job (request kind, minMember, pods as "Pending" / "Running:<gpu-index>" / "Running")."""
    objects: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{i}"},
         "status": {"allocatable": {"cpu": "16", "memory": "64Gi", "pods": "110", "nvidia.com/gpu": "4",
                                    "nvidia.com/gpumem": "64", "nvidia.com/gpucores": "400"}}} for i in range(NODES)]
    objects.append({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "q"},
                    "spec": {"weight": 1}, "status": {"state": "Open"}})
    for j, (kind, min_member, pods) in enumerate(jobs):
        running = all(p.startswith("Running") for p in pods) and pods
        objects.append({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                        "metadata": {"name": f"j{j}", "namespace": "b"},
                        "spec": {"minMember": min_member, "queue": "q"},
                        "status": {"phase": "Running" if running else "Inqueue"}})
        for k, state in enumerate(pods):
            phase, _, index = state.partition(":")
            annotations = {"scheduling.k8s.io/group-name": f"j{j}"}
            if index:
                annotations["volcano.sh/gpu-index"] = index
            objects.append({"apiVersion": "v1", "kind": "Pod",
                            "metadata": {"name": f"j{j}-{k}", "namespace": "b", "annotations": annotations},
                            "spec": {"containers": [{"name": "c", "resources": {"requests": {
                                "cpu": "1", "memory": "1Gi", **REQUESTS[kind % len(REQUESTS)]}}}],
                                **({"nodeName": f"n{(j + k) % NODES}"} if phase == "Running" else {})},
                            "status": {"phase": phase}})
    return objects


pod_states = st.sampled_from(["Pending", "Running:0", "Running:1", "Running:2,3", "Running", "Running:9", "Running:x"])
jobs_strategy = st.lists(st.tuples(st.integers(0, 4), st.integers(1, 2), st.lists(pod_states, min_size=1, max_size=3)),
                         min_size=1, max_size=6)


def _carried(snapshot: Any) -> CarriedDevices | None:
    ssn = open_session(snapshot, CONF, FixedClock())
    try:
        return ledger_for(ssn).carried
    finally:
        ssn.dispose()


@settings(max_examples=25, deadline=None)
@given(jobs=jobs_strategy)
@example(jobs=[(0, 1, ["Running:0"]), (1, 1, ["Running:2,3"]), (0, 1, ["Pending"])])  # carried
@example(jobs=[(0, 1, ["Running:0"]), (1, 1, ["Running:0,1", "Running:0,1"]), (1, 1, ["Pending"])])  # placed beside them
@example(jobs=[(0, 1, ["Running:0"]), (0, 1, ["Running"]), (0, 1, ["Pending"])])  # a left-out pod not carried
@example(jobs=[(0, 1, ["Running:0"]), (0, 3, ["Pending", "Pending", "Running:9"])])  # a wrapped pod's index is out of range
@example(jobs=[(2, 1, ["Running:0"]), (3, 1, ["Running:1"]), (2, 1, ["Pending", "Pending"])])  # shared GPUs
def test_sessions_with_carried_gpus_decide_as_sessions_that_replay_every_pod(
        jobs: list[tuple[int, int, list[str]]]) -> None:
    """The replay's loop over the incremental cache: bindings become Running pods with the
    session's ``volcano.sh/gpu-index``, a pod ends each round; every session must decide what a
    session wrapping every job, over a snapshot built afresh, decides."""
    objects = _objects(jobs)
    cache = SchedulerCache()
    for obj in objects:
        cache.upsert(copy.deepcopy(obj))
    pods = {f"b/{o['metadata']['name']}": o for o in objects if o["kind"] == "Pod"}
    for _ in range(4):
        snapshot = cache.snapshot()
        result = run_cycle(snapshot, CONF, FixedClock())
        assert result == _cycle_without_quiescent(build_snapshot(copy.deepcopy(objects)), CONF)
        _check_tally(snapshot)
        end_oldest_and_write_back(cache, objects, pods, result)


def _check_tally(snapshot: Any) -> None:
    """The tally the cache's ledger kept equals one filled from this snapshot's left-out jobs."""
    kept = snapshot.ledger._tallies.get(TALLY_KEY)
    if kept is None:
        return
    fresh_ledger = QuiescentLedger()
    fresh_ledger.update(snapshot)
    nodes = snapshot.nodes
    fresh = fresh_ledger.tally(TALLY_KEY, lambda: CarriedDevices(nodes.topology, nodes.index, snapshot.dims.index))
    assert isinstance(fresh, CarriedDevices)
    for name in ("holders", "exclusive", "memory_used", "cores_used", "pods"):
        np.testing.assert_array_equal(getattr(kept, name), getattr(fresh, name), err_msg=name)
    assert kept.uncarried == fresh.uncarried and kept.held == fresh.held


def test_the_carried_start_is_taken_when_every_left_out_pod_names_its_gpus() -> None:
    """Not a fallback in disguise: the ledger starts from the tally, and its rows show the left-out GPUs."""
    snapshot = build_snapshot(_objects([(0, 1, ["Running:0"]), (1, 1, ["Running:2,3"]), (0, 1, ["Pending"])]))
    ssn = open_session(snapshot, CONF, FixedClock())
    ledger = ledger_for(ssn)
    assert set(ssn.jobs) == {"b/j2"} and ledger.carried is not None
    assert ledger.carried.pods.tolist() == [1, 1, 0]
    first, second = ledger.node(0), ledger.node(1)
    assert first is not None and second is not None
    assert first.holders == [1, 0, 0, 0] and first.exclusive == [True, False, False, False]
    assert second.holders == [0, 0, 1, 1]
    assert ledger.matrix().holders[:2].tolist() == [[1, 0, 0, 0], [0, 0, 1, 1]]
    ssn.dispose()


def test_a_left_out_pod_without_its_gpus_or_a_fraction_makes_the_session_replay_every_pod() -> None:
    """So does a wrapped pod on a node with carried pods whose replay would not commute with theirs."""
    for jobs in ([(0, 1, ["Running:0"]), (0, 1, ["Running"]), (0, 1, ["Pending"])],  # no gpu-index: placed greedily
                 [(3, 1, ["Running:0"]), (0, 1, ["Pending"])],  # 2.5 GB of a GPU: a fractional sum
                 [(0, 1, ["Running:0"]), (0, 3, ["Pending", "Pending", "Running:x"])],  # on n0 too, a wrapped
                 [(0, 1, ["Running:0"]), (3, 3, ["Pending", "Pending", "Running:1"])]):  # pod: no index, a fraction
        snapshot = build_snapshot(_objects(jobs))
        assert _carried(snapshot) is None
        assert run_cycle(snapshot, CONF, FixedClock()) == _cycle_without_quiescent(snapshot, CONF)
