"""The real Volcano job controller inside the agent: naming, env, policies, retries, TTL, gating.

Same harness as test_agent_flow (fake federation, simulated cluster, manual clock).
"""

from __future__ import annotations

import copy
import json

import pytest
from agent_fakes import NS, Harness, job_work, settle

SHARE = {
    "caldera.io/task-offsets": json.dumps({"master": 0, "worker": 2}),
    "caldera.io/task-totals": json.dumps({"master": 1, "worker": 4}),
    "caldera.io/world-size": "5",
}


def env_of(pod: dict) -> dict[str, str]:
    return {e["name"]: e.get("value", "") for e in pod["spec"]["containers"][0].get("env") or []}


def task(name: str, replicas: int, cpu: str = "1", **extra) -> dict:
    out = {"name": name, "replicas": replicas,
           "template": {"spec": {"restartPolicy": "Never", "containers": [
               {"name": name, "image": "busybox", "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}]}}}
    out.update(extra)
    return out


def with_job(work: dict, **spec) -> dict:
    work = copy.deepcopy(work)
    work["spec"]["workload"]["manifests"][0]["spec"].update(spec)
    return work


@pytest.fixture
async def real():
    h = Harness(real_scheduler=True)
    await h.start()
    yield h
    await h.stop()


async def test_share_pods_get_volcano_names_annotations_and_global_env(harness: Harness) -> None:
    work = with_job(job_work("pt", replicas=2), minAvailable=2, tasks=[task("worker", 2)],
                    plugins={"pytorch": ["--master=master", "--worker=worker", "--port=23456"]})
    work["spec"]["workload"]["manifests"][0]["metadata"]["annotations"].update(SHARE)
    harness.federation.put_work(work)
    await harness.run_until(lambda: len(harness.pods("pt")) == 2)
    pods = harness.pods("pt")
    assert sorted(pods) == ["team/pt-worker-2", "team/pt-worker-3"]
    pod = pods["team/pt-worker-3"]
    annotations, labels = pod["metadata"]["annotations"], pod["metadata"]["labels"]
    group = annotations["scheduling.k8s.io/group-name"]
    assert group.startswith("pt-") and annotations["volcano.sh/task-spec"] == "worker"
    assert annotations["volcano.sh/task-index"] == "3" and annotations["volcano.sh/job-version"] == "0"
    work_uid = harness.federation.work(NS, "team.pt")["metadata"]["uid"]
    assert labels["caldera.io/work-uid"] == work_uid
    env = env_of(pod)
    assert env["VC_TASK_INDEX"] == "3" and env["WORLD_SIZE"] == "5" and env["RANK"] == "4"  # masters first: 1 + 3
    assert env["MASTER_ADDR"].startswith("pt-master-0")
    assert harness.agent.works[f"{NS}/team.pt"].podgroup["metadata"]["name"] == group
    # the svc plugin's objects reach the member cluster: host lists of the whole federated job
    config = harness.sim.objects[("ConfigMap", "team", "pt-svc")]
    assert config["data"]["VC_WORKER_NUM"] == "4" and "pt-master-0" in config["data"]["VC_MASTER_HOST"]
    assert ("Service", "team", "pt") in harness.sim.objects


async def test_no_pod_before_the_podgroup_leaves_pending(harness: Harness) -> None:
    harness.federation.put_work(job_work("gate", replicas=2))
    await settle()
    await harness.agent.controller_pass()
    await harness.agent.controller_pass()
    state = harness.agent.works[f"{NS}/team.gate"]
    assert state.podgroup["status"]["phase"] == "Pending" and state.podgroup["spec"]["minMember"] == 2
    assert not harness.pods("gate")
    await harness.agent.schedule_pass()  # enqueue: Pending -> Inqueue
    assert state.podgroup["status"]["phase"] == "Inqueue"
    await harness.agent.controller_pass()
    assert len(harness.pods("gate")) == 2


async def test_pod_failed_restarts_the_job_until_max_retry(harness: Harness) -> None:
    work = with_job(job_work("flaky", replicas=2, exit_code="1", duration="3s"), maxRetry=2,
                    policies=[{"event": "PodFailed", "action": "RestartJob"}])
    harness.federation.put_work(work)
    seen_versions: set[str] = set()

    def done() -> bool:
        for pod in harness.pods("flaky").values():
            seen_versions.add(pod["metadata"]["annotations"]["volcano.sh/job-version"])
        return harness.job_phase("flaky") == "Failed"

    await harness.run_until(done, steps=120)
    status = harness.status("flaky")["manifestStatuses"][0]["status"]
    assert status["retryCount"] == 2
    assert {"0", "1"} <= seen_versions
    assert len(harness.pods("flaky")) <= 2  # restarts reuse the names, never add pods
    # the controller's events reach the federation, about the federated Job (describe shows them)
    await harness.sync.write_events()
    restarts = [body for _, body in harness.federation.events if body["reason"] == "ExecuteAction"
                and "RestartJob" in body["message"]]
    assert restarts and restarts[0]["involvedObject"]["name"] == "flaky"
    assert restarts[0]["message"].startswith("[c1] ") and restarts[0]["involvedObject"]["uid"]


async def test_min_success_completes_early_and_ttl_cleans_up(harness: Harness) -> None:
    quick = task("quick", 1)
    quick["template"]["metadata"] = {"annotations": {"caldera.io/sim-duration": "3s"}}
    slow = task("slow", 2)
    slow["template"]["metadata"] = {"annotations": {"caldera.io/sim-duration": "500s"}}
    work = with_job(job_work("early", replicas=3), minAvailable=3, minSuccess=1, tasks=[quick, slow],
                    ttlSecondsAfterFinished=5)
    harness.federation.put_work(work)
    await harness.run_until(lambda: harness.job_phase("early") == "Completed", steps=60)
    assert harness.clock.monotonic() < 100  # long before the slow pods would end
    status = harness.status("early")["manifestStatuses"][0]["status"]
    assert status["succeeded"] >= 1
    await harness.run_until(lambda: not harness.pods("early"), steps=30)
    assert harness.job_phase("early") == "Completed"  # the final status stays on the Work


async def test_controller_refusal_is_reported_and_does_not_block_others(harness: Harness) -> None:
    bad = job_work("skewed", replicas=1)
    bad["spec"]["workload"]["manifests"][0]["metadata"]["annotations"]["caldera.io/task-offsets"] = "not json"
    harness.federation.put_work(bad)
    harness.federation.put_work(job_work("fine", replicas=1))
    await harness.run_until(lambda: harness.job_phase("fine") == "Completed")
    applied = next(c for c in harness.status("skewed")["conditions"] if c["type"] == "Applied")
    assert applied["status"] == "False" and applied["reason"] in ("InvalidJob", "InvalidManifest")
    assert "caldera.io/task-offsets" in applied["message"]
    assert not harness.pods("skewed")


async def test_session_scheduler_runs_a_work_to_completion(real: Harness) -> None:
    real.federation.put_work(job_work("sess", replicas=3, cpu="3"))
    await real.run_until(lambda: real.job_phase("sess") == "Running")
    nodes = {p["spec"]["nodeName"] for p in real.pods("sess").values()}
    assert len(nodes) == 2  # 3 x 3 cpu do not fit on one 8-cpu node
    await real.run_until(lambda: real.job_phase("sess") == "Completed")
    # Volcano deletes a finished job's PodGroup; the Work keeps its last phase
    assert real.agent.works[f"{NS}/team.sess"].podgroup is None
    run = real.agent.works[f"{NS}/team.sess"].run
    assert run is not None and run._group_model is None  # nor is the deleted PodGroup's model kept
    condition = next(c for c in real.status("sess")["conditions"] if c["type"] == "PodGroup")
    assert condition["reason"] in ("Running", "Completed")


async def test_held_share_with_session_scheduler_reserves_then_runs(real: Harness) -> None:
    held = {"generation": 2, "hold": True, "clusters": 2, "reserveTimeoutSeconds": 60}
    real.federation.put_work(job_work("hs", replicas=2, placement=dict(held)))
    await real.run_until(lambda: real.gang("hs").get("phase") == "Reserved")
    assert all(not p["spec"].get("nodeName") for p in real.pods("hs").values())
    real.federation.put_work(job_work("hs", replicas=2, placement=dict(held, hold=False)))
    await real.run_until(lambda: real.gang("hs").get("phase") == "Running")
    assert real.job_phase("hs") == "Running"


def share_of(work: dict, generation: int, replicas: int, total: int, indices: list[list[int]] | None) -> dict:
    """The Work re-rendered for ``generation``: ``replicas`` of a ``total``-worker job, kept indices."""
    work = copy.deepcopy(work)
    # a re-division for a changed spec: it keeps the running pods of generation 1 on (keepsFromGeneration)
    work["spec"]["placement"] = {"generation": generation, "hold": False, "clusters": 2, "reserveTimeoutSeconds": 60,
                                 "keepsFromGeneration": 1}
    job = work["spec"]["workload"]["manifests"][0]
    job["spec"]["tasks"][0]["replicas"] = job["spec"]["minAvailable"] = replicas
    notes = job["metadata"]["annotations"]
    notes.update({"caldera.io/task-offsets": json.dumps({"worker": (indices or [[2]])[0][0]}),
                  "caldera.io/task-totals": json.dumps({"worker": total}), "caldera.io/world-size": str(total),
                  "caldera.io/placement-generation": str(generation)})
    if indices:
        notes["caldera.io/task-indices"] = json.dumps({"worker": indices})
    return work


async def test_rescaled_share_keeps_its_running_pods(real: Harness) -> None:
    # generation 1: workers 2-3 of 4 run here; generation 2 (the job scaled to 6): this share
    # keeps 2-3 and takes 5; generation 3 (scaled down to 3): it keeps 2 only
    base = job_work("el", replicas=2, duration="600s")
    real.federation.put_work(share_of(base, 1, 2, 4, None))
    await real.run_until(lambda: real.job_phase("el") == "Running")
    running = {k: p["metadata"]["uid"] for k, p in real.pods("el").items()}
    assert sorted(running) == ["team/el-worker-2", "team/el-worker-3"]
    real.federation.put_work(share_of(base, 2, 3, 6, [[2, 4], [5, 6]]))
    await real.run_until(lambda: len(real.pods("el")) == 3 and all(
        p.get("status", {}).get("phase") == "Running" for p in real.pods("el").values()))
    pods = real.pods("el")
    assert sorted(pods) == ["team/el-worker-2", "team/el-worker-3", "team/el-worker-5"]
    assert {k: pods[k]["metadata"]["uid"] for k in running} == running, "running pods were not restarted"
    real.federation.put_work(share_of(base, 3, 1, 3, [[2, 3]]))
    await real.run_until(lambda: sorted(real.pods("el")) == ["team/el-worker-2"])
    assert real.pods("el")["team/el-worker-2"]["metadata"]["uid"] == running["team/el-worker-2"]


async def test_held_share_reservation_survives_an_agent_restart(real: Harness) -> None:
    held = {"generation": 2, "hold": True, "clusters": 2, "reserveTimeoutSeconds": 600}
    real.federation.put_work(job_work("rs", replicas=2, placement=dict(held)))
    await real.run_until(lambda: real.gang("rs").get("phase") == "Reserved")
    reserved = dict(real.gang("rs")["reservations"])
    assert sorted(reserved) == ["team/rs-worker-0", "team/rs-worker-1"]
    until = real.gang("rs")["reservedUntil"]
    await real.stop()
    restarted = Harness(federation=real.federation, sim=real.sim, clock=real.clock, real_scheduler=True)
    await restarted.start()
    try:
        await restarted.run_until(lambda: f"{NS}/team.rs" in restarted.agent.works)
        await restarted.step(1.0)
        gang = restarted.gang("rs")
        assert gang["phase"] == "Reserved" and gang["reservations"] == reserved and gang["reservedUntil"] == until
        restarted.federation.put_work(job_work("rs", replicas=2, placement=dict(held, hold=False)))
        await restarted.run_until(lambda: restarted.gang("rs").get("phase") in ("Released", "Running"))
        await restarted.run_until(lambda: all(p["spec"].get("nodeName") for p in restarted.pods("rs").values()))
        assert {k: p["spec"]["nodeName"] for k, p in restarted.pods("rs").items()} == reserved
    finally:
        await restarted.stop()
