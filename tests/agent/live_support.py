"""Running the agent in-process against a real federation API server (tests only).

``running_agent`` starts the agent's loops (cache, job controller, scheduler, federation sync,
sim kubelet) on the real clock with short periods, talking to the server through the
agent-role kubeconfig exactly as ``caldera agent`` does. ``eventually`` polls with a deadline.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import time
from pathlib import Path
from typing import Any, AsyncIterator, Awaitable, Callable, Optional, Union

import yaml
from kubernetes_asyncio import client as k8s

from member_agent.agent import Agent, AgentOptions
from member_agent.cluster.clock import RealClock
from member_agent.cluster.sim import SimCluster, SimGateway
from member_agent.cluster.sim_kubelet import KubeletOptions
from member_agent.federation_rest import RestFederationAPI
from member_agent.sync import FederationSync
from policies.cluster_layout import pool_nodes

WORK = ("work.karmada.io", "v1alpha1", "works")
CLUSTER = ("cluster.karmada.io", "v1alpha1", "clusters")
LEASE = ("coordination.k8s.io", "v1", "leases")

Check = Callable[[], Union[Any, Awaitable[Any]]]


async def eventually(check: Check, timeout: float = 20.0, what: str = "condition") -> Any:
    """Poll ``check`` until it returns something truthy; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = check()
        if asyncio.iscoroutine(last):
            last = await last
        if last:
            return last
        await asyncio.sleep(0.05)
    raise AssertionError(f"{what} not reached within {timeout}s (last: {last!r})")


def write_kubeconfig(server: Any, role: str, path: Path) -> str:
    path.write_text(yaml.safe_dump(server.kubeconfig(role)))
    return str(path)


def small_cluster() -> list[dict]:
    return pool_nodes({"name": "a100", "count": 2, "cpu": 8, "memory": "64Gi",
                       "gpus": {"product": "NVIDIA-A100-SXM4-80GB", "count": 8, "memoryGiB": 80}, "numaNodes": 2},
                      "pool")


@contextlib.asynccontextmanager
async def running_agent(kubeconfig: str, cluster: str = "cluster-a", gateway: Any = None,
                        sim: Optional[SimCluster] = None) -> AsyncIterator[tuple[Agent, FederationSync]]:
    clock = RealClock()
    if gateway is None:
        sim = sim or SimCluster(small_cluster(), clock, KubeletOptions(start_delay=0.1, default_duration=1.0))
        gateway = SimGateway(sim)
    federation = await RestFederationAPI.from_kubeconfig(kubeconfig)
    agent = Agent(AgentOptions(cluster, schedule_period=0.1, controller_period=0.1), gateway, clock)
    sync = FederationSync(agent, federation, clock, lease_period=0.3, status_period=0.2, inputs_period=1.0)
    loops = [agent.cache.run(), agent.controller_loop(), agent.schedule_loop(), sync.run()]
    if sim is not None:
        loops.append(sim.kubelet.run(idle=0.2))
    tasks = [asyncio.ensure_future(loop) for loop in loops]
    try:
        yield agent, sync
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await federation.close()
        await gateway.close()


def job_work(name: str, cluster: str = "cluster-a", replicas: int = 2, cpu: str = "2", duration: str = "1s",
             placement: Optional[dict] = None, namespace: str = "team") -> dict:
    job = {
        "apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
        "metadata": {"name": name, "namespace": namespace,
                     "annotations": {"caldera.io/sim-duration": duration,
                                     "caldera.io/job-uid": f"uid-{name}",
                                     "caldera.io/task-offsets": json.dumps({"worker": 0}),
                                     "caldera.io/task-totals": json.dumps({"worker": replicas}),
                                     "caldera.io/world-size": str(replicas)}},
        "spec": {"minAvailable": replicas, "schedulerName": "volcano",
                 "tasks": [{"name": "worker", "replicas": replicas,
                            "template": {"spec": {"restartPolicy": "Never", "containers": [
                                {"name": "main", "image": "busybox",
                                 "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}]}}}]},
    }
    work: dict = {"apiVersion": "work.karmada.io/v1alpha1", "kind": "Work",
                  "metadata": {"name": f"{namespace}.{name}", "namespace": f"karmada-es-{cluster}",
                               "labels": {"caldera.io/job": f"{namespace}.{name}", "caldera.io/job-uid": f"uid-{name}"}},
                  "spec": {"workload": {"manifests": [job]}}}
    if placement is not None:
        work["spec"]["placement"] = copy.deepcopy(placement)
    return work


class Federation:
    """The admin's view of the federation API (what dispatch and the health controller do)."""

    def __init__(self, api_client: Any) -> None:
        self.custom = k8s.CustomObjectsApi(api_client)
        self.core = k8s.CoreV1Api(api_client)

    async def ensure_namespace(self, name: str) -> None:
        with contextlib.suppress(k8s.ApiException):
            await self.core.create_namespace({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})

    async def create_work(self, work: dict) -> dict:
        g, v, p = WORK
        await self.ensure_namespace(work["metadata"]["namespace"])
        return await self.custom.create_namespaced_custom_object(g, v, work["metadata"]["namespace"], p, work)

    async def patch_work(self, namespace: str, name: str, patch: dict) -> dict:
        g, v, p = WORK
        return await self.custom.patch_namespaced_custom_object(g, v, namespace, p, name, patch,
                                                                _content_type="application/merge-patch+json")

    async def work(self, namespace: str, name: str) -> dict:
        g, v, p = WORK
        return await self.custom.get_namespaced_custom_object(g, v, namespace, p, name)

    async def work_status(self, namespace: str, name: str) -> dict:
        return (await self.work(namespace, name)).get("status") or {}

    async def cluster(self, name: str) -> Optional[dict]:
        g, v, p = CLUSTER
        try:
            return await self.custom.get_cluster_custom_object(g, v, p, name)
        except k8s.ApiException as exc:
            if exc.status == 404:
                return None
            raise

    async def patch_cluster(self, name: str, patch: dict) -> dict:
        g, v, p = CLUSTER
        return await self.custom.patch_cluster_custom_object(g, v, p, name, patch,
                                                             _content_type="application/merge-patch+json")

    async def lease(self, cluster: str) -> Optional[dict]:
        g, v, p = LEASE
        try:
            return await self.custom.get_namespaced_custom_object(g, v, "karmada-cluster", p, cluster)
        except k8s.ApiException as exc:
            if exc.status == 404:
                return None
            raise


def job_state(status: dict) -> dict:
    manifests = status.get("manifestStatuses") or [{}]
    return manifests[0].get("status") or {}


def job_phase(status: dict) -> str:
    return (job_state(status).get("state") or {}).get("phase", "")
