"""An in-memory federation API and a manual-clock agent harness for the agent's fast tests
(the live ones use the real API server)."""

from __future__ import annotations

import asyncio
import copy
import itertools
import uuid
from typing import AsyncIterator

from member_agent.agent import Agent, AgentOptions
from member_agent.cluster.clock import ManualClock
from member_agent.cluster.gateway import AlreadyExists, Gone, NotFound, Obj, Unavailable, WatchEvent
from member_agent.cluster.sim import SimCluster, SimGateway
from member_agent.cluster.sim_kubelet import KubeletOptions
from member_agent.sync import FederationSync
from policies.cluster_layout import pool_nodes
from policies.errors import Conflict


class FakeFederation:
    def __init__(self) -> None:
        self.objects: dict[tuple[str, str, str], Obj] = {}  # (kind, namespace, name)
        self._rv = itertools.count(1)
        self.rv = 0
        self.history: list[tuple[int, WatchEvent, str]] = []
        self.watchers: list[tuple[str, asyncio.Queue]] = []
        self.fail_next: dict[str, int] = {}
        self.calls: list[str] = []
        self.expire_watch = False
        self.events: list[tuple[str, Obj]] = []

    def _maybe_fail(self, op: str) -> None:
        self.calls.append(op)
        if self.fail_next.get(op, 0) > 0:
            self.fail_next[op] -= 1
            raise Unavailable(f"{op}: injected failure")

    def _store(self, kind: str, ns: str, name: str, obj: Obj, event: str) -> Obj:
        self.rv = next(self._rv)
        md = obj.setdefault("metadata", {})
        md["resourceVersion"] = str(self.rv)
        md.setdefault("uid", str(uuid.uuid4()))
        md.setdefault("generation", 1)
        if event == "DELETED":
            self.objects.pop((kind, ns, name), None)
        else:
            self.objects[(kind, ns, name)] = obj
        if kind == "Work":
            ev = WatchEvent(event, copy.deepcopy(obj))
            self.history.append((self.rv, ev, ns))
            for wanted, queue in self.watchers:
                if wanted == ns:
                    queue.put_nowait(ev)
        return copy.deepcopy(obj)

    # ---- test helpers
    def put_work(self, work: Obj) -> Obj:
        md = work["metadata"]
        old = self.objects.get(("Work", md["namespace"], md["name"]))
        if old is not None:
            work = copy.deepcopy(work)
            work["metadata"]["uid"] = old["metadata"]["uid"]
            work["metadata"]["generation"] = old["metadata"].get("generation", 1) + 1
            work["status"] = old.get("status")
            return self._store("Work", md["namespace"], md["name"], work, "MODIFIED")
        return self._store("Work", md["namespace"], md["name"], copy.deepcopy(work), "ADDED")

    def delete_work(self, namespace: str, name: str) -> None:
        obj = self.objects[("Work", namespace, name)]
        self._store("Work", namespace, name, obj, "DELETED")

    def work(self, namespace: str, name: str) -> Obj:
        return self.objects[("Work", namespace, name)]

    # ---- FederationAPI
    async def get_cluster(self, name: str) -> Obj:
        self._maybe_fail("get_cluster")
        if ("Cluster", "", name) not in self.objects:
            raise NotFound(name)
        return copy.deepcopy(self.objects[("Cluster", "", name)])

    async def create_cluster(self, body: Obj) -> Obj:
        self._maybe_fail("create_cluster")
        name = body["metadata"]["name"]
        if ("Cluster", "", name) in self.objects:
            raise AlreadyExists(name)
        return self._store("Cluster", "", name, copy.deepcopy(body), "ADDED")

    async def patch_cluster_status(self, name: str, status: Obj) -> Obj:
        self._maybe_fail("patch_cluster_status")
        obj = self.objects[("Cluster", "", name)]
        obj["status"] = copy.deepcopy(status)
        return self._store("Cluster", "", name, obj, "MODIFIED")

    async def get_lease(self, namespace: str, name: str) -> Obj:
        self._maybe_fail("get_lease")
        if ("Lease", namespace, name) not in self.objects:
            raise NotFound(name)
        return copy.deepcopy(self.objects[("Lease", namespace, name)])

    async def create_lease(self, namespace: str, body: Obj) -> Obj:
        self._maybe_fail("create_lease")
        return self._store("Lease", namespace, body["metadata"]["name"], copy.deepcopy(body), "ADDED")

    async def replace_lease(self, namespace: str, name: str, body: Obj) -> Obj:
        self._maybe_fail("replace_lease")
        current = self.objects[("Lease", namespace, name)]
        if body["metadata"].get("resourceVersion") != current["metadata"]["resourceVersion"]:
            raise Conflict(name)
        return self._store("Lease", namespace, name, copy.deepcopy(body), "MODIFIED")

    async def list_works(self, namespace: str) -> tuple[list[Obj], str]:
        self._maybe_fail("list_works")
        items = [copy.deepcopy(o) for (k, ns, _), o in self.objects.items() if k == "Work" and ns == namespace]
        return items, str(self.rv)

    async def watch_works(self, namespace: str, resource_version: str) -> AsyncIterator[WatchEvent]:
        if self.expire_watch:
            self.expire_watch = False
            raise Gone("expired")
        queue: asyncio.Queue = asyncio.Queue()
        for rv, ev, ns in self.history:
            if rv > int(resource_version or 0) and ns == namespace:
                queue.put_nowait(ev)
        entry = (namespace, queue)
        self.watchers.append(entry)
        try:
            while True:
                yield await queue.get()
        finally:
            self.watchers.remove(entry)

    async def patch_work_status(self, namespace: str, name: str, status: Obj) -> Obj:
        self._maybe_fail("patch_work_status")
        obj = self.objects.get(("Work", namespace, name))
        if obj is None:
            raise NotFound(name)
        merged = merge(obj.get("status") or {}, status)
        obj["status"] = merged
        return self._store("Work", namespace, name, obj, "MODIFIED")

    async def list_queues(self) -> list[Obj]:
        return [copy.deepcopy(o) for (k, _, _), o in self.objects.items() if k == "Queue"]

    async def list_priority_classes(self) -> list[Obj]:
        return []

    async def create_event(self, namespace: str, body: Obj) -> None:
        self._maybe_fail("create_event")
        self.events.append((namespace, copy.deepcopy(body)))

    async def close(self) -> None:
        pass


def merge(target: Obj, patch: Obj) -> Obj:
    """RFC 7386 JSON merge patch."""
    out = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict):
            out[key] = merge(out.get(key) or {}, value)
        else:
            out[key] = copy.deepcopy(value)
    return out


NS = "karmada-es-c1"


def job_work(name: str, replicas: int = 2, min_available: int | None = None, cpu: str = "2", duration: str = "10s",
             placement: dict | None = None, exit_code: str | None = None, gpu: int = 0) -> dict:
    annotations = {"caldera.io/sim-duration": duration}
    if exit_code is not None:
        annotations["caldera.io/sim-exit-code"] = exit_code
    requests = {"cpu": cpu, "memory": "1Gi"}
    resources: dict = {"requests": requests}
    if gpu:  # an extended resource's request is its limit (Kubernetes refuses a request without one)
        requests["nvidia.com/gpu"] = str(gpu)
        resources["limits"] = {"nvidia.com/gpu": str(gpu)}
    job = {
        "apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
        "metadata": {"name": name, "namespace": "team", "annotations": annotations},
        "spec": {"minAvailable": replicas if min_available is None else min_available,
                 "tasks": [{"name": "worker", "replicas": replicas,
                            "template": {"spec": {"restartPolicy": "Never", "containers": [
                                {"name": "main", "image": "busybox", "resources": resources}]}}}]},
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
                 clock: ManualClock | None = None, real_scheduler: bool = False) -> None:
        self.clock = clock or ManualClock()
        self.sim = sim or SimCluster(pool_nodes({"name": "n", "count": 2, "cpu": 8, "memory": "32Gi",
                                                 "gpus": {"product": "NVIDIA-A100-SXM4-80GB", "count": 8,
                                                          "memoryGiB": 80}}, "pool"),
                                     self.clock, KubeletOptions(start_delay=1.0, default_duration=10.0))
        self.federation = federation or FakeFederation()
        self.agent = Agent(AgentOptions("c1", use_real_scheduler=real_scheduler), SimGateway(self.sim), self.clock)
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


