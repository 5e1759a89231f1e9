"""Regression tests for the two deviceshare bugs of issue 12.

* The device ledger must not keep its session alive: after many sessions on the same state
  the number of live ``Session`` objects stays bounded (counted with weak references).
* Every pod that holds GPUs counts on its node, whatever its PodGroup: a Running pod
  without a PodGroup holding whole GPUs, and shared pods, never push a GPU above 100 % of
  its memory or cores, after any sequence of sessions (property-tested, fixed seed).
"""

from __future__ import annotations

import gc
import weakref
from typing import Any

from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st
from sim_objects import CONF, node, pod, podgroup

from member_agent.scheduler.cycle import run_cycle
from member_agent.scheduler.framework import session as session_module
from member_agent.scheduler.framework.builder import build_snapshot
from member_agent.scheduler.framework.clock import FixedClock


def live_sessions() -> int:
    gc.collect()
    return sum(1 for ref in SEEN if ref() is not None)


SEEN: list[weakref.ref[Any]] = []


def test_sessions_with_deviceshare_are_freed(monkeypatch: Any) -> None:
    original = session_module.Session.__init__

    def tracking(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        SEEN.append(weakref.ref(self))

    monkeypatch.setattr(session_module.Session, "__init__", tracking)
    objs = [node(f"n{i}", 4) for i in range(8)]
    objs += [podgroup(f"g{i}") for i in range(8)]
    objs += [pod(f"p{i}", {"nvidia.com/gpumem": "4", "nvidia.com/gpucores": "25"}, group=f"g{i}") for i in range(8)]
    snapshot = build_snapshot(objs)
    SEEN.clear()
    for _ in range(30):
        run_cycle(snapshot, CONF, FixedClock())
    assert len(SEEN) == 30
    assert live_sessions() <= 1


def test_running_pod_without_podgroup_holds_its_gpus() -> None:
    """The issue's case: 2 GPUs, a group-less Running pod on both, three shared pods."""
    objs = [node("n0", 2), pod("holder", {"nvidia.com/gpu": "2"}, group=None, node_name="n0", phase="Running",
                                   gpu_index="0,1")]
    for i in range(3):
        objs += [podgroup(f"g{i}"), pod(f"s{i}", {"nvidia.com/gpumem": "2", "nvidia.com/gpucores": "10"}, group=f"g{i}")]
    result = run_cycle(build_snapshot(objs), CONF, FixedClock())
    assert result.bindings == {}
    assert result.device_allocations == {}


def gpu_use(objs: list[dict[str, Any]], gpus_per_node: dict[str, int]) -> dict[tuple[str, int], list[float]]:
    """(node, gpu) -> [memory GB, cores %, exclusive holders, shared holders] from the pods' annotations."""
    use: dict[tuple[str, int], list[float]] = {}
    for obj in objs:
        if obj["kind"] != "Pod" or not obj["spec"].get("nodeName"):
            continue
        index = obj["metadata"]["annotations"].get("volcano.sh/gpu-index")
        if not index:
            continue
        req = obj["spec"]["containers"][0]["resources"]["requests"]
        for g in (int(x) for x in index.split(",")):
            assert g < gpus_per_node[obj["spec"]["nodeName"]]
            slot = use.setdefault((obj["spec"]["nodeName"], g), [0.0, 0.0, 0, 0])
            if "nvidia.com/gpumem" in req:
                slot[0] += float(req["nvidia.com/gpumem"])
                slot[1] += float(req["nvidia.com/gpucores"])
                slot[3] += 1
            else:
                slot[2] += 1
    return use


REQUEST = st.one_of(
    st.tuples(st.just("whole"), st.integers(1, 4)),
    st.tuples(st.just("shared"), st.integers(1, 16), st.integers(0, 100)),
)
STEP = st.tuples(st.lists(REQUEST, min_size=1, max_size=6), st.booleans())


@seed(12)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(STEP, min_size=1, max_size=5))
def test_no_gpu_ever_over_capacity(steps: list[tuple[list[tuple[Any, ...]], bool]]) -> None:
    gpus = {"n0": 2, "n1": 4}
    objs: list[dict[str, Any]] = [node(n, g) for n, g in gpus.items()]
    serial = 0
    for arrivals, with_group in steps:
        for req in arrivals:
            serial += 1
            name = f"p{serial}"
            requests = ({"nvidia.com/gpu": str(req[1])} if req[0] == "whole" else
                        {"nvidia.com/gpumem": str(req[1]), "nvidia.com/gpucores": str(req[2])})
            objs.append(pod(name, requests, group=name if with_group else None))
            if with_group:
                objs.append(podgroup(name))
        result = run_cycle(build_snapshot(objs), CONF, FixedClock())
        for obj in objs:
            key = f"w/{obj['metadata']['name']}"
            if obj["kind"] == "Pod" and key in result.bindings:
                obj["spec"]["nodeName"] = result.bindings[key]
                obj["status"]["phase"] = "Running"
                devices = result.device_allocations.get(key, {}).get("gpus")
                if devices:
                    obj["metadata"]["annotations"]["volcano.sh/gpu-index"] = ",".join(map(str, devices))
                # Once running, drop the PodGroup from half of the pods: they must still count.
                if serial % 2 == 0:
                    obj["metadata"]["annotations"].pop("scheduling.k8s.io/group-name", None)
        for (name, g), (memory, cores, exclusive, shared) in gpu_use(objs, gpus).items():
            assert memory <= 16 + 1e-9, (name, g, memory)
            assert cores <= 100 + 1e-9, (name, g, cores)
            assert exclusive <= 1 and not (exclusive and shared), (name, g, exclusive, shared)
