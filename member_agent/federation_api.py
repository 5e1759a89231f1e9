"""The federation objects the agent reads and writes, over the federation's Kubernetes-style API.

:class:`FederationAPI` is the protocol :mod:`member_agent.sync` drives (tests use an in-memory
fake); :class:`member_agent.federation_rest.RestFederationAPI` (what ``caldera agent`` uses) implements
it on plain aiohttp; :class:`KubeFederationAPI` implements it with kubernetes-asyncio (imported
only when one is built: it costs the agent ~40 MiB), every object as a wire
dict through ``CustomObjectsApi`` (which serves any ``/apis/<group>/<version>`` path, core
groups included). Mind the traps of reference/ecosystem.md §1: ``watch=True`` casing is the
server's problem, a watch's 410 arrives as an ``ApiException(410)`` the caller must answer by
relisting, patches need ``application/merge-patch+json``, and nothing has a default timeout.

There are no retries here: they live in :mod:`member_agent.sync` only.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any, AsyncIterator, Protocol

import aiohttp

from member_agent.cluster.gateway import AlreadyExists, Gone, NotFound, Obj, Unavailable, WatchEvent
from policies.errors import Conflict

WORK = ("work.karmada.io", "v1alpha1", "works")
CLUSTER = ("cluster.karmada.io", "v1alpha1", "clusters")
LEASE = ("coordination.k8s.io", "v1", "leases")
QUEUE = ("scheduling.volcano.sh", "v1beta1", "queues")
PRIORITY_CLASS = ("scheduling.k8s.io", "v1", "priorityclasses")
LEASE_NAMESPACE = "karmada-cluster"
MERGE_PATCH = "application/merge-patch+json"
REQUEST_TIMEOUT = 15.0
WATCH_TIMEOUT = 240


class FederationAPI(Protocol):
    async def get_cluster(self, name: str) -> Obj: ...
    async def create_cluster(self, body: Obj) -> Obj: ...
    async def patch_cluster_status(self, name: str, status: Obj) -> Obj: ...
    async def get_lease(self, namespace: str, name: str) -> Obj: ...
    async def create_lease(self, namespace: str, body: Obj) -> Obj: ...
    async def replace_lease(self, namespace: str, name: str, body: Obj) -> Obj: ...
    async def list_works(self, namespace: str) -> tuple[list[Obj], str]: ...
    def watch_works(self, namespace: str, resource_version: str) -> AsyncIterator[WatchEvent]: ...
    async def patch_work_status(self, namespace: str, name: str, status: Obj) -> Obj: ...
    async def list_queues(self) -> list[Obj]: ...
    async def list_priority_classes(self) -> list[Obj]: ...
    async def create_event(self, namespace: str, body: Obj) -> None: ...
    async def close(self) -> None: ...


def translate(exc: BaseException, what: str) -> Exception:
    """Our error tree for a client failure (so sync.py retries only what may succeed later)."""
    exceptions = sys.modules.get("kubernetes_asyncio.client.exceptions")
    if exceptions is not None and isinstance(exc, exceptions.ApiException):
        if exc.status == 404:
            return NotFound(f"{what}: not found")
        if exc.status == 409:
            return AlreadyExists(f"{what}: already exists") if "exists" in str(exc.body or "").lower() \
                else Conflict(f"{what}: conflict")
        if exc.status == 410:
            return Gone(f"{what}: resourceVersion too old")
        if exc.status in (429, 500, 502, 503, 504):
            return Unavailable(f"{what}: HTTP {exc.status}")
        return exc
    if isinstance(exc, (aiohttp.ClientError, asyncio.TimeoutError, OSError)):
        return Unavailable(f"{what}: {type(exc).__name__}: {exc}")
    return exc  # type: ignore[return-value]


class KubeFederationAPI:
    def __init__(self, api_client: Any) -> None:
        from kubernetes_asyncio import client as k8s

        self.api_client = api_client
        self.custom = k8s.CustomObjectsApi(api_client)
        self.core = k8s.CoreV1Api(api_client)

    @classmethod
    async def from_kubeconfig(cls, path: str) -> "KubeFederationAPI":
        from kubernetes_asyncio import config as k8s_config

        api_client = await k8s_config.new_client_from_config(config_file=path)
        return cls(api_client)

    async def _call(self, what: str, coro: Any) -> Any:
        try:
            return await coro
        except Exception as exc:  # noqa: BLE001 - translated, re-raised
            raise translate(exc, what) from exc

    # ------------------------------------------------------------ Cluster
    async def get_cluster(self, name: str) -> Obj:
        g, v, p = CLUSTER
        return await self._call(f"Cluster {name}", self.custom.get_cluster_custom_object(
            g, v, p, name, _request_timeout=REQUEST_TIMEOUT))

    async def create_cluster(self, body: Obj) -> Obj:
        g, v, p = CLUSTER
        return await self._call(f"Cluster {body['metadata']['name']}", self.custom.create_cluster_custom_object(
            g, v, p, body, _request_timeout=REQUEST_TIMEOUT))

    async def patch_cluster_status(self, name: str, status: Obj) -> Obj:
        g, v, p = CLUSTER
        return await self._call(f"Cluster {name} status", self.custom.patch_cluster_custom_object_status(
            g, v, p, name, {"status": status}, _content_type=MERGE_PATCH, _request_timeout=REQUEST_TIMEOUT))

    # ------------------------------------------------------------ Lease
    async def get_lease(self, namespace: str, name: str) -> Obj:
        g, v, p = LEASE
        return await self._call(f"Lease {namespace}/{name}", self.custom.get_namespaced_custom_object(
            g, v, namespace, p, name, _request_timeout=REQUEST_TIMEOUT))

    async def create_lease(self, namespace: str, body: Obj) -> Obj:
        g, v, p = LEASE
        return await self._call(f"Lease {namespace}/{body['metadata']['name']}",
                                self.custom.create_namespaced_custom_object(
                                    g, v, namespace, p, body, _request_timeout=REQUEST_TIMEOUT))

    async def replace_lease(self, namespace: str, name: str, body: Obj) -> Obj:
        g, v, p = LEASE
        return await self._call(f"Lease {namespace}/{name}", self.custom.replace_namespaced_custom_object(
            g, v, namespace, p, name, body, _request_timeout=REQUEST_TIMEOUT))

    # ------------------------------------------------------------ Works
    async def list_works(self, namespace: str) -> tuple[list[Obj], str]:
        g, v, p = WORK
        listing = await self._call(f"Works in {namespace}", self.custom.list_namespaced_custom_object(
            g, v, namespace, p, _request_timeout=REQUEST_TIMEOUT))
        return list(listing.get("items") or []), str((listing.get("metadata") or {}).get("resourceVersion") or "")

    async def watch_works(self, namespace: str, resource_version: str) -> AsyncIterator[WatchEvent]:
        from kubernetes_asyncio import watch as k8s_watch

        g, v, p = WORK
        try:
            async with k8s_watch.Watch() as w:
                stream = w.stream(self.custom.list_namespaced_custom_object, g, v, namespace, p,
                                  resource_version=resource_version, timeout_seconds=WATCH_TIMEOUT,
                                  allow_watch_bookmarks=True)
                async for event in stream:
                    kind = event.get("type")
                    obj = event.get("object")
                    if kind in ("ADDED", "MODIFIED", "DELETED") and isinstance(obj, dict):
                        yield WatchEvent(kind, obj)
        except Exception as exc:  # noqa: BLE001
            raise translate(exc, f"watch Works in {namespace}") from exc

    async def patch_work_status(self, namespace: str, name: str, status: Obj) -> Obj:
        g, v, p = WORK
        return await self._call(f"Work {namespace}/{name} status", self.custom.patch_namespaced_custom_object_status(
            g, v, namespace, p, name, {"status": status}, _content_type=MERGE_PATCH,
            _request_timeout=REQUEST_TIMEOUT))

    # ------------------------------------------------------------ scheduling inputs
    async def list_queues(self) -> list[Obj]:
        g, v, p = QUEUE
        listing = await self._call("Queues", self.custom.list_cluster_custom_object(
            g, v, p, _request_timeout=REQUEST_TIMEOUT))
        return [dict(q, apiVersion=f"{g}/{v}", kind="Queue") for q in listing.get("items") or []]

    async def list_priority_classes(self) -> list[Obj]:
        g, v, p = PRIORITY_CLASS
        listing = await self._call("PriorityClasses", self.custom.list_cluster_custom_object(
            g, v, p, _request_timeout=REQUEST_TIMEOUT))
        return [dict(q, apiVersion=f"{g}/{v}", kind="PriorityClass") for q in listing.get("items") or []]

    # ------------------------------------------------------------ events
    async def create_event(self, namespace: str, body: Obj) -> None:
        response = await self._call(f"Event in {namespace}", self.core.create_namespaced_event(
            namespace, body, _preload_content=False, _request_timeout=REQUEST_TIMEOUT))
        response.release()

    async def close(self) -> None:
        await self.api_client.close()

