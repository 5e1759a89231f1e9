"""Estimates: exact from node shapes, Karmada's general estimate, first-fit gang sets, assumed work."""

from __future__ import annotations

from placement_builders import GPU, cluster, gpu_nodes, job, task

from federation.placement.estimate import Component, general_estimate, general_sets
from federation.placement.request import (
    AssumedWorkload,
    ClusterState,
    NodeShape,
    ResourceSummary,
    labels,
    resources,
)
from federation.placement.table import NO_ESTIMATE, ClusterTable

GI = float(1 << 30)


def pod(gpus: int = 0, cpu: float = 0, memory: float = 0) -> tuple[tuple[str, float], ...]:
    values = {"pods": 1.0}
    if gpus:
        values[GPU] = gpus * 1000.0
    if cpu:
        values["cpu"] = cpu * 1000.0
    if memory:
        values["memory"] = memory
    return resources(values)


def test_exact_estimate_sums_per_node_fits_so_fragmentation_counts() -> None:
    fragmented = cluster("b", gpu_nodes(3, 8), gpu_nodes(13, 4))
    table = ClusterTable((fragmented, cluster("a", gpu_nodes(8, 8))))
    assert list(table.task_estimates(pod(8), ())) == [3, 8]
    assert list(table.task_estimates(pod(4), ())) == [3 * 2 + 13, 16]
    assert list(table.task_estimates(pod(3), ())) == [3 * 2 + 13, 16]


def test_node_selector_and_missing_resources() -> None:
    a = cluster("a", gpu_nodes(2, 8, product="A100"), gpu_nodes(5, 8, product="H100"))
    table = ClusterTable((a,))
    assert table.task_estimates(pod(8), labels({"nvidia.com/gpu.product": "A100"}))[0] == 2
    assert table.task_estimates(pod(8), labels({"nvidia.com/gpu.product": "V100"}))[0] == 0
    assert table.task_estimates(resources({"pods": 1.0, "nvidia.com/gpumem": 10000.0}), ())[0] == 0


def test_pod_slots_bound_the_fit() -> None:
    table = ClusterTable((cluster("a", gpu_nodes(2, 8, pods=3)),))
    assert table.task_estimates(pod(), ())[0] == 6
    assert table.task_estimates(pod(1), ())[0] == 6


def test_general_estimate_karmada_example() -> None:
    # allocatable 10 CPU / 8Gi with 2Gi used; JM 1x(1 CPU, 2Gi), TM 2x(2 CPU, 2Gi): 5 CPU and
    # 6Gi per set, CPU allows 2 sets and memory 1 -> 1 set (reference/karmada.md §4.4).
    summary = ResourceSummary(resources({"cpu": 10000.0, "memory": 8 * GI, "pods": 110.0}),
                              resources({"memory": 2 * GI}))
    c = ClusterState("c", summary=summary)
    comps = [Component(pod(cpu=1, memory=2 * GI), (), 1), Component(pod(cpu=2, memory=2 * GI), (), 2)]
    assert general_sets(c, comps) == 1
    assert general_estimate(c, pod(cpu=2, memory=2 * GI)) == 3
    assert general_estimate(c, pod(1)) == 0, "a resource the cluster lacks gives 0"
    assert general_estimate(ClusterState("none"), pod()) is None


def test_a_cluster_with_nothing_reported_has_no_estimate() -> None:
    table = ClusterTable((ClusterState("blind"),))
    assert table.task_estimates(pod(1), ())[0] == NO_ESTIMATE


def test_gang_sets_first_fit_with_consumption_carried_over() -> None:
    # one 8-GPU node: a set of {master 6, worker 2} fits once; the second set finds 0 GPUs
    table = ClusterTable((cluster("a", gpu_nodes(1, 8)),))
    comps = [Component(pod(6), (), 1), Component(pod(2), (), 1)]
    assert table.sets_on("a", comps, (), upper=10)[:2] == (1, 0)
    # order matters as in Karmada's simulation: two 5-GPU workers then a 6-GPU master on 2 nodes
    two = ClusterTable((cluster("b", gpu_nodes(2, 8)),))
    assert two.sets_on("b", [Component(pod(5), (), 2), Component(pod(6), (), 1)], (), 1)[:2] == (0, 2)


def test_partial_nodes_split_groups_in_first_fit_order() -> None:
    table = ClusterTable((cluster("a", gpu_nodes(4, 8)),))
    # 3 pods of 3 GPUs: node 1 takes 2, node 2 takes 1; then 5-GPU pods fit on node 2 and nodes 3, 4
    assert table.sets_on("a", [Component(pod(3), (), 3), Component(pod(5), (), 3)], (), 1)[:2] == (1, 0)
    assert table.sets_on("a", [Component(pod(3), (), 3), Component(pod(5), (), 4)], (), 1)[:2] == (0, 6)


def test_assumed_placements_are_deducted_first() -> None:
    a = cluster("a", gpu_nodes(2, 8))
    table = ClusterTable((a,))
    assumed = (AssumedWorkload("a", ((pod(8), 1),)), AssumedWorkload("other", ((pod(8), 5),)))
    assert table.estimate_on("a", pod(8), (), assumed) == 1
    assert table.task_estimates(pod(8), ())[0] == 2, "the shared table is not changed"
    summary_only = ClusterState("s", summary=ResourceSummary(resources({GPU: 16000.0, "pods": 10.0})))
    table2 = ClusterTable((summary_only,))
    assert table2.estimate_on("s", pod(8), (), (AssumedWorkload("s", ((pod(8), 1),)),)) == 1


def test_job_demand_builder_sums_replicas() -> None:
    j = job(task("master", 1, gpus=4), task("worker", 3, gpus=4))
    assert j.replicas == 4 and j.min_available == 4
    assert NodeShape(1, ()).count == 1
