"""Record ``v1 Event`` objects about federation objects (controllers use this; describe lists them).

An Event is named after its object and a hash of (uid, reason, message), so repeating the
same event bumps ``count`` and ``lastTimestamp`` instead of piling up objects, like
client-go's event correlator.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from kubernetes_asyncio import client as k8s

Clock = Callable[[], datetime]
MERGE_PATCH = "application/merge-patch+json"


def _utc_now() -> datetime:
    return datetime.now(UTC)


def _stamp(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _as_dict(obj: Any) -> dict[str, Any]:
    if isinstance(obj, dict):
        return obj
    to_wire = getattr(obj, "to_wire", None)
    if callable(to_wire):
        wire: dict[str, Any] = to_wire()
        return wire
    raise TypeError(f"record_event needs a wire dict or a Caldera model, got {type(obj).__name__}")


def event_body(obj: Any, reason: str, message: str, type_: str = "Normal",
               component: str = "caldera-controller", now: Clock = _utc_now) -> dict[str, Any]:
    """The Event object for ``obj`` (a wire dict or a model with ``to_wire``)."""
    wire = _as_dict(obj)
    meta = wire.get("metadata") or {}
    name = meta.get("name", "")
    namespace = meta.get("namespace") or "default"
    digest = hashlib.sha256(f"{meta.get('uid', '')}|{reason}|{message}".encode()).hexdigest()[:16]
    stamp = _stamp(now())
    involved = {"apiVersion": wire.get("apiVersion", ""), "kind": wire.get("kind", ""), "name": name,
                "uid": meta.get("uid", ""), "resourceVersion": meta.get("resourceVersion", "")}
    if meta.get("namespace"):
        involved["namespace"] = meta["namespace"]
    return {"apiVersion": "v1", "kind": "Event",
            "metadata": {"name": f"{name}.{digest}", "namespace": namespace},
            "involvedObject": involved, "reason": reason, "message": message, "type": type_,
            "count": 1, "firstTimestamp": stamp, "lastTimestamp": stamp,
            "source": {"component": component}, "reportingComponent": component}


async def record_event(api: k8s.ApiClient, obj: Any, reason: str, message: str, type_: str = "Normal",
                       component: str = "caldera-controller", now: Clock = _utc_now,
                       timeout: float = 10.0) -> dict[str, Any]:
    """Create the Event, or bump its count if the same event was recorded before. Returns it."""
    body = event_body(obj, reason, message, type_, component, now)
    core = k8s.CoreV1Api(api)
    namespace, name = body["metadata"]["namespace"], body["metadata"]["name"]
    resp = await core.create_namespaced_event(namespace, body, _preload_content=False, _request_timeout=timeout)
    if resp.status != 409:
        if resp.status >= 300:
            raise k8s.ApiException(status=resp.status, reason=await resp.text())
        created: dict[str, Any] = json.loads(await resp.read())
        return created
    current = await core.read_namespaced_event(name, namespace, _preload_content=False, _request_timeout=timeout)
    existing = json.loads(await current.read())
    patch = {"count": int(existing.get("count") or 1) + 1, "lastTimestamp": body["lastTimestamp"],
             "metadata": {"resourceVersion": existing["metadata"]["resourceVersion"]}}
    resp = await core.patch_namespaced_event(name, namespace, patch, _content_type=MERGE_PATCH,
                                             _preload_content=False, _request_timeout=timeout)
    if resp.status >= 300:
        raise k8s.ApiException(status=resp.status, reason=await resp.text())
    patched: dict[str, Any] = json.loads(await resp.read())
    return patched
