"""Two-phase cancel: cluster-b cannot reserve its share (its agent's scheduler only enqueues), so every
share is cancelled, cluster-b's estimate is lowered by what it failed to reserve, and the job is placed
again without it; nothing ever runs on cluster-b."""

from __future__ import annotations

from typing import Any

import pytest

from e2e.harness import (
    DATA,
    EXAMPLES,
    Recorder,
    api,
    apply,
    capacity_reported,
    gpu_job,
    job_phase,
    seed_one,
    until,
)
from federation.demo.processes import ClusterSpec, System

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(240)]


def b_shares_by_generation(works: Recorder) -> dict[int, int]:
    """generation -> replicas the federation gave cluster-b (0 when it left cluster-b out)."""
    placed: dict[int, dict[str, int]] = {}
    for _, work in works.events:
        if (work["metadata"].get("labels") or {}).get("caldera.io/job") != "default.cancel-training":
            continue
        cluster, generation = _share(work)[:2]
        tasks = work["spec"]["workload"]["manifests"][0]["spec"]["tasks"]
        placed.setdefault(generation, {})[cluster] = sum(t["replicas"] for t in tasks)
    return {g: c.get("cluster-b", 0) for g, c in sorted(placed.items())}


def _share(work: dict[str, Any]) -> tuple[str, int, bool, bool, int]:
    """(cluster, generation, hold, cancelled, running pods) of one Work event."""
    placement = work["spec"].get("placement") or {}
    statuses = (work.get("status") or {}).get("manifestStatuses") or [{}]
    running = int(((statuses[0].get("status") or {}).get("running")) or 0)
    return (work["metadata"]["namespace"].removeprefix("karmada-es-"), int(placement.get("generation", 0)),
            bool(placement.get("hold")), bool(placement.get("cancelled")), running)


async def test_share_that_cannot_reserve_cancels_all_and_replaces(systems) -> None:  # type: ignore[no-untyped-def]
    never = ["--scheduler-conf", str(DATA / "scheduler-conf-never-allocates.yaml")]
    system: System = systems([ClusterSpec("cluster-a", EXAMPLES / "clusters" / "cluster-a.yaml"),
                              ClusterSpec("cluster-b", DATA / "cluster-b-three-nodes.yaml", never)])
    # 4 x 8 GPUs: the 1:2 policy gives cluster-a 1 and cluster-b 3 (all of its nodes); cluster-a alone
    # could hold it all. Once cluster-b's estimate is lowered by the share it failed to reserve, it is out.
    job = gpu_job("cancel-training", 4, 8, seconds=40)
    job["metadata"]["annotations"]["caldera.io/reserve-timeout-seconds"] = "5"
    async with api(system) as rc, Recorder(rc, "works") as works:
        await capacity_reported(rc, system)  # placement counts on every cluster's capacity
        await apply(rc, seed_one("propagationpolicy-volcano-job-policy.yaml"), job)

        async def completed_with_lowered_estimates() -> Any:
            # after each cancelled generation, cluster-b's estimate is lowered: its share must shrink
            b = list(b_shares_by_generation(works).values())
            assert all(later < earlier or later == 0 for earlier, later in zip(b, b[1:], strict=False)), \
                f"re-placement after a cancel gave cluster-b the same share again: {b_shares_by_generation(works)}"
            return await job_phase(rc, "cancel-training", "Completed")

        done = await until(completed_with_lowered_estimates, 150, "cancel-training Completed")

    events = [_share(w) for _, w in works.events
              if (w["metadata"].get("labels") or {}).get("caldera.io/job") == "default.cancel-training"]
    first_generation = min(g for _, g, _, _, _ in events)
    first = {c for c, g, _, _, _ in events if g == first_generation}
    assert first == {"cluster-a", "cluster-b"}, "the first placement divides the gang over both clusters"
    assert all(hold for _, g, hold, cancelled, _ in events if g == first_generation and not cancelled)
    cancelled = {c for c, g, _, was_cancelled, _ in events if g == first_generation and was_cancelled}
    assert cancelled == {"cluster-a", "cluster-b"}, "every share of the failed generation is cancelled"
    assert not any(running for c, g, _, _, running in events if g == first_generation), "nothing half-started"
    assert not any(running for c, _, _, _, running in events if c == "cluster-b"), "cluster-b never ran a pod"
    final = {c["name"]: c["replicas"] for c in done["status"]["clusters"]}
    assert final == {"cluster-a": 4}
    assert max(g for _, g, _, _, _ in events) > first_generation
