"""``GET /status`` document shape (pure builder) — the contract docs/status.md promises dashboards."""

from __future__ import annotations

from datetime import UTC, datetime

from federation import metrics
from federation.controllers.status_aggregate import aggregate
from federation.status_api import status_document
from tests.federation_status.builders import binding, cluster, job, lease, work

NOW = datetime(2026, 12, 2, 10, 5, 0, tzinfo=UTC)
GPUS_A = [{"product": "NVIDIA-A100", "total": 32, "free": 8}, {"product": "NVIDIA-H100", "total": 32, "free": 32}]
GPUS_B = [{"product": "NVIDIA-A100", "total": 128, "free": 100}]


def document() -> dict:
    clusters = [cluster("a", gpus=GPUS_A),
                cluster("b", ready="Unknown", gpus=GPUS_B,
                        taints=[{"key": "cluster.karmada.io/unreachable", "effect": "NoSchedule"}])]
    leases = [lease("a", "2026-12-02T10:04:55.500000Z"), lease("b", "2026-12-02T10:03:00Z")]
    rb = binding("train", 1, {"a": {"worker": [4, 4]}, "b": {"master": [1, 1], "worker": [4, 4]}})
    rb["status"]["conditions"][0]["lastTransitionTime"] = "2026-12-02T10:00:02Z"
    works = [work("train", "a", 1, "Running", running=4),
             work("train", "b", 1, "Pending", pending=5, gang={"phase": "Pending", "reason": "gang: 0/5 fit"})]
    train = job()
    train["status"] = aggregate(train, rb, works, NOW).status
    stuck = job("stuck", created="2026-12-02T10:01:00Z")
    stuck_rb = binding("stuck", 1, {}, {"status": "False", "reason": "Unschedulable",
                                        "message": "a: 8 GPUs short; b: unreachable"})
    stuck["status"] = aggregate(stuck, stuck_rb, [], NOW).status
    return status_document(clusters, leases, [train, stuck], [rb, stuck_rb], NOW, metrics.latency_summary([0.2]))


def test_top_level_shape() -> None:
    doc = document()
    assert set(doc) == {"apiVersion", "generatedAt", "summary", "clusters", "jobs", "placementLatency"}
    assert doc["apiVersion"] == "caldera.io/status/v1"
    assert doc["summary"] == {"clusters": 2, "readyClusters": 1, "gpus": {"free": 140, "total": 192},
                              "jobs": 2, "jobsByPhase": {"Pending": 2}}


def test_cluster_entries() -> None:
    a, b = document()["clusters"]
    assert (a["name"], a["ready"], a["schedulable"], a["leaseAgeSeconds"]) == ("a", "True", True, 4.5)
    assert a["gpus"] == {"free": 40, "total": 64, "byModel": {"NVIDIA-A100": {"free": 8, "total": 32},
                                                               "NVIDIA-H100": {"free": 32, "total": 32}}}
    assert (b["ready"], b["schedulable"], b["leaseAgeSeconds"]) == ("Unknown", False, 120.0)
    assert b["taints"] == [{"key": "cluster.karmada.io/unreachable", "effect": "NoSchedule"}]
    assert set(a) >= {"readyReason", "nodes", "queues", "leaseDurationSeconds"}


def test_job_entries_say_why_pending() -> None:
    train, stuck = document()["jobs"]
    assert (train["name"], train["phase"], train["running"], train["pending"]) == ("train", "Pending", 4, 5)
    assert "b: gang: 0/5 fit" in train["waitingReason"]
    assert [(c["name"], c["phase"], c["replicas"]) for c in train["clusters"]] == [("a", "Running", 4),
                                                                                ("b", "Pending", 5)]
    assert train["placementLatencySeconds"] == 2.0 and train["scheduledAt"] == "2026-12-02T10:00:02Z"
    assert stuck["waitingReason"] == "a: 8 GPUs short; b: unreachable"
    assert stuck["reason"] == "Unschedulable" and stuck["placementLatencySeconds"] is None


def test_placement_latency_percentiles() -> None:
    latency = document()["placementLatency"]
    assert latency["fromTimestamps"] == {"count": 1, "p50": 2.0, "p90": 2.0, "p99": 2.0, "max": 2.0, "mean": 2.0}
    assert latency["observed"]["count"] == 1 and latency["observed"]["p99"] == 0.2


def test_percentiles_nearest_rank() -> None:
    summary = metrics.latency_summary(float(v) for v in range(1, 101))
    assert (summary["p50"], summary["p90"], summary["p99"], summary["max"]) == (50.0, 90.0, 99.0, 100.0)
    assert metrics.latency_summary([]) == {"count": 0}
