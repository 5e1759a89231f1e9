"""After the release a spanning gang completes or aborts, through the API: a share that does not
start within the deadline, or whose cluster turns Unknown, tears the whole gang down; its
``PodEvicted`` policy then restarts it (a new generation) or ends it."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from tests.controllers_fed.conftest import DATA, SEED, Fed, load, until
from tests.controllers_fed.test_placement_dispatch import _reasons, _works_of_generation


async def released_gang(fed: Fed, name: str, annotations: dict[str, str] | None = None,
                        policies: list[dict[str, str]] | None = None,
                        tolerations: list[dict[str, str]] | None = None) -> None:
    for cluster in load(DATA / "clusters-small-a.yaml"):
        await fed.apply(cluster)
    for doc in load(SEED / "propagationpolicy-volcano-job-policy.yaml"):
        if tolerations is not None:
            doc["spec"]["placement"]["clusterTolerations"] = tolerations
        await fed.apply(doc)
    job = load(SEED / "job-gpu-dist-training.yaml")[0]
    job["metadata"]["name"] = name
    job["metadata"]["annotations"] = dict(annotations or {})
    if policies is not None:
        job["spec"]["policies"] = policies
    await fed.apply(job)
    await until(lambda: _works_of_generation(fed, name, 1, 2), "generation 1 shares")
    for cluster in ("cluster-a", "cluster-b"):
        await fed.gang(cluster, name, 1, "Reserved")

    async def released() -> Any:
        works = await fed.works(name)
        return works if works and all(not w["spec"]["placement"]["hold"] for w in works.values()) else None

    await until(released, "the release")


async def _note(fed: Fed, job: str, key: str) -> Any:
    rb = await fed.rb(job)
    return (((rb or {}).get("metadata") or {}).get("annotations") or {}).get(key)


async def test_share_not_started_within_the_deadline_tears_the_gang_down_and_restarts_it(fed: Fed) -> None:
    await released_gang(fed, "late", {"caldera.io/start-deadline-seconds": "2"})
    await fed.gang("cluster-a", "late", 1, "Running")
    await fed.gang("cluster-b", "late", 1, "Released")  # bound, never running
    raw = await until(lambda: _note(fed, "late", "caldera.io/torn-down"), "the teardown")
    note = json.loads(raw)
    assert note["generation"] == 1 and "cluster-b" in note["clusters"] and note["unknown"] == []
    assert "not started within 2s of the release" in note["reason"]
    assert await until(lambda: _reasons(fed, "late", "TornDown"), "a TornDown event")
    second = await until(lambda: _works_of_generation(fed, "late", 2, 2), "generation 2", timeout=15)
    assert all(w["spec"]["placement"]["hold"] for w in second.values()), "a new gang attempt: two-phase again"


async def test_unknown_cluster_tears_a_running_gang_down_and_abort_job_ends_it(fed: Fed) -> None:
    await released_gang(fed, "cut", policies=[{"event": "PodEvicted", "action": "AbortJob"}])
    for cluster in ("cluster-a", "cluster-b"):
        await fed.gang(cluster, "cut", 1, "Running")
    await until(lambda: _note(fed, "cut", "caldera.io/started-generation"), "every share started")
    await fed.patch("cluster.karmada.io/v1alpha1", "Cluster", "cluster-a",
                    {"spec": {"taints": [{"key": "cluster.karmada.io/unreachable", "effect": "NoSchedule"}]}})
    note = json.loads(await until(lambda: _note(fed, "cut", "caldera.io/torn-down"), "the teardown"))
    assert note["unknown"] == ["cluster-a"] and "Unknown after the release" in note["reason"]
    ended = json.loads(await until(lambda: _note(fed, "cut", "caldera.io/ended"), "the job ended by its policy"))
    assert ended["phase"] == "Aborted"
    rb = await fed.rb("cut")
    assert rb is not None and not rb["spec"].get("clusters")


async def test_a_gang_its_policy_pins_keeps_running_when_a_cluster_is_unknown(fed: Fed) -> None:
    forever = [{"key": "cluster.karmada.io/unreachable", "operator": "Exists", "effect": "NoExecute"}]
    await released_gang(fed, "pinned", tolerations=forever)
    works = await fed.works("pinned")
    assert all(w["spec"]["placement"]["failover"] is False for w in works.values())
    for cluster in ("cluster-a", "cluster-b"):
        await fed.gang(cluster, "pinned", 1, "Running")
    await until(lambda: _note(fed, "pinned", "caldera.io/started-generation"), "every share started")
    await fed.patch("cluster.karmada.io/v1alpha1", "Cluster", "cluster-a",
                    {"spec": {"taints": [{"key": "cluster.karmada.io/unreachable", "effect": "NoSchedule"},
                                         {"key": "cluster.karmada.io/unreachable", "effect": "NoExecute"}]}})
    for _ in range(40):  # 2 s in which dispatch reacts to the taint within milliseconds: nothing may change
        assert await _note(fed, "pinned", "caldera.io/torn-down") is None
        works = await fed.works("pinned")
        assert set(works) == {"cluster-a", "cluster-b"}
        assert all(w["spec"]["placement"]["generation"] == 1 and not w["spec"]["placement"]["cancelled"]
                   for w in works.values())
        await asyncio.sleep(0.05)
