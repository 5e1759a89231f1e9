"""The kube gateway: a real member cluster's API server through kubernetes-asyncio.

The only module that talks to a member cluster's API. Objects stay wire dicts: lists are read
with ``_preload_content=False`` and parsed as JSON, watch events use the raw object the client
keeps beside its typed one, so nothing is lost to model (de)serialization. Traps handled
(reference/ecosystem.md §1):

* binding: the server answers a ``Status`` the client cannot turn into ``V1Binding``, so the
  Binding subresource is called with ``_preload_content=False`` and the HTTP status checked by
  hand; a 409 on the node the pod is already on is a success;
* every call has ``_request_timeout``, every watch ``timeout_seconds`` (no default timeouts);
* a watch's 410 becomes :class:`Gone` so the cache relists.

Nodes and all pods are watched (pods of other schedulers use node resources too); the agent
schedules only pods whose ``schedulerName`` is ``volcano`` or ``caldera``. Eviction marks the pod
``DisruptionTarget`` then deletes it with a grace period, as Volcano's evictor does.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any, AsyncIterator, Optional

import aiohttp
from kubernetes_asyncio import client as k8s
from kubernetes_asyncio import config as k8s_config
from kubernetes_asyncio import watch as k8s_watch
from kubernetes_asyncio.client.exceptions import ApiException

from member_agent.cluster.gateway import (
    AlreadyExists,
    BindConflict,
    GatewayError,
    Gone,
    Listing,
    NotFound,
    Obj,
    Unavailable,
    WatchEvent,
    pod_node,
)

log = logging.getLogger("caldera.agent.kube")
TIMEOUT = 15.0
#: Objects of this API group/version are held by the agent, never stored in the member cluster.
AGENT_OWNED_API = "batch.volcano.sh/v1alpha1"
WATCH_TIMEOUT = 300


def _error(exc: BaseException, what: str) -> Exception:
    if isinstance(exc, GatewayError):
        return exc
    if isinstance(exc, ApiException):
        if exc.status == 404:
            return NotFound(f"{what}: not found")
        if exc.status == 409:
            return AlreadyExists(f"{what}: already exists")
        if exc.status == 410:
            return Gone(f"{what}: resourceVersion too old")
        return Unavailable(f"{what}: HTTP {exc.status} {exc.reason}")
    if isinstance(exc, (aiohttp.ClientError, asyncio.TimeoutError, OSError)):
        return Unavailable(f"{what}: {type(exc).__name__}: {exc}")
    return exc  # type: ignore[return-value]


class KubeGateway:
    def __init__(self, api_client: k8s.ApiClient) -> None:
        self.api_client = api_client
        self.core = k8s.CoreV1Api(api_client)

    @classmethod
    async def from_kubeconfig(cls, path: str) -> "KubeGateway":
        return cls(await k8s_config.new_client_from_config(config_file=path))

    async def _raw(self, what: str, call: Any, ok: tuple[int, ...] = (200, 201, 202)) -> tuple[int, Obj]:
        """Run a client call with ``_preload_content=False``; the HTTP status and the JSON body."""
        try:
            response = await call
            body = await response.read()
            status = int(response.status)
            response.release()
        except Exception as exc:  # noqa: BLE001
            raise _error(exc, what) from exc
        try:
            data = json.loads(body) if body else {}
        except ValueError:
            data = {"message": body.decode(errors="replace")}
        if status not in ok and status not in (404, 409):
            raise Unavailable(f"{what}: HTTP {status}: {data.get('message', '')}")
        return status, data

    # ------------------------------------------------------------------ lists and watches
    async def _list(self, kind: str, fn: Any) -> Listing:
        status, data = await self._raw(f"list {kind}s", fn(_preload_content=False, _request_timeout=TIMEOUT))
        if status != 200:
            raise Unavailable(f"list {kind}s: HTTP {status}")
        items = [dict(item, apiVersion="v1", kind=kind) for item in data.get("items") or []]
        return Listing(items, str((data.get("metadata") or {}).get("resourceVersion") or ""))

    async def list_nodes(self) -> Listing:
        return await self._list("Node", self.core.list_node)

    async def list_pods(self) -> Listing:
        return await self._list("Pod", self.core.list_pod_for_all_namespaces)

    async def list_hyper_nodes(self) -> list[Obj]:
        """The member cluster's ``topology.volcano.sh/v1alpha1`` HyperNodes (none when the kind
        is not served there)."""
        custom = k8s.CustomObjectsApi(self.api_client)
        status, data = await self._raw("list hypernodes", custom.list_cluster_custom_object(
            "topology.volcano.sh", "v1alpha1", "hypernodes", _preload_content=False, _request_timeout=TIMEOUT))
        if status == 404:
            return []
        if status != 200:
            raise Unavailable(f"list hypernodes: HTTP {status}")
        return [dict(item, apiVersion="topology.volcano.sh/v1alpha1", kind="HyperNode")
                for item in data.get("items") or []]

    async def patch_hyper_node_status(self, name: str, status: Obj) -> None:
        """Write a HyperNode's ``status`` (nodeCount, conditions) through its status subresource;
        a JSON merge patch, so the conditions list is replaced whole."""
        custom = k8s.CustomObjectsApi(self.api_client)
        code, _ = await self._raw(f"patch hypernode {name} status", custom.patch_cluster_custom_object_status(
            "topology.volcano.sh", "v1alpha1", "hypernodes", name, {"status": status},
            _content_type="application/merge-patch+json", _preload_content=False, _request_timeout=TIMEOUT))
        if code == 404:
            raise NotFound(f"hypernode {name} not found")

    async def _watch(self, kind: str, fn: Any, resource_version: str) -> AsyncIterator[WatchEvent]:
        try:
            async with k8s_watch.Watch() as w:
                async for event in w.stream(fn, resource_version=resource_version, timeout_seconds=WATCH_TIMEOUT,
                                            allow_watch_bookmarks=True):
                    raw = event.get("raw_object")
                    if event.get("type") in ("ADDED", "MODIFIED", "DELETED") and isinstance(raw, dict):
                        yield WatchEvent(event["type"], dict(raw, apiVersion="v1", kind=kind))
        except Exception as exc:  # noqa: BLE001
            raise _error(exc, f"watch {kind}s") from exc

    def watch_nodes(self, resource_version: str) -> AsyncIterator[WatchEvent]:
        return self._watch("Node", self.core.list_node, resource_version)

    def watch_pods(self, resource_version: str) -> AsyncIterator[WatchEvent]:
        return self._watch("Pod", self.core.list_pod_for_all_namespaces, resource_version)

    # ------------------------------------------------------------------ pod writes
    async def create_pod(self, pod: Obj) -> Obj:
        md = dict(pod.get("metadata") or {})
        # The local Volcano Job lives in the agent, not in the member cluster: an owner reference
        # to it would point at an object the member's garbage collector cannot find.
        owners = [o for o in md.get("ownerReferences") or [] if o.get("apiVersion") != AGENT_OWNED_API]
        if owners:
            md["ownerReferences"] = owners
        else:
            md.pop("ownerReferences", None)
        pod = dict(pod, metadata=md)
        namespace = md.get("namespace") or "default"
        what = f"create pod {namespace}/{md.get('name')}"
        for attempt in range(2):
            status, data = await self._raw(what, self.core.create_namespaced_pod(
                namespace, pod, _preload_content=False, _request_timeout=TIMEOUT))
            if status == 409:
                raise AlreadyExists(f"{what}: already exists")
            if status != 404:
                return data
            if attempt == 0:
                await self.ensure_namespace(namespace)
        raise NotFound(f"{what}: namespace {namespace} not found")

    async def ensure_namespace(self, namespace: str) -> None:
        """Create the job's namespace in the member cluster, as Karmada propagates namespaces."""
        body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
        await self._raw(f"create namespace {namespace}", self.core.create_namespace(
            body, _preload_content=False, _request_timeout=TIMEOUT))

    async def get_pod(self, namespace: str, name: str) -> Obj:
        status, data = await self._raw(f"get pod {namespace}/{name}", self.core.read_namespaced_pod(
            name, namespace, _preload_content=False, _request_timeout=TIMEOUT))
        if status == 404:
            raise NotFound(f"pod {namespace}/{name} not found")
        return data

    async def delete_pod(self, namespace: str, name: str, grace_period_seconds: Optional[int] = None) -> None:
        kwargs: dict[str, Any] = {"_preload_content": False, "_request_timeout": TIMEOUT}
        if grace_period_seconds is not None:
            kwargs["grace_period_seconds"] = int(grace_period_seconds)
        await self._raw(f"delete pod {namespace}/{name}", self.core.delete_namespaced_pod(name, namespace, **kwargs))

    async def bind_pod(self, namespace: str, name: str, node: str) -> None:
        body = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name, "namespace": namespace},
                "target": {"apiVersion": "v1", "kind": "Node", "name": node}}
        what = f"bind pod {namespace}/{name} to {node}"
        status, data = await self._raw(what, self.core.create_namespaced_pod_binding(
            name, namespace, body, _preload_content=False, _request_timeout=TIMEOUT))
        if status == 404:
            raise NotFound(f"{what}: pod not found")
        if status == 409:
            current = pod_node(await self.get_pod(namespace, name))
            if current != node:
                raise BindConflict(f"{what}: {data.get('message') or f'already assigned to node {current}'}")

    async def evict_pod(self, namespace: str, name: str, reason: str, grace_period_seconds: int = 30) -> None:
        try:
            pod = await self.get_pod(namespace, name)
        except NotFound:
            return
        conditions = [c for c in (pod.get("status") or {}).get("conditions") or [] if c.get("type") != "DisruptionTarget"]
        conditions.append({"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler",
                           "message": reason})
        try:
            await self._raw(f"mark pod {namespace}/{name} disrupted", self.core.patch_namespaced_pod_status(
                name, namespace, {"status": {"conditions": conditions}}, _preload_content=False,
                _request_timeout=TIMEOUT))
        except Unavailable as exc:
            log.debug("eviction condition on %s/%s: %s", namespace, name, exc)
        await self.delete_pod(namespace, name, grace_period_seconds)

    async def annotate_pod(self, namespace: str, name: str, annotations: dict[str, Optional[str]]) -> None:
        status, _ = await self._raw(f"annotate pod {namespace}/{name}", self.core.patch_namespaced_pod(
            name, namespace, {"metadata": {"annotations": annotations}}, _preload_content=False,
            _request_timeout=TIMEOUT))
        if status == 404:
            raise NotFound(f"pod {namespace}/{name} not found")

    async def nominate_pod(self, namespace: str, name: str, node: Optional[str]) -> None:
        # JSON merge patch: a null removes the field, which a strategic merge patch of status keeps.
        status, _ = await self._raw(f"nominate pod {namespace}/{name}", self.core.patch_namespaced_pod_status(
            name, namespace, {"status": {"nominatedNodeName": node}}, _content_type="application/merge-patch+json",
            _preload_content=False, _request_timeout=TIMEOUT))
        if status == 404:
            raise NotFound(f"pod {namespace}/{name} not found")

    async def record_event(self, involved: Obj, event_type: str, reason: str, message: str) -> None:
        md = involved.get("metadata") or {}
        namespace = md.get("namespace") or "default"
        body = {
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"generateName": f"{md.get('name', 'caldera')}.", "namespace": namespace},
            "involvedObject": {"apiVersion": involved.get("apiVersion"), "kind": involved.get("kind"),
                               "namespace": namespace, "name": md.get("name"), "uid": md.get("uid")},
            "type": event_type, "reason": reason, "message": message,
            "source": {"component": "caldera-agent"}, "reportingComponent": "caldera-agent",
        }
        try:
            await self._raw("record event", self.core.create_namespaced_event(
                namespace, body, _preload_content=False, _request_timeout=TIMEOUT))
        except GatewayError as exc:
            log.debug("event %s on %s/%s not recorded: %s", reason, namespace, md.get("name"), exc)

    # ------------------------------------------------------------------ job plugins' objects
    def _object_calls(self, kind: str) -> tuple[Any, Any, Any]:
        """(create, patch, delete) client methods for a plugin object's kind."""
        if kind == "NetworkPolicy":
            net = k8s.NetworkingV1Api(self.api_client)
            return (net.create_namespaced_network_policy, net.patch_namespaced_network_policy,
                    net.delete_namespaced_network_policy)
        snake = {"ConfigMap": "config_map", "Service": "service", "Secret": "secret",
                 "PersistentVolumeClaim": "persistent_volume_claim"}.get(kind)
        if snake is None:
            raise GatewayError(f"the kube gateway does not manage {kind} objects")
        return (getattr(self.core, f"create_namespaced_{snake}"), getattr(self.core, f"patch_namespaced_{snake}"),
                getattr(self.core, f"delete_namespaced_{snake}"))

    async def apply_object(self, obj: Obj) -> None:
        md = obj.get("metadata") or {}
        kind, namespace, name = str(obj.get("kind")), md.get("namespace") or "default", md.get("name")
        create, patch, _ = self._object_calls(kind)
        what = f"{kind} {namespace}/{name}"
        body = dict(obj, metadata={k: v for k, v in md.items() if k != "ownerReferences"})
        status, data = await self._raw(f"create {what}", create(namespace, body, _preload_content=False,
                                                               _request_timeout=TIMEOUT))
        if status == 404:
            await self.ensure_namespace(namespace)
            status, data = await self._raw(f"create {what}", create(namespace, body, _preload_content=False,
                                                                   _request_timeout=TIMEOUT))
        if status == 409:
            status, data = await self._raw(f"update {what}", patch(
                name, namespace, body, _content_type="application/merge-patch+json", _preload_content=False,
                _request_timeout=TIMEOUT))
        if status == 404:
            raise NotFound(f"{what}: {data.get('message') or 'not served by the member cluster'}")

    async def delete_object(self, kind: str, namespace: str, name: str) -> None:
        _, _, delete = self._object_calls(kind)
        await self._raw(f"delete {kind} {namespace}/{name}", delete(name, namespace, _preload_content=False,
                                                                    _request_timeout=TIMEOUT))

    async def pod_log(self, namespace: str, name: str, follow: bool = False, tail_lines: Optional[int] = None,
                      limit_bytes: Optional[int] = None, container: str = "") -> AsyncIterator[bytes]:
        """``GET pods/NAME/log`` on the member API, streamed (the log shipper serves it to the federation)."""
        what = f"log of pod {namespace}/{name}"
        options: dict[str, Any] = {"follow": follow, "_preload_content": False}
        if tail_lines is not None:
            options["tail_lines"] = tail_lines
        if limit_bytes:
            options["limit_bytes"] = limit_bytes
        if container:
            options["container"] = container
        try:
            response = await self.core.read_namespaced_pod_log(name, namespace, **options)
        except Exception as exc:  # noqa: BLE001
            raise _error(exc, what) from exc
        try:
            if int(response.status) == 404:
                raise NotFound(f"{what}: not found")
            async for chunk in response.content.iter_any():
                yield chunk
        finally:
            response.release()

    async def close(self) -> None:
        await self.api_client.close()
