"""Rescheduling triggers: job spec change, policy change; assumed shares hold back a burst."""

from __future__ import annotations

import json
from typing import Any

from tests.controllers_fed.conftest import DATA, ROOT, SEED, Fed, load, until
from tests.controllers_fed.test_placement_dispatch import _works_of_generation

JOB_API = "batch.volcano.sh/v1alpha1"


def one_pod_job(name: str) -> dict[str, Any]:
    job = load(SEED / "job-gpu-dist-training.yaml")[0]
    job["metadata"]["name"] = name
    job["spec"]["tasks"][0]["replicas"] = 1
    return job


async def _condition(fed: Fed, job: str) -> dict[str, Any] | None:
    rb = await fed.rb(job)
    return next((c for c in ((rb or {}).get("status") or {}).get("conditions") or [] if c["type"] == "Scheduled"),
                None)


async def test_burst_does_not_overcommit_and_retries_when_capacity_frees(fed: Fed) -> None:
    for doc in load(DATA / "clusters-two-nodes.yaml"):
        await fed.apply(doc)
    await fed.apply({"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
                     "metadata": {"name": "aggregated"},
                     "spec": {"resourceSelectors": [{"apiVersion": JOB_API, "kind": "Job"}],
                              "placement": {"replicaScheduling": {"replicaSchedulingType": "Divided",
                                                                  "replicaDivisionPreference": "Aggregated"}}}})
    for name in ("burst-1", "burst-2", "burst-3"):
        await fed.apply(one_pod_job(name))

    async def outcome() -> dict[str, str] | None:
        conds = {n: await _condition(fed, n) for n in ("burst-1", "burst-2", "burst-3")}
        if all(conds.values()):
            return {n: c["reason"] for n, c in conds.items() if c}
        return None

    reasons = await until(outcome, "a Scheduled condition on every job")
    assert sorted(reasons.values()) == ["Success", "Success", "Unschedulable"], reasons
    waiting = next(n for n, r in reasons.items() if r == "Unschedulable")
    placed = [n for n, r in reasons.items() if r == "Success"]
    # one placed job goes away; the cluster reports again -> the waiting job is retried and placed
    await fed.delete(JOB_API, "Job", placed[0], "default")
    await until(lambda: _no_rb(fed, placed[0]), "the deleted job's binding gone")
    await fed.patch("cluster.karmada.io/v1alpha1", "Cluster", "small",
                    {"status": {"nodeSummary": {"totalNum": 2, "readyNum": 2}}}, None, "status")
    works = await until(lambda: _works_of_generation(fed, waiting, 1, 1), "the waiting job placed")
    assert list(works) == ["small"]


async def _no_rb(fed: Fed, job: str) -> bool:
    return await fed.rb(job) is None


async def test_job_scale_and_policy_change_replace_with_new_generations(fed: Fed) -> None:
    for cluster in load(ROOT / "tests" / "data" / "placement" / "clusters-seed.yaml"):
        await fed.apply(cluster)
    for doc in load(SEED / "propagationpolicy-volcano-job-policy.yaml"):
        await fed.apply(doc)
    await fed.apply(load(SEED / "job-gpu-dist-training.yaml")[0])
    await until(lambda: _works_of_generation(fed, "gpu-dist-training", 1, 2), "generation 1")
    job = await fed.get(JOB_API, "Job", "gpu-dist-training", "default")
    tasks = job["spec"]["tasks"]
    tasks[0]["replicas"] = 11
    tasks[0]["minAvailable"] = 11
    await fed.patch(JOB_API, "Job", "gpu-dist-training", {"spec": {"tasks": tasks, "minAvailable": 11}}, "default")
    works = await until(lambda: _works_of_generation(fed, "gpu-dist-training", 2, 2), "generation 2 after scale-up")
    shares = {c: w["spec"]["workload"]["manifests"][0]["spec"]["tasks"][0]["replicas"] for c, w in works.items()}
    assert sum(shares.values()) == 11 and shares["cluster-b"] > shares["cluster-a"]
    totals = json.loads(works["cluster-a"]["spec"]["workload"]["manifests"][0]["metadata"]["annotations"][
        "caldera.io/task-totals"])
    assert totals == {"worker": 11}
    rb = await fed.rb("gpu-dist-training")
    assert rb["status"]["schedulerObservedGeneration"] == 2

    await fed.patch("policy.karmada.io/v1alpha1", "PropagationPolicy", "volcano-job-policy",
                    {"spec": {"placement": {"clusterAffinity": {"clusterNames": ["cluster-b"]}}}}, "default")
    works = await until(lambda: _works_of_generation(fed, "gpu-dist-training", 3, 1), "generation 3 on cluster-b")
    assert list(works) == ["cluster-b"]
    assert works["cluster-b"]["spec"]["placement"]["hold"] is False


async def test_duplicated_policy_copies_the_job_without_hold(fed: Fed) -> None:
    for cluster in load(ROOT / "tests" / "data" / "placement" / "clusters-seed.yaml"):
        await fed.apply(cluster)
    await fed.apply({"apiVersion": "policy.karmada.io/v1alpha1", "kind": "ClusterPropagationPolicy",
                     "metadata": {"name": "copies"},
                     "spec": {"resourceSelectors": [{"apiVersion": JOB_API, "kind": "Job"}],
                              "placement": {"replicaScheduling": {"replicaSchedulingType": "Duplicated"}}}})
    await fed.apply(load(SEED / "job-gpu-dist-training.yaml")[0])
    works = await until(lambda: _works_of_generation(fed, "gpu-dist-training", 1, 2), "a copy per cluster")
    for work in works.values():
        assert work["spec"]["placement"]["hold"] is False and work["spec"]["placement"]["clusters"] == 1
        manifest = work["spec"]["workload"]["manifests"][0]
        assert manifest["spec"]["tasks"][0]["replicas"] == 8
        assert json.loads(manifest["metadata"]["annotations"]["caldera.io/task-offsets"]) == {"worker": 0}


async def test_running_job_scaled_up_then_down_keeps_its_running_indices(fed: Fed) -> None:
    from tests.controllers_fed.test_placement_dispatch import seed

    await seed(fed, "job-gpu-dist-training")
    works = await until(lambda: _works_of_generation(fed, "gpu-dist-training", 1, 2), "generation 1 Works")
    for cluster in works:
        await fed.gang(cluster, "gpu-dist-training", 1, "Running")
    # scale the running job 8 -> 16 workers: static 1:2 gives a 5, b 11; the shares keep the
    # indices their pods run (b 0-4, a 5-7) and the new ones come after
    job = await fed.get(JOB_API, "Job", "gpu-dist-training", "default")
    assert job is not None
    tasks = job["spec"]["tasks"]
    tasks[0]["replicas"] = 16
    await fed.patch(JOB_API, "Job", "gpu-dist-training", {"spec": {"tasks": tasks, "minAvailable": 16}}, "default")
    works = await until(lambda: _works_of_generation(fed, "gpu-dist-training", 2, 2), "generation 2 Works")
    notes = {c: w["spec"]["workload"]["manifests"][0]["metadata"]["annotations"] for c, w in works.items()}
    assert json.loads(notes["cluster-a"]["caldera.io/task-indices"]) == {"worker": [[5, 8], [14, 16]]}
    assert json.loads(notes["cluster-b"]["caldera.io/task-indices"]) == {"worker": [[0, 5], [8, 14]]}
    assert notes["cluster-a"]["caldera.io/world-size"] == "16"
    rb = await fed.rb("gpu-dist-training")
    assert {c["name"]: c["replicas"] for c in (rb or {})["spec"]["clusters"]} == {"cluster-a": 5, "cluster-b": 11}
    # and down to 6: a 2, b 4; b keeps 0-3, a keeps 5 (the only one below 6) and takes 4
    tasks[0]["replicas"] = tasks[0]["minAvailable"] = 6
    await fed.patch(JOB_API, "Job", "gpu-dist-training", {"spec": {"tasks": tasks, "minAvailable": 6}}, "default")
    works = await until(lambda: _works_of_generation(fed, "gpu-dist-training", 3, 2), "generation 3 Works")
    notes = {c: w["spec"]["workload"]["manifests"][0]["metadata"]["annotations"] for c, w in works.items()}
    assert json.loads(notes["cluster-a"]["caldera.io/task-offsets"]) == {"worker": 4}
    assert json.loads(notes["cluster-b"]["caldera.io/task-offsets"]) == {"worker": 0}
    assert "caldera.io/task-indices" not in notes["cluster-a"] and "caldera.io/task-indices" not in notes["cluster-b"]
