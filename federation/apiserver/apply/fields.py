"""Field sets of objects, as server-side apply (structured-merge-diff) sees them. Pure.

A path is a tuple of FieldsV1 keys: ``f:<name>`` (map field), ``k:{"name":"x"}`` (item of a
list of type map, by its keys), ``v:<json>`` (member of a set) and the list itself for atomic
lists. List semantics come from :data:`MAP_LISTS` / :data:`SET_LISTS` (also published as
``x-kubernetes-list-type`` in the OpenAPI); every other list is atomic, as CRD lists are.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson

Path = tuple[str, ...]
Obj = dict[str, Any]

#: list field name -> its map keys (x-kubernetes-list-type: map)
MAP_LISTS: dict[str, tuple[str, ...]] = {
    "containers": ("name",), "initContainers": ("name",), "ephemeralContainers": ("name",),
    "tasks": ("name",), "env": ("name",), "volumes": ("name",), "volumeMounts": ("mountPath",),
    "ports": ("containerPort", "protocol"), "conditions": ("type",), "imagePullSecrets": ("name",),
    "flows": ("name",), "ownerReferences": ("uid",),
}
#: a map key an item may leave out, and the value kube defaults it to before merging
#: (container ports are keyed by containerPort and protocol, protocol defaulting to TCP)
KEY_DEFAULTS: dict[str, Any] = {"protocol": "TCP"}
#: list fields that are sets of scalars (x-kubernetes-list-type: set)
SET_LISTS = frozenset({"finalizers"})
#: metadata the server owns: never part of anyone's field set
SERVER_METADATA = frozenset({"name", "namespace", "uid", "resourceVersion", "generation", "creationTimestamp",
                             "deletionTimestamp", "deletionGracePeriodSeconds", "managedFields", "selfLink"})


def _dumps(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


def item_key(list_name: str, item: Any) -> str | None:
    """``k:{...}`` for an item of a map list (None if the item lacks its keys: the list is atomic)."""
    keys = MAP_LISTS.get(list_name)
    if not keys or not isinstance(item, dict) or any(k not in item and k not in KEY_DEFAULTS for k in keys):
        return None
    return "k:" + _dumps({k: _key_value(item, k) for k in keys})


def _key_value(item: Obj, key: str) -> Any:
    return item.get(key, KEY_DEFAULTS.get(key))


def _has_key(item: Any, wanted: Obj) -> bool:
    return isinstance(item, dict) and all(_key_value(item, k) == v for k, v in wanted.items())


def _list_kind(name: str, items: list[Any]) -> str:
    if name in SET_LISTS and all(not isinstance(i, (dict, list)) for i in items):
        return "set"
    if name in MAP_LISTS and all(item_key(name, i) is not None for i in items):
        return "map"
    return "atomic"


def leaves(obj: Any, prefix: Path = (), name: str = "") -> Iterable[tuple[Path, bool]]:
    """Every owned path of ``obj`` with whether it is a leaf (False: a map-list item's own node)."""
    if isinstance(obj, dict):
        if not obj and prefix:
            yield prefix, True
        for key, value in obj.items():
            yield from _field(prefix + (f"f:{key}",), key, value)
    elif isinstance(obj, list):
        kind = _list_kind(name, obj)
        if kind == "atomic":
            yield prefix, True
        elif kind == "set":
            for value in obj:
                yield prefix + ("v:" + _dumps(value),), True
        else:
            for item in obj:
                path = prefix + (str(item_key(name, item)),)
                yield path, False
                yield from leaves(item, path)
    else:
        yield prefix, True


def _field(path: Path, key: str, value: Any) -> Iterable[tuple[Path, bool]]:
    if isinstance(value, dict) and value or isinstance(value, list) and _list_kind(key, value) != "atomic":
        yield path, False
        yield from leaves(value, path, key)
    else:
        yield path, True


def field_set(obj: Obj, subresource: str = "", has_status: bool = True) -> set[Path]:
    """The paths an object sets (server metadata excluded; the main resource of a kind with a
    status subresource excludes status, the status subresource is status only)."""
    body = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind")}
    meta = {k: v for k, v in (body.get("metadata") or {}).items() if k not in SERVER_METADATA}
    if meta:
        body["metadata"] = meta
    else:
        body.pop("metadata", None)
    if subresource == "status":
        body = {"status": body["status"]} if "status" in body else {}
    elif has_status:
        body.pop("status", None)
    return {path for path, _leaf in leaves(body)}


def get(obj: Any, path: Path) -> tuple[bool, Any]:
    """(present, value) at ``path``."""
    node = obj
    for element in path:
        kind, _, rest = element.partition(":")
        if kind == "f" and isinstance(node, dict) and rest in node:
            node = node[rest]
        elif kind == "k" and isinstance(node, list):
            wanted = orjson.loads(rest)
            node = next((i for i in node if _has_key(i, wanted)), _MISSING)
            if node is _MISSING:
                return False, None
        elif kind == "v" and isinstance(node, list):
            value = orjson.loads(rest)
            return (value in node), value
        else:
            return False, None
    return True, node


_MISSING = object()


def remove(obj: Any, path: Path) -> None:
    """Delete ``path`` from ``obj`` in place (nothing if absent); empty parents stay."""
    if not path:
        return
    present, parent = get(obj, path[:-1])
    if not present:
        return
    kind, _, rest = path[-1].partition(":")
    if kind == "f" and isinstance(parent, dict):
        parent.pop(rest, None)
    elif kind == "k" and isinstance(parent, list):
        wanted = orjson.loads(rest)
        parent[:] = [i for i in parent if not _has_key(i, wanted)]
    elif kind == "v" and isinstance(parent, list):
        value = orjson.loads(rest)
        parent[:] = [i for i in parent if i != value]


def merge(live: Any, config: Any, name: str = "") -> Any:
    """``config`` laid over ``live``: maps field by field, map lists item by item, sets as unions,
    everything else replaced."""
    if isinstance(config, dict) and isinstance(live, dict):
        out = dict(live)
        for key, value in config.items():
            out[key] = merge(live.get(key), value, key) if key in live else value
        return out
    if isinstance(config, list) and isinstance(live, list):
        kind = _list_kind(name, config)
        if kind == "set" and _list_kind(name, live) == "set":
            return live + [v for v in config if v not in live]
        if kind == "map" and _list_kind(name, live) == "map":
            by_key = {item_key(name, i): i for i in config}
            out_list = [merge(i, by_key.pop(item_key(name, i)), "") if item_key(name, i) in by_key else i
                        for i in live]
            return out_list + [i for i in config if item_key(name, i) in by_key]
    return config


def to_fields_v1(paths: Iterable[Path]) -> Obj:
    tree: Obj = {}
    for path in sorted(paths):
        node = tree
        for element in path:
            node = node.setdefault(element, {})
    _mark_nodes(tree)
    return tree


def _mark_nodes(tree: Obj) -> None:
    for key, child in tree.items():
        if key.startswith("k:") and child:
            child.setdefault(".", {})
        if child:
            _mark_nodes(child)


def from_fields_v1(tree: Any, prefix: Path = ()) -> set[Path]:
    paths: set[Path] = set()
    if not isinstance(tree, dict):
        return paths
    for key, child in tree.items():
        if key == ".":
            paths.add(prefix)
            continue
        path = prefix + (key,)
        if isinstance(child, dict) and child:
            paths |= from_fields_v1(child, path)
            if key.startswith("f:") and child:
                paths.add(path)
        else:
            paths.add(path)
    return paths


def path_string(path: Path) -> str:
    """kube's fieldpath.Path String: ``.spec.tasks[name="w"].replicas``, ``.metadata.finalizers[="x"]``."""
    out = ""
    for element in path:
        kind, _, rest = element.partition(":")
        if kind == "f":
            out += f".{rest}"
        elif kind == "k":
            keys = orjson.loads(rest)
            out += "[" + ",".join(f"{k}={_dumps(v)}" for k, v in keys.items()) + "]"
        elif kind == "v":
            out += f"[={rest}]"
        else:
            out += f"[{rest}]"
    return out
