"""Reclaim across clusters in the live controllers: queue a fills both clusters while alone; queue b's
Job then fits nowhere, so one whole gang of a (the queue above its deserved share) is evicted, its
binding cleared with reason Reclaimed and an Event naming the reclaimer, the victim and both queues'
shares; b's Job is placed in the room it freed, and the victim waits at the federation for its queue's
share again, or ends when its PodEvicted policy says so."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from federation.controllers.common import ControllerOptions
from federation.fleet_queues import FleetConf
from tests.controllers_fed.conftest import FAST, GPU_NODE_FREE, Fed, ready_cluster, until

JOB_API = "batch.volcano.sh/v1alpha1"
QUEUES = [{"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": name},
           "spec": {"weight": 1, "reclaimable": True}} for name in ("team-a", "team-b")]
POLICY = {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy", "metadata": {"name": "anywhere"},
          "spec": {"resourceSelectors": [{"apiVersion": JOB_API, "kind": "Job"}],
                   "placement": {"clusterAffinity": {"clusterNames": ["cluster-a", "cluster-b"]},
                                 "replicaScheduling": {"replicaSchedulingType": "Divided",
                                                       "replicaDivisionPreference": "Aggregated"}}}}
A_JOBS = [f"a-{i}" for i in range(4)]


@pytest.fixture
def options() -> ControllerOptions:
    return dataclasses.replace(FAST, fleet_queues=FleetConf(reclaim=True))


def _cluster(name: str) -> dict[str, Any]:
    return ready_cluster(name, 2, GPU_NODE_FREE)


def _job(name: str, queue: str, policies: list[dict[str, str]]) -> dict[str, Any]:
    pod = {"spec": {"containers": [{"name": "w", "image": "busybox",
                                    "resources": {"limits": {"nvidia.com/gpu": "8", "cpu": "8"}}}]}}
    return {"apiVersion": JOB_API, "kind": "Job", "metadata": {"name": name},
            "spec": {"minAvailable": 1, "schedulerName": "volcano", "queue": queue, "policies": policies,
                     "tasks": [{"name": "worker", "replicas": 1, "template": pod}]}}


async def _clusters_of(fed: Fed, name: str) -> list[str] | None:
    rb = await fed.rb(name)
    return [c["name"] for c in ((rb or {}).get("spec") or {}).get("clusters") or []] or None


def _scheduled(rb: dict[str, Any] | None) -> dict[str, Any]:
    return next((c for c in ((rb or {}).get("status") or {}).get("conditions") or [] if c["type"] == "Scheduled"), {})


@pytest.mark.parametrize("policies, ended", [([], ""), ([{"event": "PodEvicted", "action": "AbortJob"}], "Aborted")],
                         ids=["restart", "abort"])
async def test_a_starved_queue_reclaims_one_whole_gang(fed: Fed, policies: list[dict[str, str]], ended: str) -> None:
    for obj in (*QUEUES, _cluster("cluster-a"), _cluster("cluster-b"), POLICY):
        await fed.apply(obj)
    for name in A_JOBS:
        await fed.apply(_job(name, "team-a", policies))

    async def all_placed() -> bool:
        return all([await _clusters_of(fed, n) for n in A_JOBS])

    await until(all_placed, "team-a's jobs placed")  # team-a alone fills the fleet
    await fed.apply(_job("b-0", "team-b", []))
    where = await until(lambda: _clusters_of(fed, "b-0"), "b-0 placed in reclaimed room")

    async def victims() -> list[str] | None:
        gone = [n for n in A_JOBS if not await _clusters_of(fed, n)]
        return gone or None

    gone = await victims()
    assert gone is not None and len(gone) == 1, gone  # one gang of 8 frees enough: never more
    victim = gone[0]
    events = await fed.events(victim)
    reclaimed = [e["message"] for e in events if e["reason"] == "Reclaimed"]
    assert len(reclaimed) == 1 and reclaimed[0].startswith(
        f"default/{victim} reclaimed by default/b-0 of queue team-b (share 0.00 → 1.00 of its deserved) from queue "
        f"team-a (share 1.33 → 1.00 of its deserved) on {where[0]}"), reclaimed
    assert any(e["reason"] == "Reclaiming" and victim in e["message"] for e in await fed.events("b-0"))
    rb = await fed.rb(victim)
    if ended:  # AbortJob: the job ends, as for a lost cluster
        assert rb is not None and '"phase":"Aborted"' in rb["metadata"]["annotations"]["caldera.io/ended"], rb
    else:  # restart: it waits for its queue's share again, holding no cluster
        async def waits() -> dict[str, Any] | None:
            cond = _scheduled(await fed.rb(victim))
            return cond if cond.get("reason") == "QueueShare" else None

        cond = await until(waits, f"{victim} waiting for team-a's share")
        assert "queue team-a at its fair share" in cond["message"], cond
        assert not await fed.works(victim)
