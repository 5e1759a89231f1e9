"""Member Pods and PodGroups at the federation: what the agents report, served read-only.

Each agent writes the pods and PodGroups of its Works into its own execution namespace
(``karmada-es-<cluster>``), named ``<namespace>.<name>`` (a namespace holds no dot, so the split is
unambiguous; docs/protocol.md "Member pods"). Those *raw* copies are ordinary stored objects:
durable, versioned by the store, written only by that cluster's agent (RBAC + the agent
restriction).

This module keeps the *view* users read: every raw copy translated back to its member namespace
and name, with the annotation ``resource.karmada.io/cached-from-cluster: <cluster>`` (as
karmada-search marks what it caches). The index is fed by a store listener, so each change is
translated once; the translated event is published on the watch hub under its own resource key
with the raw event's resourceVersion, so watches, selectors and resourceVersions work as for
any kind.

The key: during a failover two clusters can hold a pod of the same name (names are fixed per
task index). A list shows every copy; a GET by name answers the copy of the job's current
placement generation (the highest ``caldera.io/placement-generation`` label; ties: a copy that is
not finished, then the cluster name).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from typing import Any

import orjson

from federation.apiserver import status as st
from federation.apiserver.objects import resource_key
from federation.apiserver.selectors import Predicate
from policies.kinds import KindInfo, lookup

Obj = dict[str, Any]
CACHED_FROM = "resource.karmada.io/cached-from-cluster"
GENERATION_LABEL = "caldera.io/placement-generation"
EXECUTION_PREFIX = "karmada-es-"
PODS = lookup("v1", "Pod")
PODGROUPS = lookup("scheduling.volcano.sh/v1beta1", "PodGroup")
MEMBER_KINDS = (PODS, PODGROUPS)
_RAW_KEYS = {resource_key(info): info for info in MEMBER_KINDS}


def view_key(info: KindInfo) -> str:
    """The watch hub's resource key of the translated objects."""
    return "member:" + resource_key(info)


def is_member_kind(info: KindInfo | None) -> bool:
    return info is not None and info.kind in ("Pod", "PodGroup") and info.group in ("", PODGROUPS.group)


def is_execution_namespace(namespace: str | None) -> bool:
    return bool(namespace) and str(namespace).startswith(EXECUTION_PREFIX)


def raw_name(namespace: str, name: str) -> str:
    return f"{namespace}.{name}"


def translate(raw: Obj) -> Obj | None:
    """The member object a raw copy stands for; None for an object outside the convention."""
    meta = raw.get("metadata") or {}
    raw_ns = meta.get("namespace") or ""
    namespace, dot, name = str(meta.get("name") or "").partition(".")
    if not is_execution_namespace(raw_ns) or not dot or not namespace or not name:
        return None
    cluster = raw_ns[len(EXECUTION_PREFIX):]
    annotations = dict(meta.get("annotations") or {})
    annotations[CACHED_FROM] = cluster
    view_meta = dict(meta, namespace=namespace, name=name, annotations=annotations)
    view_meta.pop("managedFields", None)
    return dict(raw, metadata=view_meta)


def cluster_of(obj: Obj) -> str:
    return str(((obj.get("metadata") or {}).get("annotations") or {}).get(CACHED_FROM) or "")


def _generation(obj: Obj) -> int:
    text = ((obj.get("metadata") or {}).get("labels") or {}).get(GENERATION_LABEL) or "0"
    return int(text) if str(text).isdigit() else 0


def _finished(obj: Obj) -> bool:
    return (obj.get("status") or {}).get("phase") in ("Succeeded", "Failed", "Completed")


def current_copy(copies: dict[str, Obj]) -> Obj:
    """The copy of the current placement generation among one name's copies (one per cluster)."""
    ordered = [copies[cluster] for cluster in sorted(copies)]  # max() keeps the first of equals
    return max(ordered, key=lambda o: (_generation(o), not _finished(o)))


def page_key(obj: Obj) -> tuple[str, str]:
    """Where a page of view items ends: copies of one name differ by cluster (``\\0`` sorts first)."""
    meta = obj["metadata"]
    return meta.get("namespace") or "", f"{meta['name']}\0{cluster_of(obj)}"


class MemberView:
    """The translated pods and PodGroups, indexed by (namespace, name) then cluster."""

    def __init__(self, publish: Callable[[str, str, Obj, Obj | None], None]) -> None:
        self._publish = publish
        self._index: dict[str, dict[tuple[str, str], dict[str, Obj]]] = {key: {} for key in _RAW_KEYS}
        #: every copy in list order, rebuilt on the first list after a change (kubectl pages through it)
        self._sorted: dict[str, list[Obj] | None] = {key: None for key in _RAW_KEYS}
        #: the continue key of each entry of ``_sorted`` (same order), for kubectl's pages
        self._keys: dict[str, list[tuple[str, str]]] = {key: [] for key in _RAW_KEYS}
        #: each copy's JSON, encoded once (a list of 10,000 pods is a join, not 10,000 encodings)
        self._json: dict[int, bytes] = {}

    def load(self, items: Any) -> None:
        """Index what the store holds at start-up (``(resource, obj)`` pairs)."""
        for resource, obj in items:
            if resource in _RAW_KEYS:
                self._put(resource, translate(obj))

    def on_change(self, type_: str, resource: str, obj: Obj, previous: Obj | None) -> None:
        """The store listener: translate once, index, publish under the view's key."""
        info = _RAW_KEYS.get(resource)
        if info is None:
            return
        view = translate(obj)
        if view is None:
            return
        before = translate(previous) if previous is not None else None
        if type_ == "DELETED":
            self._drop(resource, view)
        else:
            self._put(resource, view)
        self._publish(type_, view_key(info), view, before)

    def _put(self, resource: str, view: Obj | None) -> None:
        if view is None:
            return
        meta = view["metadata"]
        copies = self._index[resource].setdefault((meta["namespace"], meta["name"]), {})
        replaced = copies.get(cluster_of(view))
        if replaced is not None:
            self._json.pop(id(replaced), None)
        copies[cluster_of(view)] = view
        self._json[id(view)] = orjson.dumps(view)  # encoded once per change, so no list pays for it
        self._sorted[resource] = None

    def _drop(self, resource: str, view: Obj) -> None:
        meta = view["metadata"]
        key = (meta["namespace"], meta["name"])
        copies = self._index[resource].get(key)
        if copies is not None:
            gone = copies.pop(cluster_of(view), None)
            if gone is not None:
                self._json.pop(id(gone), None)
            if not copies:
                del self._index[resource][key]
        self._sorted[resource] = None

    page_key = staticmethod(page_key)

    def encoded(self, items: list[Obj]) -> list[bytes]:
        """The JSON of listed copies, each encoded once while it is current."""
        cache = self._json
        out = []
        for obj in items:
            line = cache.get(id(obj))
            if line is None:
                line = cache[id(obj)] = orjson.dumps(obj)
            out.append(line)
        return out

    # -- reads -----------------------------------------------------------------------------

    def list(self, info: KindInfo, namespace: str | None, predicate: Predicate | None) -> list[Obj]:
        """Every copy, sorted by namespace, name, cluster (kube lists are sorted by key)."""
        return self.list_after(info, namespace, predicate, None)

    def _ordered(self, resource: str) -> list[Obj]:
        ordered = self._sorted[resource]
        if ordered is None:
            index = self._index[resource]
            ordered = self._sorted[resource] = [obj for k in sorted(index) for _, obj in sorted(index[k].items())]
            self._keys[resource] = [page_key(o) for o in ordered]
        return ordered

    def list_after(self, info: KindInfo, namespace: str | None, predicate: Predicate | None,
                   after: tuple[str, str] | None) -> list[Obj]:
        """As :meth:`list`, from just after a continue key (:func:`page_key`): a binary search."""
        resource = resource_key(info)
        items = self._ordered(resource)
        if after is not None:
            items = items[bisect.bisect_right(self._keys[resource], tuple(after)):]
        if namespace is not None:
            items = [o for o in items if o["metadata"]["namespace"] == namespace]
        if predicate is not None:
            items = [o for o in items if predicate(o)]
        return list(items)

    def copies(self, info: KindInfo, namespace: str, name: str) -> dict[str, Obj]:
        return dict(self._index[resource_key(info)].get((namespace, name)) or {})

    def get(self, info: KindInfo, namespace: str, name: str) -> Obj:
        copies = self._index[resource_key(info)].get((namespace, name))
        if not copies:
            raise st.not_found(info, name)
        return current_copy(copies)

    def count(self, info: KindInfo) -> int:
        return sum(len(c) for c in self._index[resource_key(info)].values())


def read_only(info: KindInfo, namespace: str | None, name: str, view: MemberView, verb: str) -> st.ApiError:
    """405 for a user's write of a member kind at the federation, naming the member cluster."""
    clusters = sorted(view.copies(info, namespace, name)) if namespace and name else []
    where = (f"cached from member cluster{'s' if len(clusters) > 1 else ''} {', '.join(clusters)}" if clusters
             else "they live in the member clusters")
    target = f'{info.resource_ref} "{name}"' if name else info.resource_ref
    return st.ApiError(405, "MethodNotAllowed",
                       f"{target}: {verb} is not allowed at the federation: {info.plural} are read-only here "
                       f"({where}, annotation {CACHED_FROM}); write to the member cluster's API server instead")
