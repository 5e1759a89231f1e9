"""A share placed on a cluster stays deducted until the cluster's capacity report shows it
(federation/controllers/assumed.py), not merely until its Work says the gang runs.

The agent writes a Work's status and its Cluster's status on two loops, the Cluster one debounced:
the Work said ``Running`` a status period before ``nodeShapes`` counted the pods, the federation
stopped deducting the share at once, and e2e/test_fleet_topology.py's 12-pod whole-cluster job was
sent onto the cluster whose 4 nodes had just been bound (where it waited forever). Here the same
two clusters and jobs, with the reports and Work statuses arriving in that order.
"""

from __future__ import annotations

from typing import Any

import pytest

from federation.controllers import requeue_events
from federation.controllers.assumed import AssumedShares, confirmation
from federation.placement.adapters import cluster_state, job_demand, placement_spec
from federation.placement.place import Placer
from federation.placement.request import PlacementRequest
from tests.policy_builders import one_to_one_policy
from tests.topology_builders import layout_text, reported_status

POLICY = one_to_one_policy(["topo-a", "topo-b"], namespace="default")


def gpu_job(name: str, pods: int, tier: int) -> dict[str, Any]:
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
            "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
            "spec": {"minAvailable": pods, "networkTopology": {"mode": "hard", "highestTierAllowed": tier},
                     "tasks": [{"name": "worker", "replicas": pods, "template": {"spec": {"containers": [{
                         "name": "worker", "image": "x", "resources": {"limits": {"nvidia.com/gpu": 8}}}]}}}]}}


def cluster(name: str, rv: int, busy_nodes: int = 0) -> dict[str, Any]:
    """The Cluster as its agent reports it: 12 nodes of 8 GPUs in leaves of 4, ``busy_nodes`` full."""
    _, status = reported_status(layout_text(name, 12, 4), [(n, 8) for n in range(busy_nodes)])
    return {"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
            "metadata": {"name": name, "resourceVersion": str(rv)}, "spec": {"syncMode": "Pull"}, "status": status}


def work(cluster_name: str, job: str, rv: int, gang: str | None = None, job_phase: str | None = None) -> dict[str, Any]:
    status: dict[str, Any] = {"observedPlacementGeneration": 1}
    if gang:
        status["gang"] = {"generation": 1, "phase": gang}
    if job_phase:
        status["manifestStatuses"] = [{"status": {"state": {"phase": job_phase}}}]
    return {"metadata": {"namespace": f"karmada-es-{cluster_name}", "name": f"default.{job}",
                         "resourceVersion": str(rv), "labels": {"caldera.io/job-uid": f"uid-{job}"}},
            "spec": {"placement": {"generation": 1}}, "status": status}


class Fleet:
    """The informers' stores and the placement controller's AssumedShares over them."""

    def __init__(self) -> None:
        self.clusters = {"topo-a": cluster("topo-a", 5), "topo-b": cluster("topo-b", 6)}
        self.works: dict[tuple[str, str], dict[str, Any]] = {}
        self.shares = AssumedShares(lambda ns, name: self.works.get((ns, name)), self.clusters.get)

    def report(self, obj: dict[str, Any]) -> int:
        old, self.clusters[obj["metadata"]["name"]] = self.clusters.get(obj["metadata"]["name"]), obj
        return self.shares.on_cluster_event("MODIFIED", obj, old)

    def work_status(self, obj: dict[str, Any]) -> None:
        self.works[(obj["metadata"]["namespace"], obj["metadata"]["name"])] = obj
        self.shares.observe(obj)

    def place(self, job: dict[str, Any]) -> dict[str, int]:
        states = tuple(cluster_state(c) for _, c in sorted(self.clusters.items()))
        request = PlacementRequest(job=job_demand(job), spec=placement_spec(POLICY), clusters=states,
                                   assumed=self.shares.others(job["metadata"]["uid"]))
        decision = Placer().place(request)
        assert decision.ok, decision.reason
        return {name: n for name, n in decision.replicas().items() if n}


def test_a_share_confirmed_before_its_cluster_reports_it_still_takes_room() -> None:
    fleet = Fleet()
    four = gpu_job("leaf-four", 4, 1)
    assert fleet.place(four) == {"topo-a": 4}  # the tightest fit; topo-a first by name
    fleet.shares.remember(four, 1, {"clusters": {"topo-a": {"tasks": {"worker": {"replicas": 4}}}}})
    fleet.work_status(work("topo-a", "leaf-four", 10, gang="Running"))  # bound and running on topo-a ...
    # ... but topo-a's last report (resourceVersion 5) still shows its 12 nodes free
    twelve = gpu_job("one-cluster", 12, 2)
    assert fleet.place(twelve) == {"topo-b": 12}, "the 4 nodes leaf-four holds are still deducted on topo-a"

    assert fleet.report(cluster("topo-a", 12, busy_nodes=4)) == 1, "the report written after the Work shows it"
    assert fleet.shares.others("uid-one-cluster") == ()
    assert fleet.place(twelve) == {"topo-b": 12}, "the report itself now shows topo-a's 4 nodes taken"


def test_an_older_report_releases_nothing_and_a_later_one_does() -> None:
    fleet = Fleet()
    four = gpu_job("leaf-four", 4, 1)
    fleet.shares.remember(four, 1, {"clusters": {"topo-a": {"tasks": {"worker": {"replicas": 4}}}}})
    fleet.work_status(work("topo-a", "leaf-four", 10, job_phase="Running"))
    assert fleet.report(cluster("topo-a", 9)) == 0, "written before the Work's confirmation"
    assert [w.cluster for w in fleet.shares.others("other")] == ["topo-a"]
    assert fleet.report(cluster("topo-b", 11)) == 0, "another cluster's report"
    assert fleet.report(cluster("topo-a", 11, busy_nodes=4)) == 1
    assert fleet.shares.others("other") == ()


def test_a_report_already_newer_than_the_confirmation_releases_at_once() -> None:
    fleet = Fleet()
    fleet.clusters["topo-a"] = cluster("topo-a", 20, busy_nodes=4)
    fleet.works[("karmada-es-topo-a", "default.leaf-four")] = work("topo-a", "leaf-four", 15, gang="Running")
    fleet.shares.remember(gpu_job("leaf-four", 4, 1), 1,  # e.g. after a federation restart
                          {"clusters": {"topo-a": {"tasks": {"worker": {"replicas": 4}}}}})
    assert fleet.shares.others("other") == ()


@pytest.mark.parametrize(("gang", "job_phase", "expected"), [
    ("Running", None, "held"), ("Released", None, "held"), (None, "Running", "held"), (None, "Completing", "held"),
    ("Unschedulable", None, "settled"), ("Cancelled", None, "settled"), (None, "Completed", "settled"),
    ("Pending", None, None), ("Reserved", None, None), (None, "Pending", None),
])
def test_confirmation(gang: str | None, job_phase: str | None, expected: str | None) -> None:
    assert confirmation(work("topo-a", "j", 3, gang=gang, job_phase=job_phase), 1) == expected


def test_a_share_that_holds_nothing_is_released_on_its_work_alone() -> None:
    fleet = Fleet()
    fleet.shares.remember(gpu_job("held", 4, 1), 1, {"clusters": {"topo-a": {"tasks": {"worker": {"replicas": 4}}}}})
    fleet.work_status(work("topo-a", "held", 10, gang="Unschedulable"))
    assert fleet.shares.others("other") == ()


def test_releasing_shares_a_report_already_counted_requeues_waiting_jobs() -> None:
    before, same, taken = cluster("topo-a", 5, busy_nodes=4), cluster("topo-a", 9, busy_nodes=4), \
        cluster("topo-a", 9, busy_nodes=8)
    assert requeue_events.assumed_released(same, before, 1) == \
        "cluster topo-a reports 1 share(s) already counted as assumed"
    assert requeue_events.assumed_released(taken, before, 1) is None, "the report took the capacity itself"
    assert requeue_events.assumed_released(same, before, 0) is None
