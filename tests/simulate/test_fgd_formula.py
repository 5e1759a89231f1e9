"""The fragmentation measure and its gradient, on the worked example of docs/gpu-packing.md."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from member_agent.scheduler.cycle import run_cycle
from member_agent.scheduler.framework.builder import build_snapshot
from member_agent.scheduler.framework.clock import FixedClock
from member_agent.scheduler.framework.dims import Dimensions
from member_agent.scheduler.plugins.fgd import FgdPlugin, Workload
from policies.scheduler_conf import DEFAULT_CONF, parse_scheduler_conf

DIMS = Dimensions(["nvidia.com/gpu", "nvidia.com/gpucores"])


def request(cpu: float = 1000, gpus: int = 0, cores: float = 0) -> tuple[float, ...]:
    vec = DIMS.vector({"cpu": cpu, "memory": 1.0, "nvidia.com/gpu": gpus * 1000, "nvidia.com/gpucores": cores * 1000})
    return tuple(vec.tolist())


# Half the tasks ask for 0.5 GPU, half for one whole GPU.
EXAMPLE = Workload([(request(cores=50), 1), (request(gpus=1), 1)], DIMS.index)
BIG = np.array([1e9])


@pytest.mark.parametrize(("free", "expected"), [
    ((1.0, 0.3), 0.3),  # F(0.5)=0.3, F(1)=0.3
    ((1.0, 0.1), 0.1),  # after the 0.2 task on GPU 2
    ((0.8, 0.3), 0.7),  # after it on GPU 1: F(0.5)=0.3, F(1)=1.1
    ((1.0, 1.0), 0.0),
    ((0.2, 0.2), 0.4),  # nothing fits: every free part is a fragment
])
def test_expected_fragmentation(free: tuple[float, float], expected: float) -> None:
    got = EXAMPLE.fragmentation(np.array([free]), BIG, BIG)
    assert got[0] == pytest.approx(expected)


def test_cpu_that_does_not_fit_makes_every_gpu_a_fragment() -> None:
    got = EXAMPLE.fragmentation(np.array([(1.0, 1.0)]), np.array([500.0]), BIG)
    assert got[0] == pytest.approx(2.0)


def test_gradient_fills_the_hole_rather_than_breaking_a_whole_gpu() -> None:
    plugin = FgdPlugin({"fgd.weight": 1, "fgd.popularity": "pods", "fgd.binpackWeight": 0, "fgd.tieBreak": "none"})
    plugin.work = EXAMPLE
    u = np.array([(1.0, 0.3)])
    before = EXAMPLE.fragmentation(u, BIG, BIG)
    best, per_gpu = plugin._shared_deltas(u, before, BIG, BIG, 0.2)
    assert per_gpu[0].tolist() == pytest.approx([0.4, -0.2])
    assert best[0] == pytest.approx(-0.2)


def node(name: str, gpus: int) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
            "status": {"allocatable": {"cpu": "32", "memory": "128Gi", "pods": "110", "nvidia.com/gpu": str(gpus),
                                       "nvidia.com/gpucores": str(100 * gpus)}}}


def pod(name: str, requests: dict[str, str], node_name: str | None = None, gpu_index: str = "") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "w", "uid": name,
                            "annotations": {"volcano.sh/gpu-index": gpu_index} if gpu_index else {}}
    spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1", "memory": "1Gi", **requests}}}]}
    if node_name:
        spec["nodeName"] = node_name
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec,
            "status": {"phase": "Running" if node_name else "Pending"}}


CONF = parse_scheduler_conf("""
actions: "enqueue, allocate, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: predicates}, {name: proportion}, {name: deviceshare}, {name: fgd, arguments: {fgd.weight: 10}}]
""")


def test_session_places_a_shared_pod_on_the_partly_used_gpu() -> None:
    """n-a: GPU 1 at 0.7 used (0.3 free); n-b: two idle GPUs. A 0.2 pod goes into the hole."""
    objs = [node("n-a", 2), node("n-b", 2),
            pod("old", {"nvidia.com/gpucores": "70"}, "n-a", "1"),
            pod("old2", {"nvidia.com/gpucores": "50"}, "n-b", "0"),
            pod("new", {"nvidia.com/gpucores": "20"})]
    result = run_cycle(build_snapshot(objs), CONF, FixedClock())
    assert result.bindings == {"w/new": "n-a"}
    assert result.device_allocations["w/new"]["gpus"] == [1]


def test_fgd_is_off_in_volcano_default_conf() -> None:
    assert all(p.name != "fgd" for tier in DEFAULT_CONF.tiers for p in tier.plugins)


def test_unknown_popularity_is_a_warning_and_falls_back_to_pods() -> None:
    conf = parse_scheduler_conf("""
actions: "allocate"
tiers:
- plugins: [{name: deviceshare}, {name: fgd, arguments: {fgd.popularity: tasks}}]
""")
    objs = [node("n-a", 2), pod("new", {"nvidia.com/gpucores": "20"})]
    result = run_cycle(build_snapshot(objs), conf, FixedClock())
    assert any("fgd.popularity 'tasks' is not one of pods, gpus" in w for w in result.warnings)
    assert result.bindings == {"w/new": "n-a"}


def test_gpu_choice_measures_the_node_before_the_pods_own_cpu() -> None:
    """The GPU is chosen after the session took the pod's CPU: a pod taking nearly all the CPU
    left must still go into the hole (GPU 0), not onto the idle GPU by HAMi's order."""
    objs = [node("n-a", 2), pod("old", {"nvidia.com/gpucores": "70"}, "n-a", "0"),
            pod("new", {"cpu": "30", "nvidia.com/gpucores": "20"})]
    result = run_cycle(build_snapshot(objs), CONF, FixedClock())
    assert result.bindings == {"w/new": "n-a"}
    assert result.device_allocations["w/new"]["gpus"] == [0]
