"""Cluster deletion, policy conflicts, overrides in Works, a rebalance request, and idempotent dispatch."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from federation.controllers.common import ControllerOptions
from federation.controllers.dispatch import DispatchController
from federation.controllers.runner import wait_synced
from tests.controllers_fed.conftest import ROOT, SEED, Fed, load, until
from tests.controllers_fed.test_placement_dispatch import _works_of_generation

CLUSTERS = ROOT / "tests" / "data" / "placement" / "clusters-seed.yaml"
POLICY = "policy.karmada.io/v1alpha1"


async def seed(fed: Fed) -> None:
    for cluster in load(CLUSTERS):
        await fed.apply(cluster)
    for doc in load(SEED / "propagationpolicy-volcano-job-policy.yaml"):
        await fed.apply(doc)


async def test_deleted_cluster_moves_the_job(fed: Fed) -> None:
    await seed(fed)
    await fed.apply(load(SEED / "job-gpu-dist-training.yaml")[0])
    await until(lambda: _works_of_generation(fed, "gpu-dist-training", 1, 2), "generation 1")
    await fed.delete("cluster.karmada.io/v1alpha1", "Cluster", "cluster-b")
    works = await until(lambda: _works_of_generation(fed, "gpu-dist-training", 2, 1), "generation 2")
    assert list(works) == ["cluster-a"]
    assert works["cluster-a"]["spec"]["workload"]["manifests"][0]["spec"]["tasks"][0]["replicas"] == 8


async def test_conflicting_policies_are_reported_and_resolved_by_name(fed: Fed) -> None:
    await seed(fed)
    rival = load(SEED / "propagationpolicy-volcano-job-policy.yaml")[0]
    rival["metadata"]["name"] = "a-rival"
    rival["spec"]["placement"] = {"clusterAffinity": {"clusterNames": ["cluster-a"]},
                                  "replicaScheduling": {"replicaSchedulingType": "Divided",
                                                        "replicaDivisionPreference": "Aggregated"}}
    await fed.apply(rival)
    await fed.apply(load(SEED / "job-gpu-dist-training.yaml")[0])

    async def conflict() -> dict[str, Any] | None:
        rb = await fed.rb("gpu-dist-training")
        conds = {c["type"]: c for c in ((rb or {}).get("status") or {}).get("conditions") or []}
        return rb if "PolicyConflict" in conds and "Scheduled" in conds else None

    rb = await until(conflict, "the PolicyConflict condition")
    assert rb["metadata"]["annotations"]["caldera.io/policy"] == "PropagationPolicy default/a-rival"
    message = next(c["message"] for c in rb["status"]["conditions"] if c["type"] == "PolicyConflict")
    assert "volcano-job-policy" in message
    assert [c["name"] for c in rb["spec"]["clusters"]] == ["cluster-a"]
    # raising the seed policy's priority ends the conflict and moves the job to its placement
    await fed.patch(POLICY, "PropagationPolicy", "volcano-job-policy", {"spec": {"priority": 10}}, "default")
    works = await until(lambda: _works_of_generation(fed, "gpu-dist-training", 2, 2), "generation 2 under the seed")
    assert set(works) == {"cluster-a", "cluster-b"}
    rb = await fed.rb("gpu-dist-training")
    assert not any(c["type"] == "PolicyConflict" for c in rb["status"]["conditions"])


async def test_override_policy_is_applied_per_cluster(fed: Fed) -> None:
    await seed(fed)
    await fed.apply({"apiVersion": POLICY, "kind": "OverridePolicy", "metadata": {"name": "nccl-a"},
                     "spec": {"resourceSelectors": [{"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job"}],
                              "overrideRules": [{"targetCluster": {"clusterNames": ["cluster-a"]},
                                                 "overriders": {"plaintext": [
                                                     {"path": "/spec/tasks/0/template/spec/containers/0/env/0/value",
                                                      "operator": "replace", "value": "ib0"}]}}]}})
    await fed.apply(load(SEED / "job-gpu-dist-training.yaml")[0])
    works = await until(lambda: _works_of_generation(fed, "gpu-dist-training", 1, 2), "generation 1")

    def env(cluster: str) -> str:
        task = works[cluster]["spec"]["workload"]["manifests"][0]["spec"]["tasks"][0]
        return str(task["template"]["spec"]["containers"][0]["env"][0]["value"])

    assert env("cluster-a") == "ib0" and env("cluster-b") == "eth0"
    assert works["cluster-a"]["metadata"]["annotations"]["caldera.io/overrides-applied"] == \
        "OverridePolicy default/nccl-a"


async def test_reschedule_triggered_at_redivides_fresh(fed: Fed) -> None:
    await seed(fed)
    await fed.apply(load(SEED / "job-gpu-dist-training.yaml")[0])
    await until(lambda: _works_of_generation(fed, "gpu-dist-training", 1, 2), "generation 1")
    await fed.patch("work.karmada.io/v1alpha2", "ResourceBinding", "gpu-dist-training-job",
                    {"spec": {"rescheduleTriggeredAt": "2099-01-01T00:00:00Z"}}, "default")

    async def rescheduled() -> dict[str, Any] | None:
        rb = await fed.rb("gpu-dist-training")
        cond = next((c for c in (rb or {}).get("status", {}).get("conditions") or [] if c["type"] == "Scheduled"), {})
        return rb if "reschedule requested" in cond.get("message", "") else None

    rb = await until(rescheduled, "a reschedule")
    # same inputs, same (static-weight) division: the layout and the generation are kept
    assert rb["metadata"]["annotations"]["caldera.io/placement-generation"] == "1"


async def test_dispatch_is_idempotent(fed: Fed) -> None:
    await seed(fed)
    await fed.apply(load(SEED / "job-gpu-dist-training.yaml")[0])
    before = await until(lambda: _works_of_generation(fed, "gpu-dist-training", 1, 2), "generation 1")
    versions = {c: w["metadata"]["resourceVersion"] for c, w in before.items()}
    # a second dispatcher with its own caches re-runs the reconcile: nothing is written
    stop = asyncio.Event()
    controller = DispatchController(fed.api, ControllerOptions(watch_timeout=5))
    tasks = [asyncio.create_task(inf.run(stop)) for inf in controller.informers]
    try:
        assert await wait_synced(controller.informers, stop)
        for _ in range(2):
            await controller.reconcile(("default", "gpu-dist-training"))
        after = await fed.works("gpu-dist-training")
        assert {c: w["metadata"]["resourceVersion"] for c, w in after.items()} == versions
        placement = json.loads((await fed.rb("gpu-dist-training"))["metadata"]["annotations"]["caldera.io/placement"])
        assert set(placement["clusters"]) == set(after)
    finally:
        stop.set()
        await asyncio.gather(*tasks, return_exceptions=True)


async def test_binding_deleted_by_hand_comes_back_with_a_newer_generation(fed: Fed) -> None:
    await seed(fed)
    await fed.apply(load(SEED / "job-gpu-dist-training.yaml")[0])
    await until(lambda: _works_of_generation(fed, "gpu-dist-training", 1, 2), "generation 1")
    await fed.delete("work.karmada.io/v1alpha2", "ResourceBinding", "gpu-dist-training-job", "default")
    works = await until(lambda: _works_of_generation(fed, "gpu-dist-training", 2, 2), "generation 2 (not 1 again)")
    assert set(works) == {"cluster-a", "cluster-b"}
    rb = await fed.rb("gpu-dist-training")
    assert rb["metadata"]["annotations"]["caldera.io/placement-generation"] == "2"
