"""Two-phase cancel and re-place, and failover on a NoExecute taint, through the API."""

from __future__ import annotations

import json
import time

from tests.controllers_fed.conftest import DATA, SEED, Fed, load, until
from tests.controllers_fed.test_placement_dispatch import _reasons, _works_of_generation


async def setup(fed: Fed, name: str, timeout: int | None = None) -> None:
    for cluster in load(DATA / "clusters-small-a.yaml"):
        await fed.apply(cluster)
    for doc in load(SEED / "propagationpolicy-volcano-job-policy.yaml"):
        await fed.apply(doc)
    job = load(SEED / "job-gpu-dist-training.yaml")[0]
    job["metadata"]["name"] = name
    if timeout is not None:
        job["metadata"]["annotations"] = {"caldera.io/reserve-timeout-seconds": str(timeout)}
    await fed.apply(job)


async def test_share_not_reserved_in_time_cancels_all_and_replaces_with_lower_estimate(fed: Fed) -> None:
    await setup(fed, "gang", timeout=1)
    first = await until(lambda: _works_of_generation(fed, "gang", 1, 2), "generation 1 shares")
    assert {c: w["spec"]["workload"]["manifests"][0]["spec"]["tasks"][0]["replicas"] for c, w in first.items()} == \
        {"cluster-a": 3, "cluster-b": 5}
    assert all(w["spec"]["placement"]["reserveTimeoutSeconds"] == 1 for w in first.values())
    # cluster-b reserves; cluster-a never answers for generation 1 (only a stale answer)
    await fed.gang("cluster-b", "gang", 1, "Reserved")
    await fed.gang("cluster-a", "gang", 0, "Reserved")
    rb = await until(lambda: _annotated(fed, "gang", "caldera.io/cancelled-generation"), "the cancellation")
    notes = rb["metadata"]["annotations"]
    assert notes["caldera.io/cancelled-generation"] == "1"
    assert json.loads(notes["caldera.io/reserve-caps"])["cluster-a"]["tasks"] == {"worker": 3}
    assert notes["caldera.io/reserve-attempts"] == "1"
    # generation 2: cluster-a's estimate lowered by its failed share (4 - 3 = 1 worker fits)
    second = await until(lambda: _works_of_generation(fed, "gang", 2, 2), "generation 2 shares", timeout=10)
    split = {c: w["spec"]["workload"]["manifests"][0]["spec"]["tasks"][0]["replicas"] for c, w in second.items()}
    assert split == {"cluster-a": 1, "cluster-b": 7}
    assert all(w["spec"]["placement"]["hold"] and not w["spec"]["placement"]["cancelled"] for w in second.values())
    assert await until(lambda: _reasons(fed, "gang", "Cancelled"), "a Cancelled event")


async def test_failed_share_cancels_every_share_at_once(fed: Fed) -> None:
    await setup(fed, "fails", timeout=600)
    await until(lambda: _works_of_generation(fed, "fails", 1, 2), "generation 1 shares")
    await fed.gang("cluster-b", "fails", 1, "Reserved")
    await fed.gang("cluster-a", "fails", 1, "Failed")
    cancelled = await until(lambda: _cancelled_or_replaced(fed, "fails"), "cancellation of generation 1")
    assert cancelled


async def test_no_execute_taint_replaces_the_whole_job_on_the_remaining_cluster(fed: Fed) -> None:
    await setup(fed, "moving")
    await until(lambda: _works_of_generation(fed, "moving", 1, 2), "generation 1 shares")
    await fed.gang("cluster-a", "moving", 1, "Running")
    await fed.gang("cluster-b", "moving", 1, "Running")
    # cluster health marks cluster-a unreachable past its grace period
    await fed.patch("cluster.karmada.io/v1alpha1", "Cluster", "cluster-a",
                    {"spec": {"taints": [{"key": "cluster.karmada.io/not-ready", "effect": "NoSchedule"},
                                         {"key": "cluster.karmada.io/not-ready", "effect": "NoExecute"}]}})
    works = await until(lambda: _works_of_generation(fed, "moving", 2, 1), "the job re-placed on cluster-b alone")
    assert list(works) == ["cluster-b"]
    placement = works["cluster-b"]["spec"]["placement"]
    # a re-placement (cluster lost): generation 1's pods on cluster-b are fenced off, not kept
    assert placement == {"generation": 2, "hold": False, "cancelled": False, "clusters": 1,
                         "reserveTimeoutSeconds": 60, "keepsFromGeneration": 2}
    manifest = works["cluster-b"]["spec"]["workload"]["manifests"][0]
    assert manifest["spec"]["tasks"][0]["replicas"] == 8 and manifest["spec"]["minAvailable"] == 8
    assert json.loads(manifest["metadata"]["annotations"]["caldera.io/task-offsets"]) == {"worker": 0}
    rb = await fed.rb("moving")
    assert [c["name"] for c in rb["spec"]["clusters"]] == ["cluster-b"]
    cond = next(c for c in rb["status"]["conditions"] if c["type"] == "Scheduled")
    assert cond["status"] == "True" and "cluster-a" in cond["message"] and "NoExecute" in cond["message"]


async def _annotated(fed: Fed, job: str, key: str) -> dict | None:
    rb = await fed.rb(job)
    return rb if key in (((rb or {}).get("metadata") or {}).get("annotations") or {}) else None


async def _cancelled_or_replaced(fed: Fed, job: str) -> bool:
    works = await fed.works(job)
    rb = await fed.rb(job)
    notes = ((rb or {}).get("metadata") or {}).get("annotations") or {}
    return notes.get("caldera.io/cancelled-generation") == "1" and (
        all(w["spec"]["placement"]["cancelled"] for w in works.values())
        or all(w["spec"]["placement"]["generation"] == 2 for w in works.values()))


async def test_toleration_seconds_delays_the_move(fed: Fed) -> None:
    await setup(fed, "patient")
    await fed.patch("policy.karmada.io/v1alpha1", "PropagationPolicy", "volcano-job-policy",
                    {"spec": {"placement": {"clusterTolerations": [
                        {"key": "cluster.karmada.io/unreachable", "operator": "Exists", "effect": "NoExecute",
                         "tolerationSeconds": 1}]}}}, "default")
    await until(lambda: _works_of_generation(fed, "patient", 1, 2), "generation 1 shares")
    from federation.controllers.common import rfc3339

    await fed.patch("cluster.karmada.io/v1alpha1", "Cluster", "cluster-a",
                    {"spec": {"taints": [{"key": "cluster.karmada.io/unreachable", "effect": "NoExecute",
                                          "timeAdded": rfc3339(time.time())}]}})
    works = await until(lambda: _works_of_generation(fed, "patient", 2, 1), "the move after tolerationSeconds")
    assert list(works) == ["cluster-b"]
    rb = await fed.rb("patient")
    cond = next(c for c in rb["status"]["conditions"] if c["type"] == "Scheduled")
    assert "cluster lost (cluster-a: untolerated taint cluster.karmada.io/unreachable:NoExecute)" in cond["message"]
