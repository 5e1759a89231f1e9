"""The agent against the real federation API server on loopback (in-process, plain HTTP).

The server runs with no controllers: the test plays dispatch (writes Works by hand, as
docs/protocol.md describes) and the health controller (writes Cluster spec.taints). The agent
talks to it through the agent-role kubeconfig, exactly as ``caldera agent`` does.
"""

from __future__ import annotations

import pytest
from live_support import (
    Federation,
    eventually,
    job_phase,
    job_state,
    job_work,
    running_agent,
    write_kubeconfig,
)

from federation.apiserver.server import ApiServer, ServerConfig

pytestmark = pytest.mark.slow
NS = "karmada-es-cluster-a"
HELD = {"generation": 4, "hold": True, "cancelled": False, "clusters": 2, "reserveTimeoutSeconds": 60}


@pytest.fixture
async def live(tmp_path):
    async with ApiServer(ServerConfig(data_dir=tmp_path / "fed")) as server:
        kubeconfig = write_kubeconfig(server, "agent:cluster-a", tmp_path / "agent.kubeconfig")
        async with server.api_client() as api_client:
            federation = Federation(api_client)
            async with running_agent(kubeconfig) as (agent, sync):
                yield federation, agent, sync


async def test_registers_renews_lease_and_publishes_capacity(live) -> None:
    federation, agent, sync = live
    cluster = await eventually(lambda: federation.cluster("cluster-a"), what="Cluster registered")
    assert cluster["spec"]["syncMode"] == "Pull"
    lease = await eventually(lambda: federation.lease("cluster-a"), what="Lease created")
    assert lease["spec"]["holderIdentity"] == "cluster-a" and lease["spec"]["leaseDurationSeconds"] == 40
    first = lease["spec"]["renewTime"]

    async def renewed():
        current = await federation.lease("cluster-a")
        return current["spec"]["renewTime"] > first
    await eventually(renewed, what="Lease renewed")

    async def published():
        status = ((await federation.cluster("cluster-a")) or {}).get("status") or {}
        return status if status.get("nodeShapes") else None
    status = await eventually(published, what="capacity published")
    assert status["resourceSummary"]["allocatable"]["nvidia.com/gpu"] == "16"
    assert status["nodeSummary"] == {"totalNum": 2, "readyNum": 2}
    assert status["gpus"] == [{"product": "NVIDIA-A100-SXM4-80GB", "total": 16, "free": 16, "fragmented": 0}]
    assert sum(shape["count"] for shape in status["nodeShapes"]) == 2
    assert {c["type"]: c["status"] for c in status["conditions"]}["Ready"] == "True"


async def test_agent_does_not_clobber_taints_written_by_the_federation(live) -> None:
    federation, agent, sync = live
    await eventually(lambda: federation.cluster("cluster-a"), what="Cluster registered")
    taint = {"key": "cluster.karmada.io/not-ready", "effect": "NoSchedule"}
    await federation.patch_cluster("cluster-a", {"spec": {"taints": [taint]}})
    writes = sync.status_writes
    await sync.publish_status(force=True)  # the agent writes its status after the taint ...
    await sync.register()  # ... and re-registers (as after a restart)
    assert sync.status_writes > writes
    cluster = await federation.cluster("cluster-a")
    assert cluster["spec"]["taints"] == [taint]
    assert cluster["status"]["nodeShapes"]


async def test_work_runs_to_completed_and_status_comes_back(live) -> None:
    federation, agent, sync = live
    await federation.create_work(job_work("train", replicas=3, cpu="2"))

    async def completed():
        status = await federation.work_status(NS, "team.train")
        return status if job_phase(status) == "Completed" else None
    status = await eventually(completed, what="Work Completed")
    job = job_state(status)
    assert job["succeeded"] == 3 and job.get("failed", 0) == 0
    manifest = status["manifestStatuses"][0]
    assert manifest["identifier"]["kind"] == "Job" and manifest["identifier"]["name"] == "train"
    assert manifest["health"] == "Healthy"
    assert {c["type"]: c["status"] for c in status["conditions"]}["Applied"] == "True"
    assert "gang" not in status  # a plain Karmada Work (no spec.placement): no two-phase answer


async def test_held_work_reserves_then_runs_after_release(live) -> None:
    federation, agent, sync = live
    await federation.create_work(job_work("gang", replicas=2, duration="30s", placement=HELD))

    async def gang_phase(phase: str):
        status = await federation.work_status(NS, "team.gang")
        gang = status.get("gang") or {}
        return gang if gang.get("phase") == phase else None
    reserved = await eventually(lambda: gang_phase("Reserved"), what="Reserved")
    assert reserved["generation"] == 4 and reserved["reservedUntil"]
    state = agent.works[f"{NS}/team.gang"]
    assert len(state.gang.reservations) == 2
    assert all(not p["spec"].get("nodeName") for p in agent.pods_of(state.record))
    await federation.patch_work(NS, "team.gang", {"spec": {"placement": {"hold": False}}})
    await eventually(lambda: gang_phase("Running"), what="Running after release")
    assert all(p["spec"].get("nodeName") for p in agent.pods_of(agent.works[f"{NS}/team.gang"].record))


async def test_cancelled_work_drops_its_reservation(live) -> None:
    federation, agent, sync = live
    await federation.create_work(job_work("gone", replicas=2, duration="30s", placement=HELD))
    await eventually(lambda: (agent.works.get(f"{NS}/team.gone") is not None
                              and agent.works[f"{NS}/team.gone"].gang.phase == "Reserved"), what="Reserved")
    await federation.patch_work(NS, "team.gone", {"spec": {"placement": {"cancelled": True}}})

    async def cancelled():
        status = await federation.work_status(NS, "team.gone")
        return (status.get("gang") or {}).get("phase") == "Cancelled"
    await eventually(cancelled, what="Cancelled")
    state = agent.works[f"{NS}/team.gone"]
    assert not state.gang.reservations
    await eventually(lambda: not agent.pods_of(state.record), what="unbound pods deleted")
    summary = agent.cluster_status()["resourceSummary"]
    assert "cpu" not in (summary.get("allocated") or {})


async def test_invalid_job_is_reported_and_does_not_block_others(live) -> None:
    federation, agent, sync = live
    bad = job_work("broken", replicas=2)
    bad["spec"]["workload"]["manifests"][0]["spec"]["tasks"][0]["replicas"] = -1
    await federation.create_work(bad)
    await federation.create_work(job_work("fine", replicas=1))

    async def fine_done():
        return job_phase(await federation.work_status(NS, "team.fine")) == "Completed"
    await eventually(fine_done, what="other Work Completed")

    async def reported():
        status = await federation.work_status(NS, "team.broken")
        return next((c for c in status.get("conditions") or [] if c["type"] == "Applied"), None)
    applied = await eventually(reported, what="invalid Work reported")
    assert applied["status"] == "False" and applied["reason"] == "InvalidManifest"
    assert "spec.tasks[0].replicas" in applied["message"]
    assert not agent.pods_of(agent.works[f"{NS}/team.broken"].record)


async def test_job_controller_events_are_recorded_on_the_federated_job(live) -> None:
    federation, agent, sync = live
    work = job_work("slowstart", replicas=1, namespace="default", duration="30s")
    work["spec"]["workload"]["manifests"][0]["spec"]["policies"] = [
        {"event": "PodPending", "action": "AbortJob", "timeout": "1h"}]
    await federation.create_work(work)

    async def deferred():
        listed = await federation.core.list_namespaced_event("default",
                                                             field_selector="involvedObject.uid=uid-slowstart")
        return [e for e in listed.items if e.reason == "ExecuteAction"]
    (event, *_) = await eventually(deferred, what="ExecuteAction event in the federation")
    assert event.message == "[cluster-a] Execute action AbortJob after 1h0m0s"
    assert event.involved_object.kind == "Job" and event.involved_object.name == "slowstart"
    assert event.source.component == "caldera-agent"
