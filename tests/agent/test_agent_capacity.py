"""The capacity estimator against brute-force placement, and the Cluster status summary."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from policies.capacity import NodeState, PodShape
from policies.capacity_summary import cluster_status
from policies.cluster_layout import parse_cluster_text, pool_nodes

RESOURCES = ("cpu", "memory", "nvidia.com/gpu")


def node(name: str, cpu: int, mem_gi: int, gpu: int, pods: int, labels: dict | None = None,
         taints: list | None = None, ready: bool = True) -> dict:
    allocatable = {"cpu": str(cpu), "memory": f"{mem_gi}Gi", "pods": str(pods)}
    if gpu:
        allocatable["nvidia.com/gpu"] = str(gpu)
    return {
        "kind": "Node", "metadata": {"name": name, "labels": labels or {}},
        "spec": {"taints": taints or []},
        "status": {"allocatable": allocatable,
                   "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    }


def pod(name: str, node_name: str | None, cpu: int, mem_gi: int, gpu: int = 0, phase: str = "Running") -> dict:
    requests = {"cpu": str(cpu), "memory": f"{mem_gi}Gi"}
    if gpu:
        requests["nvidia.com/gpu"] = str(gpu)
    spec: dict = {"containers": [{"name": "c", "resources": {"requests": requests}}]}
    if node_name:
        spec["nodeName"] = node_name
    return {"kind": "Pod", "metadata": {"name": name, "namespace": "ns", "uid": name}, "spec": spec,
            "status": {"phase": phase}}


def shape(cpu: int, mem_gi: int, gpu: int = 0, **kw) -> PodShape:
    requests = {"cpu": str(cpu), "memory": f"{mem_gi}Gi"}
    if gpu:
        requests["nvidia.com/gpu"] = str(gpu)
    return PodShape.from_pod_spec({"containers": [{"name": "c", "resources": {"requests": requests}}], **kw})


# ------------------------------------------------------------------ brute force


def _fits(free: dict[str, float], request: dict[str, float]) -> bool:
    return all(free.get(k, 0.0) + 0.1 >= v for k, v in request.items() if v > 0)


def brute_free(state: NodeState) -> list[dict[str, float]]:
    return [{c: float(state.free[i, j]) for j, c in enumerate(state.columns)} for i in range(len(state.names))]


def brute_sets(state: NodeState, components: list[tuple[PodShape, int]]) -> int:
    """One replica at a time on the first matching node that still has room."""
    free = brute_free(state)
    masks = [state.matching(s) for s, _ in components]
    sets = 0
    while sets < 10_000:
        for (s, replicas), mask in zip(components, masks, strict=True):
            request = dict(s.request)
            for _ in range(replicas):
                for i, room in enumerate(free):
                    if mask[i] and _fits(room, request):
                        for k, v in request.items():
                            room[k] = room.get(k, 0.0) - v
                        break
                else:
                    return sets
        sets += 1
    return sets


node_strategy = st.builds(
    lambda cpu, mem, gpu, pods, ready, zone: (cpu, mem, gpu, pods, ready, zone),
    st.integers(0, 16), st.integers(0, 64), st.sampled_from([0, 0, 4, 8]), st.integers(1, 12),
    st.booleans(), st.sampled_from(["a", "b"]),
)
shape_strategy = st.tuples(st.integers(0, 6), st.integers(0, 16), st.sampled_from([0, 0, 1, 2, 4]),
                           st.sampled_from([None, "a", "b"]))


def build_state(node_specs, existing) -> NodeState:
    nodes = [node(f"n{i}", c, m, g, p, {"zone": z}, ready=r) for i, (c, m, g, p, r, z) in enumerate(node_specs)]
    pods = []
    for j, (target, cpu, mem) in enumerate(existing):
        pods.append(pod(f"p{j}", f"n{target % len(nodes)}", cpu, mem))
    return NodeState(nodes, pods)


def to_shape(spec) -> PodShape:
    cpu, mem, gpu, zone = spec
    return shape(cpu, mem, gpu, **({"nodeSelector": {"zone": zone}} if zone else {}))


@settings(max_examples=150, deadline=None)
@given(st.lists(node_strategy, min_size=1, max_size=6),
       st.lists(st.tuples(st.integers(0, 5), st.integers(0, 4), st.integers(0, 8)), max_size=5),
       shape_strategy)
def test_max_replicas_equals_brute_force(node_specs, existing, spec) -> None:
    state = build_state(node_specs, existing)
    s = to_shape(spec)
    assert state.max_replicas(s) == brute_sets(state, [(s, 1)])


@settings(max_examples=150, deadline=None)
@given(st.lists(node_strategy, min_size=1, max_size=6),
       st.lists(st.tuples(st.integers(0, 5), st.integers(0, 4), st.integers(0, 8)), max_size=4),
       st.lists(st.tuples(shape_strategy, st.integers(1, 4)), min_size=1, max_size=3))
def test_component_sets_equal_brute_force(node_specs, existing, components) -> None:
    state = build_state(node_specs, existing)
    comps = [(to_shape(spec), replicas) for spec, replicas in components]
    assert state.max_component_sets(comps) == brute_sets(state, comps)


# ------------------------------------------------------------------ filters, table-driven

FILTER_CASES = [
    # (node kwargs, shape kwargs, expected replicas of a 1-cpu/1Gi pod on a 4-cpu node)
    ({}, {}, 4),
    ({"ready": False}, {}, 0),
    ({"labels": {"gpu": "a100"}}, {"nodeSelector": {"gpu": "a100"}}, 4),
    ({"labels": {"gpu": "h100"}}, {"nodeSelector": {"gpu": "a100"}}, 0),
    ({"taints": [{"key": "dedicated", "value": "ml", "effect": "NoSchedule"}]}, {}, 0),
    ({"taints": [{"key": "dedicated", "value": "ml", "effect": "NoSchedule"}]},
     {"tolerations": [{"key": "dedicated", "operator": "Equal", "value": "ml", "effect": "NoSchedule"}]}, 4),
    ({"taints": [{"key": "dedicated", "value": "ml", "effect": "PreferNoSchedule"}]}, {}, 4),
    ({"labels": {"zone": "b"}},
     {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
         {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}}}}, 0),
    ({"labels": {"zone": "b"}},
     {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
         {"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["a"]}]}]}}}}, 4),
    ({"pods": 2}, {}, 2),
]


def test_filters() -> None:
    for node_kw, shape_kw, expected in FILTER_CASES:
        kw = {"cpu": 4, "mem_gi": 16, "gpu": 0, "pods": 110, **{k: v for k, v in node_kw.items()}}
        state = NodeState([node("n0", **kw)], [])
        assert state.max_replicas(shape(1, 1, **shape_kw)) == expected, (node_kw, shape_kw)


def test_unschedulable_node_needs_toleration() -> None:
    n = node("n0", 4, 16, 0, 110)
    n["spec"]["unschedulable"] = True
    state = NodeState([n], [])
    assert state.max_replicas(shape(1, 1)) == 0
    tol = [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}]
    assert state.max_replicas(shape(1, 1, tolerations=tol)) == 4


def test_missing_extended_resource_gives_zero() -> None:
    state = NodeState([node("n0", 64, 512, 0, 110)], [])
    assert state.max_replicas(shape(1, 1, gpu=1)) == 0


def test_karmada_example_one_set() -> None:
    # reference/karmada.md §4.4: 10 CPU / 8Gi with 2Gi used; JM 1x(1 CPU, 2Gi) + TM 2x(2 CPU, 2Gi) -> 1 set.
    state = NodeState([node("n0", 10, 8, 0, 110)], [pod("used", "n0", 0, 2)])
    assert state.max_component_sets([(shape(1, 2), 1), (shape(2, 2), 2)]) == 1


# ------------------------------------------------------------------ status summary

CLUSTER = """
name: c
pools:
- {name: a100, count: 3, cpu: 64, memory: 512Gi, numaNodes: 2, zone: z1,
   gpus: {product: NVIDIA-A100-SXM4-80GB, count: 8, memoryGiB: 80}}
- {name: cpu, count: 2, cpu: 32, memory: 128Gi}
"""


def test_cluster_status_summary() -> None:
    nodes = parse_cluster_text(CLUSTER).nodes
    pods = [
        pod("bound", "c-a100-0", 8, 64, gpu=4),
        pod("done", "c-a100-1", 8, 64, gpu=8, phase="Succeeded"),
        pod("waiting", None, 2, 4, phase="Pending"),
    ]
    pods[0]["metadata"]["uid"] = "u-bound"
    state = NodeState(nodes, pods)
    status = cluster_status(state, pods, {"u-bound": "training"},
                            [{"metadata": {"name": "training"}, "spec": {"capability": {"nvidia.com/gpu": "16"}}}])
    summary = status["resourceSummary"]
    assert summary["allocatable"]["nvidia.com/gpu"] == "24"
    assert summary["allocatable"]["cpu"] == str(3 * 64 + 2 * 32)
    assert summary["allocated"]["nvidia.com/gpu"] == "4"
    assert summary["allocated"]["pods"] == "1"
    assert summary["allocating"] == {"cpu": "2", "memory": "4Gi", "pods": "1"}
    assert status["nodeSummary"] == {"totalNum": 5, "readyNum": 5}
    shapes = {json.dumps(s, sort_keys=True) for s in status["nodeShapes"]}
    assert len(shapes) == 3  # 2 idle A100 nodes, 1 half-used A100 node, 2 CPU nodes
    counts = sorted(s["count"] for s in status["nodeShapes"])
    assert counts == [1, 2, 2]
    half = next(s for s in status["nodeShapes"] if s["count"] == 1)
    assert half["free"]["nvidia.com/gpu"] == "4"
    assert half["labels"] == {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB", "topology.kubernetes.io/zone": "z1",
                              "caldera.io/pool": "a100"}
    assert status["gpus"] == [{"product": "NVIDIA-A100-SXM4-80GB", "total": 24, "free": 20, "fragmented": 4}]
    numa = {g["numaNodes"]: g for g in status["numa"]}
    assert numa[2]["count"] == 3 and numa[2]["gpusPerNuma"] == [4, 4]
    assert status["queues"] == [{"name": "training", "allocated": {"cpu": "8", "memory": "64Gi",
                                                                   "nvidia.com/gpu": "4", "pods": "1"},
                                 "capability": {"nvidia.com/gpu": "16"}}]


def test_failed_node_leaves_summary() -> None:
    nodes = pool_nodes({"name": "p", "count": 2, "cpu": 4, "memory": "8Gi"}, "p")
    nodes[1]["status"]["conditions"][0]["status"] = "False"
    status = cluster_status(NodeState(nodes, []), [])
    assert status["nodeSummary"] == {"totalNum": 2, "readyNum": 1}
    assert status["resourceSummary"]["allocatable"]["cpu"] == "4"
    assert [s["count"] for s in status["nodeShapes"]] == [1]


def test_pod_specs_validate_as_before_and_fail_with_the_same_errors() -> None:
    import pytest
    from pydantic import ValidationError

    from policies.capacity import pod_request, validate_pod_spec
    from policies.models.core import PodSpec

    spec = {"containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "1500m", "memory": "1Gi",
                                                                                "nvidia.com/gpu": "2"}}}],
            "initContainers": [{"name": "init", "image": "i", "resources": {"requests": {"cpu": "3"}}}],
            "overhead": {"cpu": "100m"}, "nodeSelector": {"a": "b"}}
    assert validate_pod_spec(spec) == PodSpec.model_validate(spec)
    assert pod_request({"spec": spec}) == pod_request({"spec": PodSpec.model_validate(spec).to_wire()})
    for bad in ({"containers": "not a list"}, {"containers": [{"name": ["c"], "image": "i"}]}, ["x"]):
        with pytest.raises(ValidationError) as ours:
            validate_pod_spec(bad)
        with pytest.raises(ValidationError) as theirs:
            PodSpec.model_validate(bad)
        assert ours.value.errors() == theirs.value.errors() and ours.value.title == theirs.value.title
