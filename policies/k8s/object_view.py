"""Typed views of Kubernetes objects in wire form (plain JSON dicts), for the pure cores.

The federation's placement adapters and the member scheduler's snapshot builder read objects
that arrive as dicts (from the store, a state file or a pydantic model's dump). These
``TypedDict`` views name the fields those readers use, so mypy checks every key they read and
the type it has; at run time a view *is* the dict (no copy, no validation: the API server and
``policies`` validated the object before it got here).

Only the fields the cores read are declared (``total=False``: any may be absent). A kind's
``spec`` and ``status`` stay ``Mapping[str, Any]`` where their shape varies by kind.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypedDict, cast


class OwnerReferenceView(TypedDict, total=False):
    apiVersion: str
    kind: str
    name: str
    uid: str
    controller: bool


class ObjectMetaView(TypedDict, total=False):
    name: str
    namespace: str
    uid: str
    generation: int
    resourceVersion: str
    labels: dict[str, str]
    annotations: dict[str, str]
    creationTimestamp: str
    deletionTimestamp: str
    ownerReferences: list[OwnerReferenceView]


class ObjectView(TypedDict, total=False):
    apiVersion: str
    kind: str
    metadata: ObjectMetaView
    spec: Mapping[str, Any]
    status: Mapping[str, Any]


class ConditionView(TypedDict, total=False):
    type: str
    status: str
    reason: str
    message: str
    lastTransitionTime: str


#: An empty metadata view, shared (never written): what :func:`meta_of` gives an object without one.
NO_META: ObjectMetaView = {}


def object_view(obj: Mapping[str, Any]) -> ObjectView:
    """``obj`` seen as a Kubernetes object (the same mapping, typed)."""
    return cast(ObjectView, obj)


def meta_of(obj: Mapping[str, Any]) -> ObjectMetaView:
    """``obj.metadata`` as a typed view (:data:`NO_META` when absent or empty)."""
    meta = obj.get("metadata")
    return cast(ObjectMetaView, meta) if meta else NO_META


def conditions_of(status: Mapping[str, Any]) -> list[ConditionView]:
    """``status.conditions`` as typed views (an empty list when absent)."""
    return cast(list[ConditionView], status.get("conditions") or [])
