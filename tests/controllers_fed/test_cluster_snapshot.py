"""The placement controller reads a Cluster's Ready condition as the health controller left it.

The health controller already damps a recovery (``--cluster-success-threshold``, taints kept until
then); a second damping in the placement core kept a cluster that reads Ready and untainted out of
new placements for 30 s after every healed partition or restarted agent (issue 31: the next Job went
whole to cluster-a).
"""

from __future__ import annotations

from typing import Any

import pytest

from federation.controllers.binding import cluster_snapshot
from federation.controllers.common import rfc3339
from federation.placement.adapters import build_request
from federation.placement.place import Placer
from tests.controllers_fed.conftest import GPU_NODE_FREE, SEED, load

NOW = 1_800_000_000.0
UNREACHABLE = {"key": "cluster.karmada.io/unreachable", "effect": "NoSchedule", "timeAdded": rfc3339(NOW - 30)}


def cluster(name: str, ready: str, ready_for: float, taints: list[dict[str, Any]]) -> dict[str, Any]:
    """A Cluster registered an hour ago whose Ready condition changed ``ready_for`` seconds ago."""
    return {"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
            "metadata": {"name": name, "creationTimestamp": rfc3339(NOW - 3600)},
            "spec": {"syncMode": "Pull", "taints": taints},
            "status": {"conditions": [{"type": "Ready", "status": ready, "reason": "ClusterReady",
                                       "lastTransitionTime": rfc3339(NOW - ready_for)}],
                       "nodeShapes": [{"count": 8, "free": dict(GPU_NODE_FREE)}]}}


#: (cluster-b's Ready status, seconds since it changed, its taints) -> clusters the seed job lands on
CASES = [
    pytest.param("True", 1, [], {"cluster-a": 1, "cluster-b": 3}, id="ready and untainted a second ago: placeable"),
    pytest.param("True", 3600, [], {"cluster-a": 1, "cluster-b": 3}, id="ready for an hour"),
    pytest.param("Unknown", 1, [UNREACHABLE], {"cluster-a": 4}, id="recovering: still tainted, left out"),
    pytest.param("True", 1, [UNREACHABLE], {"cluster-a": 4}, id="agent says Ready before the taint is cleared"),
]


@pytest.mark.parametrize(("ready", "ready_for", "taints", "split"), CASES)
def test_a_cluster_ready_again_takes_new_jobs_at_once(ready: str, ready_for: float, taints: list[dict[str, Any]],
                                                       split: dict[str, int]) -> None:
    (job,) = load(SEED / "job-pytorch-dist-training.yaml")
    job["metadata"].update(namespace="default", uid="u-31")
    (policy,) = load(SEED / "propagationpolicy-volcano-job-policy.yaml")
    states = [cluster_snapshot(cluster("cluster-a", "True", 3600, [])),
              cluster_snapshot(cluster("cluster-b", ready, ready_for, taints))]
    decision = Placer().place(build_request(job, policy, states, now=NOW))
    assert decision.ok, decision.reason
    assert {n: s.replicas for n, s in decision.shares.items() if s.replicas} == split, decision.reason
