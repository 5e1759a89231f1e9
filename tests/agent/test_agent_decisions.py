"""The session's part-2 decisions applied by the agent (sim gateway, manual clock, real scheduler):
GPU-index annotations before binding (HAMi sharing across sessions, held shares), evictions with
their reason, nominations of pipelined preemptors, and the task-topology annotation."""

from __future__ import annotations

import copy
import json

import pytest
from agent_fakes import NS, Harness, job_work, settle

from member_agent.cluster.clock import ManualClock
from member_agent.cluster.gateway import pod_node
from member_agent.cluster.sim import SimCluster
from member_agent.cluster.sim_kubelet import KubeletOptions
from member_agent.endpoints import status_document
from member_agent.scheduler.framework.result import CycleResult
from policies.cluster_layout import pool_nodes
from policies.scheduler_conf import parse_scheduler_conf

GPU_INDEX = "volcano.sh/gpu-index"

HAMI_CONF = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: deviceshare
    arguments: {deviceshare.SchedulePolicy: binpack, deviceshare.ScheduleWeight: 10}
"""

# The seed's ConfigMap (examples/seed/configmap-volcano-scheduler-config.yaml) plus preempt,
# as docs/scheduler.md "Part 2" shows it.
PREEMPT_CONF = """
actions: "enqueue, allocate, backfill, preempt"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: binpack
"""


def harness_with(pool: dict, conf: str) -> Harness:
    clock = ManualClock()
    sim = SimCluster(pool_nodes(pool, "pool"), clock, KubeletOptions(start_delay=1.0, default_duration=10.0))
    h = Harness(sim=sim, clock=clock, real_scheduler=True)
    h.agent.conf = parse_scheduler_conf(conf)
    return h


def hami_pool(gpus: int = 2) -> dict:
    return {"name": "hami", "count": 1, "cpu": 32, "memory": "128Gi",
            "gpus": {"product": "NVIDIA-A100-SXM4-80GB", "count": gpus, "memoryGiB": 80, "sharing": "hami"}}


def inference_work(name: str, gpumem: int, gpucores: int = 20, placement: dict | None = None) -> dict:
    """One replica of the seed's shared-GPU inference task (HAMi limits only, as the seed writes them)."""
    work = job_work(name, replicas=1, duration="1000s", placement=placement)
    task = work["spec"]["workload"]["manifests"][0]["spec"]["tasks"][0]
    task["name"] = "inference"
    task["template"]["spec"]["containers"][0]["resources"] = {
        "limits": {"nvidia.com/gpumem": gpumem, "nvidia.com/gpucores": gpucores}}
    return work


@pytest.fixture
async def hami():
    h = harness_with(hami_pool(), HAMI_CONF)
    await h.start()
    yield h
    await h.stop()


def annotation(h: Harness, pod_key: str, key: str = GPU_INDEX) -> str | None:
    pod = h.sim.pods.get(pod_key) or {}
    return ((pod.get("metadata") or {}).get("annotations") or {}).get(key)


def node_of(h: Harness, pod_key: str) -> str | None:
    return ((h.sim.pods.get(pod_key) or {}).get("spec") or {}).get("nodeName")


async def test_shared_gpu_pods_bound_in_two_sessions_share_one_gpu(hami: Harness) -> None:
    hami.federation.put_work(inference_work("infer-a", 10))
    await hami.run_until(lambda: node_of(hami, "team/infer-a-inference-0") is not None)
    first = annotation(hami, "team/infer-a-inference-0")
    assert first is not None and first in ("0", "1")
    # a later session: the first pod's GPU is read back from its annotation, binpack shares it
    hami.federation.put_work(inference_work("infer-b", 10))
    await hami.run_until(lambda: node_of(hami, "team/infer-b-inference-0") is not None)
    assert annotation(hami, "team/infer-b-inference-0") == first
    # 20 GB and 40 % of that GPU are taken: 65 GB no longer fits there, it goes to the other GPU
    hami.federation.put_work(inference_work("big", 65))
    await hami.run_until(lambda: node_of(hami, "team/big-inference-0") is not None)
    other = {"0": "1", "1": "0"}[first]
    assert annotation(hami, "team/big-inference-0") == other
    # a fourth 65 GB pod fits on neither GPU even though the node has 95 GB of gpumem left in total
    hami.federation.put_work(inference_work("big2", 65))
    for _ in range(5):
        await hami.step()
    assert "team/big2-inference-0" in hami.sim.pods and node_of(hami, "team/big2-inference-0") is None
    devices = status_document(hami.agent, hami.sync)["devices"]
    assert devices["team/big-inference-0"]["gpus"] == [int(other)]
    assert devices["team/infer-a-inference-0"]["gpus"] == [int(first)]


async def test_held_share_keeps_its_gpu_and_is_annotated_when_released(hami: Harness) -> None:
    held = {"generation": 2, "hold": True, "clusters": 2, "reserveTimeoutSeconds": 600}
    hami.federation.put_work(inference_work("held", 10, placement=held))
    await hami.run_until(lambda: hami.gang("held").get("phase") == "Reserved")
    pod_key = "team/held-inference-0"
    state = hami.agent.works[f"{NS}/team.held"]
    reserved_gpu = state.gang.annotations[pod_key][GPU_INDEX]
    assert node_of(hami, pod_key) is None and annotation(hami, pod_key) is None  # reserved, not bound
    # the reservation holds its vGPU: another job's sessions see it and pack beside it
    hami.federation.put_work(inference_work("other", 10))
    await hami.run_until(lambda: node_of(hami, "team/other-inference-0") is not None)
    assert annotation(hami, "team/other-inference-0") == reserved_gpu
    hami.federation.put_work(inference_work("held", 10, placement=dict(held, hold=False)))
    await hami.run_until(lambda: node_of(hami, pod_key) is not None)
    assert annotation(hami, pod_key) == reserved_gpu  # patched before the bind on release
    assert not state.gang.annotations


def gpu_job(name: str, replicas: int, priority_class: str, min_available: int = 1) -> dict:
    work = job_work(name, replicas=replicas, min_available=min_available, cpu="1", gpu=4, duration="1000s")
    work["spec"]["workload"]["manifests"][0]["spec"]["priorityClassName"] = priority_class
    return work


PRIORITY_CLASSES = [
    {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high-priority"}, "value": 1000},
    {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "low-priority"}, "value": 10},
]


async def test_high_priority_job_preempts_in_its_queue_is_nominated_then_binds() -> None:
    pool = {"name": "n", "count": 1, "cpu": 16, "memory": "64Gi",
            "gpus": {"product": "NVIDIA-A100-SXM4-80GB", "count": 8, "memoryGiB": 80}}
    h = harness_with(pool, PREEMPT_CONF)
    h.agent.set_scheduling_inputs([], copy.deepcopy(PRIORITY_CLASSES))
    await h.start()
    try:
        h.federation.put_work(gpu_job("low", 2, "low-priority"))
        await h.run_until(lambda: len(h.pods("low")) == 2 and all(node_of(h, k) for k in h.pods("low")))
        node = node_of(h, "team/low-worker-0")
        h.federation.put_work(gpu_job("high", 1, "high-priority"))
        preemptor = "team/high-worker-0"
        nominated = None
        disruptions: dict[str, str] = {}
        for _ in range(40):
            await h.step(5.0)
            pod = h.sim.pods.get(preemptor) or {}
            nominated = nominated or (pod.get("status") or {}).get("nominatedNodeName")
            for key, victim in h.pods("low").items():
                for condition in victim["status"].get("conditions") or []:
                    if condition["type"] == "DisruptionTarget":
                        disruptions[key] = condition["message"]
            if node_of(h, preemptor):
                break
        assert nominated == node, "the preemptor was never nominated before it was bound"
        assert node_of(h, preemptor) == node
        # exactly one victim (the low job keeps its minAvailable 1), evicted with the session's reason
        evictions = [e for e in h.sim.events if e["reason"] == "Evict"]
        assert len(evictions) == 1 and evictions[0]["involvedObject"]["name"].startswith("low-worker-")
        message = evictions[0]["message"]
        assert message.startswith("preempt:") and "team/high" in message and "10 < 1000" in message
        assert list(disruptions.values()) == [message]  # the DisruptionTarget condition carries it too
        survivors = [k for k, p in h.pods("low").items() if node_of(h, k) and not p["metadata"].get("deletionTimestamp")]
        assert len(survivors) >= 1
        assert 'volcano_eviction_transactions_total{action="preempt"} 1.0' in h.agent.metrics.render().decode()
    finally:
        await h.stop()


async def test_task_topology_reaches_the_pods_for_the_scheduler() -> None:
    pool = {"name": "n", "count": 2, "cpu": 16, "memory": "64Gi",
            "gpus": {"product": "NVIDIA-A100-SXM4-80GB", "count": 8, "memoryGiB": 80}}
    h = harness_with(pool, PREEMPT_CONF.replace("  - name: binpack", "  - name: task-topology"))
    await h.start()
    try:
        work = job_work("tf", replicas=2, min_available=3, duration="1000s")
        job = work["spec"]["workload"]["manifests"][0]
        ps = copy.deepcopy(job["spec"]["tasks"][0])
        ps.update(name="ps", replicas=1)
        worker = job["spec"]["tasks"][0]
        worker["taskTopology"] = {"affinity": {"pod": [{"task": "ps", "topologyKey": "kubernetes.io/hostname",
                                                        "weight": 100}]}}
        job["spec"]["tasks"] = [ps, worker]
        h.federation.put_work(work)
        await h.run_until(lambda: len(h.pods("tf")) == 3 and all(node_of(h, k) for k in h.pods("tf")))
        pods = h.pods("tf")
        text = annotation(h, "team/tf-worker-0", "volcano.sh/task-topology")
        assert text is not None and json.loads(text) == worker["taskTopology"]
        assert annotation(h, "team/tf-ps-0", "volcano.sh/task-topology") is None
        # the plugin read it: every worker lands beside the ps
        assert {node_of(h, k) for k in pods} == {node_of(h, "team/tf-ps-0")}
    finally:
        await h.stop()


async def test_evicting_a_reserved_pod_drops_the_reservation_not_the_pod(hami: Harness) -> None:
    held = {"generation": 2, "hold": True, "clusters": 2, "reserveTimeoutSeconds": 600}
    hami.federation.put_work(inference_work("held", 10, placement=held))
    await hami.run_until(lambda: hami.gang("held").get("phase") == "Reserved")
    pod_key = "team/held-inference-0"
    state = hami.agent.works[f"{NS}/team.held"]
    reason = "preempt: evicted (priority 0 < 1000) for team/urgent"
    hami.agent.apply_cycle(CycleResult(evictions=[pod_key], eviction_reasons={pod_key: reason}))
    await settle()
    assert pod_key not in state.gang.reservations and pod_key not in state.gang.annotations
    pod = hami.sim.pods[pod_key]
    assert not pod["metadata"].get("deletionTimestamp") and not pod_node(pod)  # still pending for its share
    assert not [e for e in hami.sim.events if e["reason"] == "Evict"]
