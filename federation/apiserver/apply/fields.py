"""Field sets of objects, as server-side apply (structured-merge-diff) sees them. Pure.

A path is a tuple of FieldsV1 keys: ``f:<name>`` (map field), ``k:{"name":"x"}`` (item of a
list of type map, by its keys), ``v:<json>`` (member of a set) and the list itself for atomic
lists. List semantics come from the kind's schema, by path (:mod:`.list_types`, also published
as ``x-kubernetes-list-type`` in the OpenAPI); a list the schema does not declare is atomic.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import orjson

from federation.apiserver.apply.list_types import KEY_DEFAULTS, FieldPath, ListType, list_type, lists_of

Path = tuple[str, ...]
Obj = dict[str, Any]
Lists = Mapping[FieldPath, ListType]
#: metadata the server owns: never part of anyone's field set
SERVER_METADATA = frozenset({"name", "namespace", "uid", "resourceVersion", "generation", "creationTimestamp",
                             "deletionTimestamp", "deletionGracePeriodSeconds", "managedFields", "selfLink"})


def _dumps(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


def item_key(keys: tuple[str, ...], item: Any) -> str | None:
    """``k:{...}`` for an item of a map list (None if the item lacks its keys: the list is atomic)."""
    if not keys or not isinstance(item, dict) or any(k not in item and k not in KEY_DEFAULTS for k in keys):
        return None
    return "k:" + _dumps({k: _key_value(item, k) for k in keys})


def _key_value(item: Obj, key: str) -> Any:
    return item.get(key, KEY_DEFAULTS.get(key))


def _has_key(item: Any, wanted: Obj) -> bool:
    return isinstance(item, dict) and all(_key_value(item, k) == v for k, v in wanted.items())


def _list_kind(declared: ListType, items: list[Any]) -> str:
    kind, keys = declared
    if kind == "set" and all(not isinstance(i, (dict, list)) for i in items):
        return "set"
    if kind == "map" and all(item_key(keys, i) is not None for i in items):
        return "map"
    return "atomic"


def leaves(obj: Any, lists: Lists, prefix: Path = (), names: FieldPath = ()) -> Iterable[tuple[Path, bool]]:
    """Every owned path of ``obj`` with whether it is a leaf (False: a map-list item's own node).
    ``names`` is the schema path of ``obj`` (field names, list items transparent)."""
    if isinstance(obj, dict):
        if not obj and prefix:
            yield prefix, True
        for key, value in obj.items():
            yield from _field(prefix + (f"f:{key}",), names + (key,), value, lists)
    elif isinstance(obj, list):
        declared = list_type(lists, names)
        kind = _list_kind(declared, obj)
        if kind == "atomic":
            yield prefix, True
        elif kind == "set":
            for value in obj:
                yield prefix + ("v:" + _dumps(value),), True
        else:
            for item in obj:
                path = prefix + (str(item_key(declared[1], item)),)
                yield path, False
                yield from leaves(item, lists, path, names)
    else:
        yield prefix, True


def _field(path: Path, names: FieldPath, value: Any, lists: Lists) -> Iterable[tuple[Path, bool]]:
    if isinstance(value, dict) and value or isinstance(value, list) and _list_kind(
            list_type(lists, names), value) != "atomic":
        yield path, False
        yield from leaves(value, lists, path, names)
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
    lists = lists_of(str(obj.get("apiVersion", "")), str(obj.get("kind", "")))
    return {path for path, _leaf in leaves(body, lists)}


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


def merge(live: Any, config: Any, lists: Lists | None = None, names: FieldPath = ()) -> Any:
    """``config`` laid over ``live``: maps field by field, map lists item by item, sets as unions,
    everything else (atomic lists, scalars) replaced. ``names`` is the schema path of ``live``."""
    lists = lists or {}
    if isinstance(config, dict) and isinstance(live, dict):
        out = dict(live)
        for key, value in config.items():
            out[key] = merge(live.get(key), value, lists, names + (key,)) if key in live else value
        return out
    if isinstance(config, list) and isinstance(live, list):
        declared = list_type(lists, names)
        kind = _list_kind(declared, config)
        if kind == "set" and _list_kind(declared, live) == "set":
            return live + [v for v in config if v not in live]
        if kind == "map" and _list_kind(declared, live) == "map":
            keys = declared[1]
            by_key = {item_key(keys, i): i for i in config}
            out_list = [merge(i, by_key.pop(item_key(keys, i)), lists, names) if item_key(keys, i) in by_key else i
                        for i in live]
            return out_list + [i for i in config if item_key(keys, i) in by_key]
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
