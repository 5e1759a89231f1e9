"""cluster-b is too fragmented for its weighted share: the optimizer's division runs, nothing half-starts."""

from __future__ import annotations

import pytest

from e2e.harness import (
    DATA,
    EXAMPLES,
    Recorder,
    api,
    apply,
    capacity_reported,
    job_phase,
    named,
    seed_one,
    until,
)
from e2e.test_split import replay
from federation.demo.processes import ClusterSpec, System

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(240)]

#: Karmada's 1:2 split of 8 x 8-GPU workers is a 3 / b 5, but cluster-b has only 3 nodes with 8 free
#: GPUs: the closest feasible division is a 5 / b 3 (README "How placement decides").
OPTIMIZER_SPLIT = {"cluster-a": 5, "cluster-b": 3}


async def test_fragmented_cluster_gets_the_optimizers_split(systems) -> None:  # type: ignore[no-untyped-def]
    system: System = systems([ClusterSpec("cluster-a", EXAMPLES / "clusters" / "cluster-a.yaml"),
                              ClusterSpec("cluster-b", DATA / "cluster-b-fragmented.yaml")])
    job = named(seed_one("job-gpu-dist-training.yaml"), "fragmented-training", seconds=60)
    async with api(system) as rc, Recorder(rc, "works") as works:
        await capacity_reported(rc, system)  # placement counts on every cluster's capacity
        await apply(rc, seed_one("propagationpolicy-volcano-job-policy.yaml"), job)
        done = await until(lambda: job_phase(rc, "fragmented-training", "Completed"), 120,
                           "fragmented-training Completed")

    seen = replay(works.events, "fragmented-training")
    first = {c: sum(t["replicas"] for t in s["workload"]["manifests"][0]["spec"]["tasks"])
             for c, s in seen["first_spec"].items()}
    assert first == OPTIMIZER_SPLIT, "the first placement dispatched is already the feasible one"
    generations = {int(w["spec"]["placement"]["generation"]) for _, w in works.events
                   if (w["metadata"].get("labels") or {}).get("caldera.io/job") == "default.fragmented-training"}
    assert len(generations) == 1, f"no share had to be cancelled and re-placed: {generations}"
    assert seen["reserved_first"] == {"cluster-a": True, "cluster-b": True}
    assert seen["started_together"] is True, "no share ran before every share had reserved"
    assert {c["name"]: c["replicas"] for c in done["status"]["clusters"]} == OPTIMIZER_SPLIT
    assert {c["name"]: c["minAvailable"] for c in done["status"]["clusters"]} == OPTIMIZER_SPLIT
