"""Admission before placement: a Queue's capability holds across the fleet, and Jobs its queue has not
admitted wait at the federation (no cluster in their binding, a condition and an Event saying why),
then move on as soon as a placed Job of the queue finishes; a Kubeflow kind is admitted the same way;
the Queue's status carries the fleet's numbers."""

from __future__ import annotations

from typing import Any

from tests.controllers_fed.conftest import GPU_NODE_FREE, SEED, Fed, load, ready_cluster, until
from tests.policy_builders import one_to_one_policy

JOB_API = "batch.volcano.sh/v1alpha1"
QUEUE = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "ai-training"},
         "spec": {"weight": 3, "capability": {"nvidia.com/gpu": "16"}}}


def _cluster(name: str) -> dict[str, Any]:
    return ready_cluster(name, 4, GPU_NODE_FREE)


def _job(name: str, queue: str = "ai-training") -> dict[str, Any]:
    pod = {"spec": {"containers": [{"name": "w", "image": "busybox",
                                    "resources": {"limits": {"nvidia.com/gpu": "8", "cpu": "8"}}}]}}
    return {"apiVersion": JOB_API, "kind": "Job", "metadata": {"name": name},
            "spec": {"minAvailable": 1, "schedulerName": "volcano", "queue": queue,
                     "tasks": [{"name": "worker", "replicas": 1, "template": pod}]}}


POLICY = one_to_one_policy(["cluster-a", "cluster-b"])
NAMES = [f"gpu-{i}" for i in range(4)]


async def _scheduled(fed: Fed) -> dict[str, tuple[str, str, int]] | None:
    out = {}
    for name in NAMES:
        rb = await fed.rb(name)
        cond = next((c for c in ((rb or {}).get("status") or {}).get("conditions") or [] if c["type"] == "Scheduled"),
                    None)
        if cond is None:
            return None
        out[name] = (cond["reason"], cond["message"], len((rb or {}).get("spec", {}).get("clusters") or []))
    return out


async def test_capability_holds_fleet_wide_and_the_rest_waits_at_the_federation(fed: Fed) -> None:
    for obj in (QUEUE, _cluster("cluster-a"), _cluster("cluster-b"), POLICY):
        await fed.apply(obj)
    for name in NAMES:
        await fed.apply(_job(name))
    state = await until(lambda: _scheduled(fed), "a Scheduled condition on every job")
    placed = sorted(n for n, (reason, _, clusters) in state.items() if reason == "Success" and clusters)
    waiting = sorted(n for n, (reason, _, clusters) in state.items() if reason == "QueueCapped" and not clusters)
    assert len(placed) == 2 and len(waiting) == 2, state
    for name in waiting:
        assert state[name][1] == ("queue ai-training capped: nvidia.com/gpu 16/16 allocated across the fleet; "
                                  "this job needs 8"), state[name]
        assert not await fed.works(name), f"{name} was dispatched before its queue admitted it"
        events = await fed.events(name)
        assert any(e["reason"] == "QueueCapped" and "16/16" in e["message"] for e in events), events
    # a placed job completes: the oldest waiting job is admitted and placed at once (no timer)
    await fed.patch(JOB_API, "Job", placed[0], {"status": {"state": {"phase": "Completed"}}}, "default", "status")

    async def moved() -> dict[str, tuple[str, str, int]] | None:
        now = await _scheduled(fed)
        return now if now and sum(1 for n in waiting if now[n][0] == "Success") == 1 else None

    now = await until(moved, "one waiting job admitted after the free")
    assert now[waiting[0]][0] == "Success", now  # creation order within the queue
    assert now[waiting[1]][0] == "QueueCapped", now


async def _reason(fed: Fed, name: str) -> str | None:
    rb = await fed.rb(name)
    cond = next((c for c in ((rb or {}).get("status") or {}).get("conditions") or [] if c["type"] == "Scheduled"), None)
    return f"{cond['reason']}: {cond['message']}" if cond else None


async def _reason_is(fed: Fed, name: str, prefix: str) -> str | None:
    text = await _reason(fed, name)
    return text if text and text.startswith(prefix) else None


async def test_a_closed_queue_admits_nothing_until_it_opens(fed: Fed) -> None:
    small = {**QUEUE, "metadata": {"name": "small"}, "spec": {"capability": {"nvidia.com/gpu": "8"}}}
    for obj in (small, _cluster("cluster-a"), _cluster("cluster-b"), POLICY):
        await fed.apply(obj)
    await fed.apply(_job("first", "small"))
    await until(lambda: _reason_is(fed, "first", "Success"), "the first job placed")
    await fed.apply(_job("second", "small"))
    await until(lambda: _reason_is(fed, "second", "QueueCapped"), "the second job capped")
    await fed.patch("scheduling.volcano.sh/v1beta1", "Queue", "small", {"status": {"state": "Closed"}}, None, "status")
    await fed.patch(JOB_API, "Job", "first", {"status": {"state": {"phase": "Completed"}}}, "default", "status")
    text = await until(lambda: _reason_is(fed, "second", "QueueClosed"), "the second job held by the closed queue")
    assert text == "QueueClosed: queue small is Closed: it admits no new job"
    assert not await fed.works("second")
    await fed.patch("scheduling.volcano.sh/v1beta1", "Queue", "small", {"status": {"state": "Open"}}, None, "status")
    await until(lambda: _reason_is(fed, "second", "Success"), "the second job placed once the queue opens")


async def test_queue_status_is_the_fleet_total_with_a_per_cluster_breakdown(fed: Fed) -> None:
    for obj in (QUEUE, _cluster("cluster-a"), _cluster("cluster-b"), POLICY):
        await fed.apply(obj)
    for name in NAMES:
        await fed.apply(_job(name))
    for cluster, gpus in (("cluster-a", "8"), ("cluster-b", "8")):  # what each agent reports the queue holds there
        await fed.patch("cluster.karmada.io/v1alpha1", "Cluster", cluster, {"status": {"queues": [
            {"name": "ai-training", "allocated": {"nvidia.com/gpu": gpus}}]}}, None, "status")

    async def status() -> dict[str, Any] | None:
        queue = await fed.get("scheduling.volcano.sh/v1beta1", "Queue", "ai-training")
        found = (queue or {}).get("status") or {}
        return found if found.get("pending") == 2 and len(found.get("allocatedByCluster") or {}) == 2 else None

    found = await until(status, "the queue's fleet status")
    assert found["allocated"] == {"nvidia.com/gpu": "16"}
    assert found["allocatedByCluster"] == {"cluster-a": {"nvidia.com/gpu": "8"}, "cluster-b": {"nvidia.com/gpu": "8"}}
    assert (found["pending"], found["inqueue"], found["running"], found["state"]) == (2, 2, 0, "Open")
    assert found["deserved"] == {"cpu": "16", "nvidia.com/gpu": "16"}  # one queue asks: all it asks, within its capability


async def test_a_kubeflow_job_is_admitted_against_its_queue_too(fed: Fed) -> None:
    """The seed's PyTorchJob (master + 3 workers, 8 GPUs each, queue ai-training) becomes a Volcano Job on
    admission; with ai-training capped at 16 GPUs fleet-wide its 32 GPUs wait at the federation."""
    for obj in (QUEUE, _cluster("cluster-a"), _cluster("cluster-b"), POLICY,
                {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high-priority"},
                 "value": 1000}):
        await fed.apply(obj)
    (pytorch,) = load(SEED / "pytorchjob-pytorch-dist.yaml")
    await fed.apply(pytorch)
    text = await until(lambda: _reason_is(fed, "pytorch-dist", "QueueCapped"), "the converted Job held by its queue")
    assert text.endswith("queue ai-training capped: nvidia.com/gpu 0/16 allocated across the fleet; this job needs 32")
    assert not await fed.works("pytorch-dist")
