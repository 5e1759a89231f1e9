"""Job -> ResourceBinding -> Works, end to end through the API (seed policy, seed clusters)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.controllers_fed.conftest import ROOT, SEED, Fed, load, until

CLUSTERS = ROOT / "tests" / "data" / "placement" / "clusters-seed.yaml"


async def seed(fed: Fed, *jobs: str) -> None:
    for doc in load(SEED / "queue-ai-training.yaml"):
        await fed.apply(doc)
    for cluster in load(CLUSTERS):
        await fed.apply(cluster)
    for doc in load(SEED / "propagationpolicy-volcano-job-policy.yaml"):
        await fed.apply(doc)
    for job in jobs:
        for doc in load(SEED / f"{job}.yaml"):
            await fed.apply(doc)


def scheduled(rb: dict | None) -> dict | None:
    for cond in ((rb or {}).get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Scheduled":
            return cond
    return None


async def test_seed_job_divided_by_karmada_weights_and_dispatched(fed: Fed) -> None:
    await seed(fed, "job-gpu-dist-training")
    rb = await until(lambda: fed.rb("gpu-dist-training"), "the binding")
    rb = await until(lambda: _placed(fed, "gpu-dist-training"), "Scheduled=True")
    job = await fed.get("batch.volcano.sh/v1alpha1", "Job", "gpu-dist-training", "default")
    assert rb["spec"]["resource"]["uid"] == job["metadata"]["uid"]
    # Webster 1:2 over 8 workers: a 3, b 5 (docs/placement.md worked example)
    assert {c["name"]: c["replicas"] for c in rb["spec"]["clusters"]} == {"cluster-a": 3, "cluster-b": 5}
    assert {c["name"]: c["components"] for c in rb["spec"]["clusters"]}["cluster-b"] == [
        {"name": "worker", "replicas": 5}]
    notes = rb["metadata"]["annotations"]
    assert notes["caldera.io/placement-generation"] == "1"
    placement = json.loads(notes["caldera.io/placement"])
    assert placement["clusters"]["cluster-a"]["tasks"]["worker"] == {"replicas": 3, "minAvailable": 3, "offset": 5}
    assert placement["strategy"].startswith("Divided/Weighted")
    assert rb["spec"]["placement"]["replicaScheduling"]["replicaSchedulingType"] == "Divided"
    assert rb["status"]["schedulerObservedGeneration"] == job["metadata"]["generation"]

    works = await until(lambda: _works_of_generation(fed, "gpu-dist-training", 1, 2), "two Works")
    a, b = works["cluster-a"], works["cluster-b"]
    assert a["metadata"]["labels"] == {"caldera.io/job": "default.gpu-dist-training",
                                       "caldera.io/job-uid": job["metadata"]["uid"]}
    manifest = a["spec"]["workload"]["manifests"][0]
    assert manifest["kind"] == "Job" and manifest["metadata"]["name"] == "gpu-dist-training"
    assert manifest["spec"]["tasks"][0]["replicas"] == 3 and manifest["spec"]["minAvailable"] == 3
    assert json.loads(manifest["metadata"]["annotations"]["caldera.io/task-offsets"]) == {"worker": 5}
    assert json.loads(b["spec"]["workload"]["manifests"][0]["metadata"]["annotations"]["caldera.io/task-offsets"]) \
        == {"worker": 0}
    assert json.loads(manifest["metadata"]["annotations"]["caldera.io/task-totals"]) == {"worker": 8}
    assert manifest["metadata"]["annotations"]["caldera.io/world-size"] == "8"
    assert manifest["metadata"]["annotations"]["caldera.io/job-uid"] == job["metadata"]["uid"]
    for work in (a, b):
        assert work["spec"]["placement"] == {"generation": 1, "hold": True, "cancelled": False, "clusters": 2,
                                             "reserveTimeoutSeconds": 60, "keepsFromGeneration": 1}

    # two-phase: both shares reserve -> both released
    await fed.gang("cluster-a", "gpu-dist-training", 1, "Reserved")
    await fed.gang("cluster-b", "gpu-dist-training", 1, "Reserved")
    released = await until(lambda: _all(fed, "gpu-dist-training", lambda w: not w["spec"]["placement"]["hold"]),
                           "hold: false on every share")
    assert all(w["spec"]["placement"]["generation"] == 1 for w in released.values())
    events = await until(lambda: _reasons(fed, "gpu-dist-training", "Released"), "a Released event")
    assert "Scheduled" in events

    # deletion cascades to the binding and the Works
    await fed.delete("batch.volcano.sh/v1alpha1", "Job", "gpu-dist-training", "default")
    await until(lambda: _gone(fed, "gpu-dist-training"), "binding and Works deleted")


async def test_single_cluster_share_skips_the_hold(fed: Fed) -> None:
    await seed(fed, "job-pytorch-dist-training")
    # pytorch-dist-training: master + 3 workers; 1:2 gives a 1 b 3 -> two shares; use a job of 1 pod instead
    job = load(SEED / "job-gpu-dist-training.yaml")[0]
    job["metadata"]["name"] = "one-pod"
    job["spec"]["tasks"][0]["replicas"] = 1
    await fed.apply(job)
    works = await until(lambda: _works_of_generation(fed, "one-pod", 1, 1), "one Work")
    (cluster, work), = works.items()
    assert cluster == "cluster-b"  # Webster's first seat goes to the heavier weight
    assert work["spec"]["placement"]["hold"] is False and work["spec"]["placement"]["clusters"] == 1
    torch = await until(lambda: _works_of_generation(fed, "pytorch-dist-training", 1, 2), "pytorch shares")
    master_side = torch["cluster-b"]["spec"]["workload"]["manifests"][0]["spec"]["tasks"]
    assert {t["name"]: t["replicas"] for t in master_side} == {"master": 1, "worker": 2}


async def _placed(fed: Fed, job: str) -> dict | None:
    rb = await fed.rb(job)
    cond = scheduled(rb)
    return rb if cond and cond["status"] == "True" else None


async def _works_of_generation(fed: Fed, job: str, generation: int, count: int) -> dict | None:
    works = await fed.works(job)
    if len(works) == count and all(w["spec"]["placement"]["generation"] == generation for w in works.values()):
        return works
    return None


async def _all(fed: Fed, job: str, check) -> dict | None:  # type: ignore[no-untyped-def]
    works = await fed.works(job)
    return works if works and all(check(w) for w in works.values()) else None


async def _reasons(fed: Fed, name: str, wanted: str) -> set[str] | None:
    reasons = {e["reason"] for e in await fed.events(name)}
    return reasons if wanted in reasons else None


async def _gone(fed: Fed, job: str) -> bool:
    return await fed.rb(job) is None and not await fed.works(job)


def test_data_files_exist() -> None:
    assert Path(CLUSTERS).exists()
