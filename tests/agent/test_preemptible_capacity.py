"""``status.preemptibleShapes``: node shapes were preemptable pods below a priority evicted."""

from __future__ import annotations

from typing import Any

import pytest

from policies.capacity import NodeState
from policies.capacity_summary import MAX_PREEMPTION_THRESHOLDS, cluster_status, preemptible_shapes
from policies.models.karmada_cluster import ClusterStatus


def node(name: str, gpus: int = 8, pods: int = 110, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"kind": "Node", "metadata": {"name": name, "labels": labels or {}}, "spec": {},
            "status": {"allocatable": {"cpu": "64", "memory": "256Gi", "nvidia.com/gpu": str(gpus), "pods": str(pods)},
                       "conditions": [{"type": "Ready", "status": "True"}]}}


def pod(name: str, node_name: str | None, gpus: int, priority: int | None = None, scheduler: str = "volcano",
        phase: str = "Running", **meta: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"schedulerName": scheduler, "containers": [
        {"name": "c", "resources": {"requests": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": str(gpus)}}}]}
    if node_name:
        spec["nodeName"] = node_name
    if priority is not None:
        spec["priority"] = priority
    return {"kind": "Pod", "metadata": {"name": name, "namespace": "ns", "uid": name, **meta}, "spec": spec,
            "status": {"phase": phase}}


def entries(nodes: list[dict[str, Any]], pods: list[dict[str, Any]]) -> dict[int, list[tuple[int, str, str]]]:
    """belowPriority -> [(count, free GPUs, free pods)]"""
    out = preemptible_shapes(NodeState(nodes, pods), pods)
    return {e["belowPriority"]: sorted((s["count"], s["free"].get("nvidia.com/gpu", "0"), s["free"]["pods"])
                                       for s in e["shapes"]) for e in out}


# (case, pods on nodes n1/n2 (8 GPUs each), expected belowPriority -> shapes)
CASES = [
    ("no pods: nothing to report", [], {}),
    ("one priority: one threshold, its pods freed",
     [pod("a", "n1", 4, 100), pod("b", "n2", 8, 100)],
     {101: [(2, "8", "110")]}),
    ("two priorities: cumulative thresholds",
     [pod("a", "n1", 4, 100), pod("b", "n1", 4, 500), pod("c", "n2", 8, 500)],
     {101: [(1, "0", "109"), (1, "4", "109")], 501: [(2, "8", "110")]}),
    ("no spec.priority reads as the scheduler's default 1",
     [pod("a", "n1", 8)], {2: [(2, "8", "110")]}),
    ("volcano.sh/task-priority overrides spec.priority",
     [pod("a", "n1", 8, 100, annotations={"volcano.sh/task-priority": "7"})], {8: [(2, "8", "110")]}),
    ("volcano.sh/preemptable: false is never a victim",
     [pod("a", "n1", 8, 100, annotations={"volcano.sh/preemptable": "false"}), pod("b", "n2", 8, 100)],
     {101: [(1, "0", "109"), (1, "8", "110")]}),
    ("pods of other schedulers are not the agent's to evict",
     [pod("a", "n1", 8, 100, scheduler="default-scheduler")], {}),
    ("finished, unbound and terminating pods are no victims",
     [pod("a", "n1", 8, 100, phase="Succeeded"), pod("b", None, 8, 100),
      pod("c", "n2", 8, 100, deletionTimestamp="2026-12-02T00:00:00Z")], {}),
]


@pytest.mark.parametrize("case, pods, expected", CASES, ids=[c[0] for c in CASES])
def test_preemptible_shapes(case: str, pods: list[dict[str, Any]], expected: dict[int, list[tuple[int, str, str]]]) -> None:
    assert entries([node("n1"), node("n2")], pods) == {k: sorted(v) for k, v in expected.items()}


def test_thresholds_are_bounded_to_the_highest() -> None:
    pods = [pod(f"p{i}", "n1", 0, i * 10) for i in range(MAX_PREEMPTION_THRESHOLDS + 3)]
    out = preemptible_shapes(NodeState([node("n1")], pods), pods)
    below = [e["belowPriority"] for e in out]
    assert below == [i * 10 + 1 for i in range(3, MAX_PREEMPTION_THRESHOLDS + 3)]
    # the lowest kept threshold also frees the pods of the thresholds left out
    assert out[0]["shapes"][0]["free"]["pods"] == str(110 - (MAX_PREEMPTION_THRESHOLDS + 3) + 4)


def test_cluster_status_carries_it_only_when_there_are_victims_and_it_validates() -> None:
    nodes = [node("n1"), node("n2", labels={"nvidia.com/gpu.product": "H100", "unrelated": "x"})]
    pods = [pod("a", "n1", 8, 100), pod("b", "n2", 2, 100)]
    status = cluster_status(NodeState(nodes, pods), pods)
    assert [e["belowPriority"] for e in status["preemptibleShapes"]] == [101]
    labels = sorted(str(s.get("labels")) for s in status["preemptibleShapes"][0]["shapes"])
    assert labels == ["None", "{'nvidia.com/gpu.product': 'H100'}"]
    assert status["nodeShapes"] != status["preemptibleShapes"][0]["shapes"]
    ClusterStatus.model_validate(status)
    assert "preemptibleShapes" not in cluster_status(NodeState(nodes, []), [])
