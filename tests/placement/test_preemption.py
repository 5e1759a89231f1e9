"""Preemption-aware placement: a job that fits nowhere on free capacity counts on preemption of
strictly lower-priority pods, read from the clusters' ``status.preemptibleShapes``.

Built from wire objects (Cluster, Job, PriorityClass, policy) through the adapters, as the
placement controller does.
"""

from __future__ import annotations

from typing import Any

import pytest

from federation.placement.adapters import build_request, cluster_state
from federation.placement.place import Placer
from policies.models.karmada_cluster import Cluster

FULL = {"cpu": "128", "memory": "1Ti", "nvidia.com/gpu": "0", "pods": "94"}
EIGHT = {"cpu": "128", "memory": "1Ti", "nvidia.com/gpu": "8", "pods": "110"}
FOUR = {"cpu": "128", "memory": "1Ti", "nvidia.com/gpu": "4", "pods": "102"}

# busy: 2 nodes whose 8 GPUs run pods of priority 100 (4 GPUs each) and 500 (4 GPUs each)
BUSY_STATUS = {
    "conditions": [{"type": "Ready", "status": "True"}],
    "nodeShapes": [{"count": 2, "free": FULL}],
    "preemptibleShapes": [
        {"belowPriority": 101, "shapes": [{"count": 2, "free": FOUR}]},
        {"belowPriority": 501, "shapes": [{"count": 2, "free": EIGHT}]},
    ],
}
IDLE_STATUS = {"conditions": [{"type": "Ready", "status": "True"}], "nodeShapes": [{"count": 1, "free": EIGHT}]}
CLASSES = {
    "high": {"metadata": {"name": "high"}, "value": 1000},
    "mid": {"metadata": {"name": "mid"}, "value": 300},
    "low": {"metadata": {"name": "low"}, "value": 100},
    "high-never": {"metadata": {"name": "high-never"}, "value": 1000, "preemptionPolicy": "Never"},
}
POLICY = {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "ClusterPropagationPolicy", "metadata": {"name": "all"},
          "spec": {"resourceSelectors": [{"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job"}],
                   "placement": {"replicaScheduling": {"replicaSchedulingType": "Divided",
                                                       "replicaDivisionPreference": "Weighted",
                                                       "weightPreference": {"dynamicWeight": "AvailableReplicas"}}}}}


def cluster(name: str, status: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster", "metadata": {"name": name},
            "spec": {"syncMode": "Pull"}, "status": status}


def job(workers: int, gpus: int, priority_class: str | None, master: bool = False) -> dict[str, Any]:
    def task(name: str, replicas: int, per_pod: int) -> dict[str, Any]:
        return {"name": name, "replicas": replicas, "template": {"spec": {"containers": [
            {"name": name, "image": "trainer:1", "resources": {"limits": {"nvidia.com/gpu": per_pod}}}]}}}
    spec: dict[str, Any] = {"tasks": ([task("master", 1, 1)] if master else []) + [task("worker", workers, gpus)]}
    if priority_class:
        spec["priorityClassName"] = priority_class
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
            "metadata": {"name": "train", "namespace": "default", "uid": "u-1"}, "spec": spec}


# (case, clusters, job: (workers, gpus per worker, class, master), expected placement or None, counted thresholds)
CASES = [
    ("high priority preempts priority-100 pods", [("busy", BUSY_STATUS)], (2, 4, "high", False),
     {"busy": 2}, {"busy": 501}),
    ("the best threshold below the job's priority is used", [("busy", BUSY_STATUS)], (2, 8, "high", False),
     {"busy": 2}, {"busy": 501}),
    ("priority 300 may evict only the priority-100 pods", [("busy", BUSY_STATUS)], (2, 4, "mid", False),
     {"busy": 2}, {"busy": 101}),
    ("priority 300 cannot free whole nodes", [("busy", BUSY_STATUS)], (2, 8, "mid", False), None, {}),
    ("a gang (master + workers) preempts too", [("busy", BUSY_STATUS)], (3, 4, "high", True),
     {"busy": 4}, {"busy": 501}),
    ("same priority as the victims: no preemption", [("busy", BUSY_STATUS)], (1, 4, "low", False), None, {}),
    ("preemptionPolicy Never: no preemption", [("busy", BUSY_STATUS)], (1, 4, "high-never", False), None, {}),
    ("no PriorityClass: no preemption", [("busy", BUSY_STATUS)], (1, 4, None, False), None, {}),
    ("unknown PriorityClass: no preemption", [("busy", BUSY_STATUS)], (1, 4, "missing", False), None, {}),
    ("free capacity elsewhere comes first", [("busy", BUSY_STATUS), ("idle", IDLE_STATUS)], (1, 8, "high", False),
     {"idle": 1}, {}),
]


@pytest.mark.parametrize("case, clusters, spec, placed, counted", CASES, ids=[c[0] for c in CASES])
def test_preemption_aware_placement(case: str, clusters: list[tuple[str, dict[str, Any]]],
                                    spec: tuple[int, int, str | None, bool], placed: dict[str, int] | None,
                                    counted: dict[str, int]) -> None:
    request = build_request(job(*spec), POLICY, [cluster(n, s) for n, s in clusters], priority_classes=CLASSES)
    decision = Placer().place(request)
    if placed is None:
        assert not decision.ok, decision.reason
        assert decision.failure is not None and decision.failure.condition == "Unschedulable"
        assert decision.preemption == {}
        return
    assert decision.ok, decision.reason
    assert decision.replicas() == placed
    assert decision.preemption == counted
    assert ("preemption" in decision.reason) == bool(counted), decision.reason


def test_without_priority_classes_nothing_is_counted() -> None:
    request = build_request(job(1, 4, "high"), POLICY, [cluster("busy", BUSY_STATUS)])
    assert request.job.priority is None and not request.job.preempts
    assert not Placer().place(request).ok


def test_the_failure_says_preemption_did_not_help_either() -> None:
    request = build_request(job(3, 8, "high"), POLICY, [cluster("busy", BUSY_STATUS)], priority_classes=CLASSES)
    decision = Placer().place(request)
    assert not decision.ok
    assert "counting on preemption of pods below priority 1000 does not help" in decision.reason


def test_preemptible_shapes_round_trip_through_the_cluster_model() -> None:
    obj = Cluster.model_validate(cluster("busy", BUSY_STATUS))
    assert obj.status is not None and obj.status.preemptible_shapes is not None
    assert [e.below_priority for e in obj.status.preemptible_shapes] == [101, 501]
    state = cluster_state(obj)
    assert [t for t, _ in state.preemptible] == [101, 501]
    assert state.preemptible[1][1][0].count == 2
    assert dict(state.preemptible[1][1][0].free)["nvidia.com/gpu"] == 8000.0
