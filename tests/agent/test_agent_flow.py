"""The agent end to end in one process: simulated cluster, in-memory federation, manual clock.

Each step moves the clock, lets the kubelet act, then runs one controller pass, one scheduling
pass and one status write, so every test is deterministic and needs no real sleeps.
"""

from __future__ import annotations

import asyncio
import copy
import json

import pytest
from agent_fakes import FakeFederation

from member_agent.agent import Agent, AgentOptions
from member_agent.cluster.clock import ManualClock
from member_agent.cluster.pools import pool_nodes
from member_agent.cluster.sim import SimCluster, SimGateway
from member_agent.cluster.sim_kubelet import KubeletOptions
from member_agent.sync import FederationSync

NS = "karmada-es-c1"


def job_work(name: str, replicas: int = 2, min_available: int | None = None, cpu: str = "2", duration: str = "10s",
             placement: dict | None = None, exit_code: str | None = None, gpu: int = 0) -> dict:
    annotations = {"caldera.io/sim-duration": duration}
    if exit_code is not None:
        annotations["caldera.io/sim-exit-code"] = exit_code
    requests = {"cpu": cpu, "memory": "1Gi"}
    if gpu:
        requests["nvidia.com/gpu"] = str(gpu)
    job = {
        "apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
        "metadata": {"name": name, "namespace": "team", "annotations": annotations},
        "spec": {"minAvailable": replicas if min_available is None else min_available,
                 "tasks": [{"name": "worker", "replicas": replicas,
                            "template": {"spec": {"restartPolicy": "Never", "containers": [
                                {"name": "main", "image": "busybox", "resources": {"requests": requests}}]}}}]},
    }
    work = {"apiVersion": "work.karmada.io/v1alpha1", "kind": "Work",
            "metadata": {"name": f"team.{name}", "namespace": NS},
            "spec": {"workload": {"manifests": [job]}}}
    if placement is not None:
        work["spec"]["placement"] = placement
    return work


async def settle(rounds: int = 30) -> None:
    for _ in range(rounds):
        await asyncio.sleep(0)


class Harness:
    def __init__(self, federation: FakeFederation | None = None, sim: SimCluster | None = None,
                 clock: ManualClock | None = None) -> None:
        self.clock = clock or ManualClock()
        self.sim = sim or SimCluster(pool_nodes({"name": "n", "count": 2, "cpu": 8, "memory": "32Gi",
                                                 "gpus": {"product": "NVIDIA-A100-SXM4-80GB", "count": 8,
                                                          "memoryGiB": 80}}, "pool"),
                                     self.clock, KubeletOptions(start_delay=1.0, default_duration=10.0))
        self.federation = federation or FakeFederation()
        self.agent = Agent(AgentOptions("c1", use_real_scheduler=False), SimGateway(self.sim), self.clock)
        self.sync = FederationSync(self.agent, self.federation, self.clock)
        self.tasks: list[asyncio.Task] = []

    async def start(self) -> None:
        self.tasks.append(asyncio.create_task(self.agent.cache.run()))
        await settle()
        await self.sync.register()
        self.tasks.append(asyncio.create_task(self.sync.works_loop()))
        await settle()

    async def stop(self) -> None:
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)

    async def step(self, seconds: float = 1.0) -> None:
        self.clock.advance(seconds)
        self.sim.kubelet.step()
        await settle()
        await self.agent.controller_pass()
        await settle()
        await self.agent.schedule_pass()
        await settle()
        await self.agent.controller_pass()
        await self.sync.write_work_statuses()
        await settle()

    async def run_until(self, predicate, steps: int = 60, seconds: float = 1.0) -> None:
        for _ in range(steps):
            if predicate():
                return
            await self.step(seconds)
        assert predicate(), "condition not reached"

    def status(self, name: str) -> dict:
        return self.federation.work(NS, f"team.{name}").get("status") or {}

    def job_phase(self, name: str) -> str:
        manifests = self.status(name).get("manifestStatuses") or [{}]
        return ((manifests[0].get("status") or {}).get("state") or {}).get("phase", "")

    def gang(self, name: str) -> dict:
        return self.status(name).get("gang") or {}

    def pods(self, prefix: str) -> dict[str, dict]:
        return {k: v for k, v in self.sim.pods.items() if k.startswith(f"team/{prefix}-")}


@pytest.fixture
async def harness():
    h = Harness()
    await h.start()
    yield h
    await h.stop()


async def test_work_runs_to_completed_and_status_comes_back(harness: Harness) -> None:
    harness.federation.put_work(job_work("train", replicas=3, cpu="2"))
    await harness.run_until(lambda: harness.job_phase("train") == "Running")
    pods = harness.pods("train")
    assert sorted(pods) == ["team/train-worker-0", "team/train-worker-1", "team/train-worker-2"]
    assert all(p["spec"].get("nodeName") for p in pods.values())
    await harness.run_until(lambda: harness.job_phase("train") == "Completed")
    status = harness.status("train")
    assert {c["type"]: c["status"] for c in status["conditions"]}["Applied"] == "True"
    job_status = status["manifestStatuses"][0]["status"]
    assert job_status["succeeded"] == 3 and job_status["failed"] == 0
    assert status["manifestStatuses"][0]["health"] == "Healthy"
    assert status["manifestStatuses"][0]["identifier"]["name"] == "train"


async def test_failed_pods_fail_the_job(harness: Harness) -> None:
    harness.federation.put_work(job_work("bad", replicas=2, exit_code="3"))
    await harness.run_until(lambda: harness.job_phase("bad") == "Failed")
    assert harness.status("bad")["manifestStatuses"][0]["status"]["failed"] == 2
    assert harness.status("bad")["manifestStatuses"][0]["health"] == "Unhealthy"


async def test_invalid_work_reported_and_does_not_block_others(harness: Harness) -> None:
    bad = job_work("broken", replicas=2)
    bad["spec"]["workload"]["manifests"][0]["spec"]["tasks"][0]["replicas"] = -1
    harness.federation.put_work(bad)
    harness.federation.put_work(job_work("fine", replicas=1))
    await harness.run_until(lambda: harness.job_phase("fine") == "Completed")
    applied = next(c for c in harness.status("broken")["conditions"] if c["type"] == "Applied")
    assert applied["status"] == "False" and applied["reason"] == "InvalidManifest"
    assert "spec.tasks[0].replicas" in applied["message"]
    assert not harness.pods("broken")


async def test_gang_that_does_not_fit_stays_pending_without_pods_bound(harness: Harness) -> None:
    harness.federation.put_work(job_work("huge", replicas=3, cpu="6"))  # 2 nodes x 8 cpu: only 2 fit
    for _ in range(5):
        await harness.step()
    assert all(not p["spec"].get("nodeName") for p in harness.pods("huge").values())
    assert harness.job_phase("huge") == "Pending"


async def test_restart_rebuilds_without_duplicating_pods(harness: Harness) -> None:
    harness.federation.put_work(job_work("long", replicas=2, duration="100s"))
    await harness.run_until(lambda: harness.job_phase("long") == "Running")
    uids = {k: p["metadata"]["uid"] for k, p in harness.pods("long").items()}
    await harness.stop()
    second = Harness(harness.federation, harness.sim, harness.clock)
    await second.start()
    try:
        for _ in range(3):
            await second.step()
        assert {k: p["metadata"]["uid"] for k, p in second.pods("long").items()} == uids
        assert second.job_phase("long") == "Running"
        await second.run_until(lambda: second.job_phase("long") == "Completed", steps=150)
        assert len(second.pods("long")) == 2
    finally:
        await second.stop()


async def test_deleted_work_removes_its_pods(harness: Harness) -> None:
    harness.federation.put_work(job_work("gone", replicas=2, duration="100s"))
    await harness.run_until(lambda: harness.job_phase("gone") == "Running")
    harness.federation.delete_work(NS, "team.gone")
    await harness.run_until(lambda: not harness.pods("gone"), steps=60)


HELD = {"generation": 3, "hold": True, "clusters": 2, "reserveTimeoutSeconds": 60}


async def test_held_share_reserves_then_binds_on_release(harness: Harness) -> None:
    harness.federation.put_work(job_work("gang", replicas=2, placement=dict(HELD)))
    await harness.run_until(lambda: harness.gang("gang").get("phase") == "Reserved")
    gang = harness.gang("gang")
    assert gang["generation"] == 3 and gang["reservedUntil"]
    assert len(harness.pods("gang")) == 2
    assert all(not p["spec"].get("nodeName") for p in harness.pods("gang").values())
    # the reservation holds the resources: the cluster status counts the reserved pods as allocated
    status = harness.sync.cluster_status()
    assert status["resourceSummary"]["allocated"]["cpu"] == "4"
    released = job_work("gang", replicas=2, placement=dict(HELD, hold=False))
    harness.federation.put_work(released)
    await harness.run_until(lambda: all(p["spec"].get("nodeName") for p in harness.pods("gang").values()))
    await harness.run_until(lambda: harness.gang("gang").get("phase") == "Running")
    assert "reservedUntil" not in harness.gang("gang")


async def test_cancelled_share_drops_reservation(harness: Harness) -> None:
    harness.federation.put_work(job_work("gang", replicas=2, placement=dict(HELD)))
    await harness.run_until(lambda: harness.gang("gang").get("phase") == "Reserved")
    harness.federation.put_work(job_work("gang", replicas=2, placement=dict(HELD, cancelled=True)))
    await harness.run_until(lambda: harness.gang("gang").get("phase") == "Cancelled")
    await harness.run_until(lambda: not harness.pods("gang"))
    assert harness.sync.cluster_status()["resourceSummary"]["allocated"].get("cpu") is None


async def test_stale_generation_is_ignored(harness: Harness) -> None:
    harness.federation.put_work(job_work("gang", replicas=2, placement=dict(HELD, generation=5)))
    await harness.run_until(lambda: harness.gang("gang").get("phase") == "Reserved")
    stale = job_work("gang", replicas=2, placement=dict(HELD, generation=4, hold=False))
    harness.federation.put_work(stale)
    for _ in range(3):
        await harness.step()
    assert harness.gang("gang")["phase"] == "Reserved" and harness.gang("gang")["generation"] == 5
    assert all(not p["spec"].get("nodeName") for p in harness.pods("gang").values())


async def test_reservation_expires_without_release(harness: Harness) -> None:
    harness.federation.put_work(job_work("gang", replicas=2, placement=dict(HELD, reserveTimeoutSeconds=5)))
    await harness.run_until(lambda: harness.gang("gang").get("phase") == "Reserved")
    for _ in range(7):
        await harness.step()
    gang = harness.gang("gang")
    assert gang["phase"] == "Pending" and "expired" in gang["reason"] and "reservedUntil" not in gang
    assert harness.sync.cluster_status()["resourceSummary"]["allocated"].get("cpu") is None
    # a release after expiry finds nothing reserved: the share is scheduled as an ordinary job
    harness.federation.put_work(job_work("gang", replicas=2, placement=dict(HELD, reserveTimeoutSeconds=5, hold=False)))
    await harness.run_until(lambda: harness.job_phase("gang") == "Running")


async def test_cluster_registers_lease_renews_and_capacity_is_published(harness: Harness) -> None:
    await harness.sync.renew_lease()
    lease = harness.federation.objects[("Lease", "karmada-cluster", "c1")]
    assert lease["spec"]["holderIdentity"] == "c1" and lease["spec"]["leaseDurationSeconds"] == 40
    first = lease["spec"]["renewTime"]
    harness.clock.advance(10)
    await harness.sync.renew_lease()
    assert harness.federation.objects[("Lease", "karmada-cluster", "c1")]["spec"]["renewTime"] > first
    assert await harness.sync.publish_status()
    cluster = harness.federation.objects[("Cluster", "", "c1")]
    assert cluster["spec"]["syncMode"] == "Pull"
    status = cluster["status"]
    assert status["resourceSummary"]["allocatable"]["nvidia.com/gpu"] == "16"
    assert status["nodeSummary"] == {"totalNum": 2, "readyNum": 2}
    assert status["nodeShapes"][0]["count"] == 2
    assert status["gpus"] == [{"product": "NVIDIA-A100-SXM4-80GB", "total": 16, "free": 16}]
    assert not await harness.sync.publish_status()  # unchanged: no write
    harness.sim.fail_node("n-1")
    await settle()
    assert await harness.sync.publish_status()
    assert harness.federation.objects[("Cluster", "", "c1")]["status"]["nodeSummary"]["readyNum"] == 1


async def test_sync_retries_temporary_failures(harness: Harness) -> None:
    harness.federation.fail_next["patch_cluster_status"] = 2
    task = asyncio.create_task(harness.sync.publish_status())
    for _ in range(100):  # the backoff sleeps on the agent's clock: move it
        if task.done():
            break
        harness.clock.advance(1.0)
        await settle()
    assert await task
    assert harness.federation.calls.count("patch_cluster_status") == 3


async def test_watch_expiry_relists(harness: Harness) -> None:
    harness.federation.expire_watch = True
    harness.federation.put_work(job_work("after", replicas=1))
    await harness.run_until(lambda: harness.job_phase("after") == "Completed")


async def test_node_failure_fails_running_job(harness: Harness) -> None:
    harness.federation.put_work(job_work("lost", replicas=2, cpu="6", duration="100s"))
    await harness.run_until(lambda: harness.job_phase("lost") == "Running")
    node = next(iter(harness.pods("lost").values()))["spec"]["nodeName"]
    harness.sim.fail_node(node)
    await harness.step()
    assert any(p["status"].get("reason") == "NodeLost" for p in harness.pods("lost").values())
    snapshot_nodes = [o for o in harness.agent.snapshot_objects() if o.get("kind") == "Node"]
    assert any(n["status"]["conditions"][0]["status"] == "False" for n in snapshot_nodes)


def test_fixture_work_is_not_mutated() -> None:
    work = job_work("x")
    before = json.dumps(work, sort_keys=True)
    copy.deepcopy(work)
    assert json.dumps(work, sort_keys=True) == before
