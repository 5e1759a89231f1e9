"""The agent end to end in one process: simulated cluster, in-memory federation, manual clock.

Each step moves the clock, lets the kubelet act, then runs one controller pass, one scheduling
pass and one status write, so every test is deterministic and needs no real sleeps.
"""

from __future__ import annotations

import asyncio
import copy
import json

from agent_fakes import NS, Harness, job_work, settle


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
    assert ("ConfigMap", "team", "gone-svc") in harness.sim.objects
    harness.federation.delete_work(NS, "team.gone")
    await harness.run_until(lambda: not harness.pods("gone"), steps=60)
    assert not [key for key in harness.sim.objects if key[2].startswith("gone")]


def job_series(agent, job: str) -> list[str]:
    """The agent's metric samples that name ``job`` (team/<job>), by any of Volcano's job labels."""
    marks = (f'job_name="{job}"', f'job_name="team/{job}"', f'job_id="team/{job}-')
    return [line for line in agent.metrics.render().decode().splitlines()
            if not line.startswith("#") and any(mark in line for mark in marks)]


async def test_a_deleted_works_job_metric_series_go_with_it() -> None:
    real = Harness(real_scheduler=True)
    await real.start()
    try:
        real.federation.put_work(job_work("done", replicas=2, duration="3s"))
        real.federation.put_work(job_work("stays", replicas=1, duration="3s"))
        await real.run_until(lambda: real.job_phase("done") == "Completed" and real.job_phase("stays") == "Completed")
        names = {line.split("{")[0] for line in job_series(real.agent, "done")}
        assert {"volcano_e2e_job_scheduling_duration", "volcano_e2e_job_scheduling_start_time",
                "volcano_e2e_job_scheduling_last_time", "volcano_job_completed_phase_count",
                "volcano_unschedule_task_count"} <= names
        kept = job_series(real.agent, "stays")
        real.federation.delete_work(NS, "team.done")
        await real.run_until(lambda: f"{NS}/team.done" not in real.agent.works, steps=30)
        assert job_series(real.agent, "done") == []
        assert job_series(real.agent, "stays") == kept  # the other job's series stay
    finally:
        await real.stop()


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
    # the federation places the job again: a new generation starts afresh and runs
    harness.federation.put_work(job_work("gang", replicas=2, placement=dict(HELD, generation=4, hold=False, clusters=1)))
    await harness.run_until(lambda: harness.job_phase("gang") == "Completed")
    assert harness.gang("gang")["generation"] == 4 and harness.gang("gang")["phase"] == "Running"
    assert len(harness.pods("gang")) == 2


async def test_held_share_that_does_not_fit_reports_unschedulable(harness: Harness) -> None:
    harness.federation.put_work(job_work("big", replicas=3, cpu="6", placement=dict(HELD)))  # only 2 fit
    await harness.run_until(lambda: harness.gang("big").get("phase") == "Unschedulable")
    assert "2/3" in harness.gang("big")["reason"]
    assert not harness.agent.works[f"{NS}/team.big"].gang.reservations
    for _ in range(3):
        await harness.step()
    assert harness.gang("big")["phase"] == "Unschedulable"  # stable, not flapping with Pending


async def test_partial_gang_in_the_cache_is_not_a_verdict(harness: Harness) -> None:
    from member_agent.scheduler.framework.result import CycleResult, JobReport

    harness.federation.put_work(job_work("half", replicas=2, placement=dict(HELD)))
    await harness.run_until(lambda: harness.agent.works.get(f"{NS}/team.half") is not None
                            and harness.agent.works[f"{NS}/team.half"].podgroup is not None)
    state = harness.agent.works[f"{NS}/team.half"]
    key = f"team/{state.podgroup['metadata']['name']}"
    report = JobReport(job=key, queue="default", phase="Inqueue", min_available=2, tasks=1, bound=0, pipelined=0,
                       pending=1, reason="gang: 1/2 tasks fit")
    harness.agent.apply_cycle(CycleResult(pod_groups={key: "Inqueue"}, jobs={key: report}))
    assert state.gang.phase == "Pending"  # one pod not yet seen: wait, do not tell the federation to cancel
    whole = JobReport(job=key, queue="default", phase="Inqueue", min_available=2, tasks=2, bound=0, pipelined=0,
                      pending=2, reason="gang: 1/2 tasks fit")
    harness.agent.apply_cycle(CycleResult(pod_groups={key: "Inqueue"}, jobs={key: whole}))
    assert state.gang.phase == "Unschedulable"


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
    assert status["gpus"] == [{"product": "NVIDIA-A100-SXM4-80GB", "total": 16, "free": 16, "fragmented": 0}]
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


async def test_pods_of_a_work_deleted_while_the_agent_was_down_are_removed(harness: Harness) -> None:
    harness.federation.put_work(job_work("orphan", replicas=2, duration="100s"))
    harness.federation.put_work(job_work("kept", replicas=1, duration="100s"))
    await harness.run_until(lambda: harness.job_phase("orphan") == "Running" and harness.job_phase("kept") == "Running")
    await harness.stop()
    harness.federation.delete_work(NS, "team.orphan")
    second = Harness(harness.federation, harness.sim, harness.clock)
    await second.start()
    try:
        await second.run_until(lambda: not second.pods("orphan"), steps=40)
        assert len(second.pods("kept")) == 1
    finally:
        await second.stop()


async def test_work_recreated_under_the_same_name_replaces_the_old_pods(harness: Harness) -> None:
    harness.federation.put_work(job_work("again", replicas=2, duration="100s"))
    await harness.run_until(lambda: harness.job_phase("again") == "Running")
    old_uids = {p["metadata"]["uid"] for p in harness.pods("again").values()}
    harness.federation.delete_work(NS, "team.again")
    harness.federation.put_work(job_work("again", replicas=2, duration="100s"))  # a new uid, same name
    await harness.run_until(lambda: harness.job_phase("again") == "Running"
                            and len(harness.pods("again")) == 2
                            and not old_uids & {p["metadata"]["uid"] for p in harness.pods("again").values()},
                            steps=80)
