"""Several federation API endpoints for one agent: use one, move to the next when it fails.

The agent reaches the federation through any of its API replicas (repeated ``--server``, or every
cluster of a kubeconfig that lists several). :class:`FailoverFederationAPI` implements
:class:`~member_agent.federation_api.FederationAPI` over one client per endpoint: a call that fails
with :class:`Unavailable` (connection refused, timeout, 5xx) marks that endpoint and switches to
the next one before the error goes up; the retries with jittered backoff of
:mod:`member_agent.sync` then reach the next replica. When every endpoint is down the agent keeps
its member cluster running as it is (nothing here stops anything) and the same retries reconnect
it when any replica answers again. Every replica serves the same data (one etcd), so a watch
resumed on another replica from the last resourceVersion misses nothing.
"""

from __future__ import annotations

import base64
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import yaml

from member_agent.cluster.gateway import Obj, Unavailable, WatchEvent
from member_agent.federation_rest import RestFederationAPI

log = logging.getLogger("caldera.agent.failover")
T = TypeVar("T")


def endpoint_kubeconfigs(path: str, servers: Sequence[str]) -> list[dict[str, Any]]:
    """One kubeconfig dict per endpoint: each ``--server`` URL with the file's current credentials,
    or (without ``--server``) each cluster the file lists, with the current context's user."""
    doc = yaml.safe_load(Path(path).read_text())
    if not isinstance(doc, dict):
        raise ValueError(f"--kubeconfig {path}: not a kubeconfig mapping")
    contexts = {c["name"]: c.get("context") or {} for c in doc.get("contexts") or [] if isinstance(c, dict)}
    current = doc.get("current-context") or next(iter(contexts), None)
    if current not in contexts:
        raise ValueError(f"--kubeconfig {path}: current-context {current!r} is not one of contexts[].name")
    context = contexts[current]
    clusters = {c["name"]: c.get("cluster") or {} for c in doc.get("clusters") or [] if isinstance(c, dict)}
    base = clusters.get(context.get("cluster"), {})
    if servers:
        entries = [dict(base, server=url) for url in servers]
    else:
        entries = [clusters[context.get("cluster")]] if context.get("cluster") in clusters else []
        entries += [c for name, c in clusters.items() if name != context.get("cluster")]
    if not entries:
        raise ValueError(f"--kubeconfig {path}: no cluster to connect to")
    out = []
    for i, cluster in enumerate(entries):
        if "certificate-authority" in cluster:  # relative to the kubeconfig, as kubectl reads it
            ca = (Path(path).parent / cluster.pop("certificate-authority")).read_bytes()
            cluster = dict(cluster, **{"certificate-authority-data": base64.b64encode(ca).decode()})
        name = f"endpoint-{i}"
        out.append({"apiVersion": "v1", "kind": "Config", "clusters": [{"name": name, "cluster": cluster}],
                    "users": doc.get("users") or [],
                    "contexts": [{"name": name, "context": dict(context, cluster=name)}], "current-context": name})
    return out


class FailoverFederationAPI:
    """The FederationAPI over several endpoints, one active at a time."""

    def __init__(self, endpoints: Sequence[RestFederationAPI], names: Sequence[str]) -> None:
        self.endpoints = list(endpoints)
        self.names = list(names)
        self.active = 0
        self.failovers = 0

    @classmethod
    async def from_kubeconfig(cls, path: str, servers: Sequence[str] = ()) -> "FailoverFederationAPI":
        configs = endpoint_kubeconfigs(path, servers)
        base = str(Path(path).resolve().parent)
        clients = [RestFederationAPI.from_config(c, base) for c in configs]
        return cls(clients, [c["clusters"][0]["cluster"].get("server", "?") for c in configs])

    @property
    def current(self) -> str:
        return self.names[self.active]

    def _failed(self, index: int, exc: BaseException) -> None:
        if index != self.active or len(self.endpoints) == 1:
            return
        self.active = (self.active + 1) % len(self.endpoints)
        self.failovers += 1
        log.warning("federation endpoint %s failed (%s); moving to %s", self.names[index], exc, self.current)

    async def _on_active(self, call: Callable[[RestFederationAPI], Awaitable[T]]) -> T:
        index = self.active
        try:
            return await call(self.endpoints[index])
        except Unavailable as exc:
            self._failed(index, exc)
            raise

    async def get_cluster(self, name: str) -> Obj:
        return await self._on_active(lambda api: api.get_cluster(name))

    async def create_cluster(self, body: Obj) -> Obj:
        return await self._on_active(lambda api: api.create_cluster(body))

    async def patch_cluster_status(self, name: str, status: Obj) -> Obj:
        return await self._on_active(lambda api: api.patch_cluster_status(name, status))

    async def get_lease(self, namespace: str, name: str) -> Obj:
        return await self._on_active(lambda api: api.get_lease(namespace, name))

    async def create_lease(self, namespace: str, body: Obj) -> Obj:
        return await self._on_active(lambda api: api.create_lease(namespace, body))

    async def replace_lease(self, namespace: str, name: str, body: Obj) -> Obj:
        return await self._on_active(lambda api: api.replace_lease(namespace, name, body))

    async def list_works(self, namespace: str) -> tuple[list[Obj], str]:
        return await self._on_active(lambda api: api.list_works(namespace))

    async def watch_works(self, namespace: str, resource_version: str) -> AsyncIterator[WatchEvent]:
        index = self.active
        try:
            async for event in self.endpoints[index].watch_works(namespace, resource_version):
                yield event
        except Unavailable as exc:
            self._failed(index, exc)
            raise

    async def patch_work_status(self, namespace: str, name: str, status: Obj) -> Obj:
        return await self._on_active(lambda api: api.patch_work_status(namespace, name, status))

    async def list_queues(self) -> list[Obj]:
        return await self._on_active(lambda api: api.list_queues())

    async def list_priority_classes(self) -> list[Obj]:
        return await self._on_active(lambda api: api.list_priority_classes())

    async def create_event(self, namespace: str, body: Obj) -> None:
        await self._on_active(lambda api: api.create_event(namespace, body))

    async def close(self) -> None:
        for api in self.endpoints:
            await api.close()
