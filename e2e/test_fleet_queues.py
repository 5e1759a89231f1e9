"""One fleet, one set of queues: two agents, a Queue capped at 16 GPUs, six one-pod Jobs of 8 GPUs
under a 1:1 policy. At no moment do more than two of them hold pods across both clusters; the rest
wait at the federation (no Work anywhere, a QueueCapped condition naming the numbers) and go, one by
one, wherever room is, as the running ones finish.

Then reclaim across clusters (the federation runs a conf whose actions name ``reclaim``): queue
team-a fills both clusters with three gangs of 8 × 8 GPUs; team-b's one Job waits for nothing: one
whole gang of team-a leaves the one cluster it ran on, team-b's Job runs there and completes, and the
evicted gang waits at the federation for its queue's share again."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes_asyncio.client.exceptions import ApiException

from e2e.conftest import SystemFactory
from e2e.harness import DATA, WORK, Recorder, api, apply, capacity_reported, gpu_job, job_phase, until
from federation.demo.processes import System
from policies.kinds import resolve
from tests.policy_builders import one_to_one_policy

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(240)]

QUEUE = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "capped"},
         "spec": {"weight": 3, "capability": {"nvidia.com/gpu": "16"}}}
POLICY = one_to_one_policy(["cluster-a", "cluster-b"])
NAMES = [f"capped-{i}" for i in range(6)]
BINDINGS = resolve("resourcebindings")
EVENTS = resolve("events")
CLUSTERS = resolve("clusters")


@pytest.fixture(scope="module")
def seed_system(module_systems: SystemFactory) -> System:
    """The seed's two clusters; the federation's conf adds the reclaim action (no effect on the cap test)."""
    return module_systems(serve_args=("--scheduler-conf", str(DATA / "fleet-reclaim.conf")))


def _running(work: dict[str, Any]) -> int:
    statuses = (work.get("status") or {}).get("manifestStatuses") or [{}]
    return int(((statuses[0].get("status") or {}).get("running")) or 0)


def peak_running_jobs(events: list[tuple[str, dict[str, Any]]]) -> int:
    """The most jobs of ours with a running pod at once, over the Work event stream."""
    running: dict[str, int] = {}
    peak = 0
    for kind, work in events:
        job = ((work["metadata"].get("labels") or {}).get("caldera.io/job") or "").removeprefix("default.")
        if job not in NAMES:
            continue
        key = f"{job}@{work['metadata']['namespace']}"
        running[key] = 0 if kind == "DELETED" else _running(work)
        peak = max(peak, len({k.split("@")[0] for k, n in running.items() if n > 0}))
    return peak


async def _waiting_at_federation(rc: Any) -> dict[str, str] | None:
    """Every job either placed or waiting with QueueCapped and no Work; None until all have a condition."""
    out = {}
    for name in NAMES:
        try:
            rb = await rc.get(BINDINGS, f"{name}-job", "default")
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise
        cond = next((c for c in ((rb or {}).get("status") or {}).get("conditions") or [] if c["type"] == "Scheduled"),
                    None)
        if cond is None:
            return None
        out[name] = cond["reason"] if cond["reason"] != "QueueCapped" else cond["message"]
    return out


async def test_a_queue_capability_holds_across_both_clusters_and_the_rest_waits(seed_system: System) -> None:
    jobs = [gpu_job(name, 1, 8, 30, queue="capped") for name in NAMES]
    async with api(seed_system) as rc, Recorder(rc, "works") as works:
        await capacity_reported(rc, seed_system)
        await apply(rc, QUEUE, POLICY)
        await apply(rc, *jobs)
        state = await until(lambda: _waiting_at_federation(rc), 60, "every job placed or waiting at the federation")
        placed = [n for n, s in state.items() if s == "Success"]
        waiting = [n for n, s in state.items() if s != "Success"]
        assert len(placed) == 2, state
        for name in waiting:
            assert state[name] == ("queue capped capped: nvidia.com/gpu 16/16 allocated across the fleet; "
                                   "this job needs 8"), state
            listed = await rc.list(WORK, label_selector=f"caldera.io/job=default.{name}")
            assert not listed.get("items"), f"{name} dispatched before its queue admitted it"
        for name in NAMES:
            await until(lambda n=name: job_phase(rc, n, "Completed"), 150, f"{name} Completed")
    assert peak_running_jobs(works.events) == 2  # the cap, fleet-wide: 16 GPUs = two jobs, never more
    clusters = {w["metadata"]["namespace"] for _, w in works.events
                if (w["metadata"].get("labels") or {}).get("caldera.io/job", "").removeprefix("default.") in NAMES}
    assert clusters == {"karmada-es-cluster-a", "karmada-es-cluster-b"}  # the waiting jobs went wherever room was


RECLAIM_QUEUES = [{"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": name},
                   "spec": {"weight": 1, "reclaimable": True}} for name in ("team-a", "team-b")]
RECLAIM_POLICY = {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
                  "metadata": {"name": "reclaim-e2e"},
                  "spec": {"resourceSelectors": [{"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
                                                  "labelSelector": {"matchLabels": {"e2e": "reclaim"}}}],
                           "placement": {"clusterAffinity": {"clusterNames": ["cluster-a", "cluster-b"]},
                                         "replicaScheduling": {"replicaSchedulingType": "Divided",
                                                               "replicaDivisionPreference": "Aggregated"}}}}
TEAM_A = [f"team-a-{i}" for i in range(3)]


def _labelled(job: dict[str, Any]) -> dict[str, Any]:
    job["metadata"]["labels"] = {"e2e": "reclaim"}
    return job


async def _clusters_of(rc: Any, name: str) -> set[str]:
    listed = await rc.list(WORK, label_selector=f"caldera.io/job=default.{name}")
    return {w["metadata"]["namespace"].removeprefix("karmada-es-") for w in listed.get("items") or []}


async def _fleet_full(rc: Any) -> bool:
    """The agents' reports show team-a's pods: placement then sees no room (not a report still on its way)."""
    for name in ("cluster-a", "cluster-b"):
        summary = ((await rc.get(CLUSTERS, name)).get("status") or {}).get("resourceSummary") or {}
        if (summary.get("allocated") or {}).get("nvidia.com/gpu") != (summary.get("allocatable") or {}).get(
                "nvidia.com/gpu"):
            return False
    return True


async def test_a_starved_queue_reclaims_one_whole_gang_from_one_cluster(seed_system: System) -> None:
    async with api(seed_system) as rc, Recorder(rc, "works") as works:
        await capacity_reported(rc, seed_system)
        await apply(rc, *RECLAIM_QUEUES, RECLAIM_POLICY)
        for name in TEAM_A:  # 3 × 64 GPUs: cluster-a (64) and cluster-b (128) full, each gang on one cluster
            await apply(rc, _labelled(gpu_job(name, 8, 8, 3000, queue="team-a")))
        for name in TEAM_A:
            await until(lambda n=name: job_phase(rc, n, "Running"), 60, f"{name} Running")
        where = {name: await _clusters_of(rc, name) for name in TEAM_A}
        assert all(len(c) == 1 for c in where.values()), where
        await until(lambda: _fleet_full(rc), 30, "both clusters reporting every GPU allocated")
        await apply(rc, _labelled(gpu_job("team-b-0", 1, 8, 20, queue="team-b")))
        await until(lambda: job_phase(rc, "team-b-0", "Completed"), 60, "team-b-0 Completed in reclaimed room")

        async def reclaimed() -> list[dict[str, Any]] | None:
            items = (await rc.list(EVENTS, namespace="default")).get("items") or []
            found = [e for e in items if e.get("reason") == "Reclaimed"
                     and (e.get("involvedObject") or {}).get("name") in TEAM_A]
            return found or None

        events = await until(reclaimed, 10, "a Reclaimed Event")
        ran_on: dict[str, set[str]] = {}
        for _, work in works.events:
            job = ((work["metadata"].get("labels") or {}).get("caldera.io/job") or "").removeprefix("default.")
            ran_on.setdefault(job, set()).add(work["metadata"]["namespace"].removeprefix("karmada-es-"))
        victims = {e["involvedObject"]["name"] for e in events}
        assert len(victims) == 1, events  # one gang of 64 frees enough: never more
        victim = victims.pop()
        assert ("reclaimed by default/team-b-0 of queue team-b (share 0.00 → 1.00 of its deserved) from queue "
                f"team-a (share 1.04 → 0.70 of its deserved) on {next(iter(where[victim]))}") in events[0]["message"]
        deleted: dict[str, set[str]] = {}
        for kind, work in works.events:
            job = ((work["metadata"].get("labels") or {}).get("caldera.io/job") or "").removeprefix("default.")
            if kind == "DELETED":
                deleted.setdefault(job, set()).add(work["metadata"]["namespace"].removeprefix("karmada-es-"))
        assert deleted.get(victim) == where[victim], deleted  # the whole gang left its one cluster
        for name in TEAM_A:
            if name != victim:
                assert name not in deleted and (await _clusters_of(rc, name)) == where[name]  # not touched
                assert await job_phase(rc, name, "Running"), name
        assert where[victim] <= ran_on["team-b-0"], ran_on  # team-b's job ran where the gang left
