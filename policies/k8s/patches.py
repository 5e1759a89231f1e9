"""JSON merge patch (RFC 7386) and JSON patch (RFC 6902), the one copy every caller uses: the API
server's PATCH, controllers' status writes and ``caldera apply`` (diffs), JobFlow's template
patches and Karmada's plaintext overriders. Strategic merge patch is the API server's own
(it needs each kind's patch-merge keys) and is not here.

* :func:`merge_patch` applies a merge patch: objects merge key by key, ``null`` deletes, any
  other value (lists included) replaces; a patch that is not an object replaces the target.
* :func:`merge_diff` is the inverse: the merge patch turning ``old`` into ``new`` (``{}`` when
  they are equal), so only what changed is sent.
* :func:`json_patch` applies RFC 6902 operations in order to a copy: any failure raises
  :class:`PatchError` and leaves the target untouched. ``status`` says whose fault it is: 400
  for a malformed patch (not a list, no ``op``/``path``, unknown op, a pointer without ``/``),
  422 for a well-formed patch that does not apply (missing path, index out of range, failed
  ``test``), as kube-apiserver answers. ``test`` compares JSON values, so ``true`` is not ``1``. As kube's json-patch (v4) does, a
  missing ``value`` reads as ``null`` and an index may have leading zeros.
"""

from __future__ import annotations

import copy
from typing import Any

BAD_REQUEST, UNPROCESSABLE = 400, 422


class PatchError(ValueError):
    """A patch that is malformed (status 400) or does not apply (422); the message names the path."""

    def __init__(self, message: str, status: int = UNPROCESSABLE) -> None:
        self.status = status
        super().__init__(message)


# --------------------------------------------------------------------------- merge patch


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: ``target`` with ``patch`` applied (a new value; ``target`` is not changed)."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def merge_diff(old: Any, new: Any) -> Any:
    """The merge patch turning ``old`` into ``new``: ``{}`` when equal, nested objects diffed."""
    if not isinstance(old, dict) or not isinstance(new, dict):
        return new
    patch: dict[str, Any] = {key: None for key in old if key not in new}
    for key, value in new.items():
        if key not in old:
            patch[key] = value
        elif not json_equal(old[key], value):
            patch[key] = merge_diff(old[key], value)
    return patch


def json_equal(a: Any, b: Any) -> bool:
    """Equality of JSON values: unlike Python's ``==``, ``true`` is neither ``1`` nor ``1.0``."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


# --------------------------------------------------------------------------- JSON patch


def _pointer(path: Any) -> list[str]:
    if not isinstance(path, str):
        raise PatchError(f"invalid JSON pointer {path!r}: must be a string", BAD_REQUEST)
    if path == "":
        return []
    if not path.startswith("/"):
        raise PatchError(f"invalid JSON pointer {path!r}: must start with '/'", BAD_REQUEST)
    return [t.replace("~1", "/").replace("~0", "~") for t in path[1:].split("/")]


def _index(container: list[Any], token: str, path: str, allow_end: bool) -> int:
    if token == "-" and allow_end:
        return len(container)
    if not token.isdigit():
        raise PatchError(f"JSON patch path {path!r}: {token!r} is not an array index")
    index = int(token)
    if index >= len(container) + (1 if allow_end else 0):
        raise PatchError(f"JSON patch path {path!r}: index {index} out of range")
    return index


def _parent(doc: Any, tokens: list[str], path: str) -> Any:
    node = doc
    for token in tokens[:-1]:
        if isinstance(node, dict):
            if token not in node:
                raise PatchError(f"JSON patch path {path!r}: {token!r} does not exist")
            node = node[token]
        elif isinstance(node, list):
            node = node[_index(node, token, path, False)]
        else:
            raise PatchError(f"JSON patch path {path!r}: cannot descend into a scalar")
    return node


def _member(doc: Any, path: str) -> tuple[Any, str | int]:
    """The container holding the existing member at ``path`` and its key or index."""
    tokens = _pointer(path)
    parent, last = _parent(doc, tokens, path), tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise PatchError(f"JSON patch path {path!r} does not exist")
        return parent, last
    if isinstance(parent, list):
        return parent, _index(parent, last, path, False)
    raise PatchError(f"JSON patch path {path!r}: not a container")


def _get(doc: Any, path: str) -> Any:
    if not _pointer(path):
        return doc
    parent, key = _member(doc, path)
    return parent[key]


def _add(doc: Any, path: str, value: Any) -> Any:
    tokens = _pointer(path)
    if not tokens:
        return value
    parent, last = _parent(doc, tokens, path), tokens[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        parent.insert(_index(parent, last, path, True), value)
    else:
        raise PatchError(f"JSON patch path {path!r}: not a container")
    return doc


def _remove(doc: Any, path: str) -> Any:
    if not _pointer(path):
        raise PatchError("JSON patch cannot remove the whole document")
    parent, key = _member(doc, path)
    del parent[key]
    return doc


def _apply(doc: Any, op: dict[str, Any], number: int) -> Any:
    kind, path = op["op"], op["path"]
    if kind == "add":
        return _add(doc, path, copy.deepcopy(op.get("value")))
    if kind == "remove":
        return _remove(doc, path)
    if kind == "replace":
        _get(doc, path)
        if not _pointer(path):
            return copy.deepcopy(op.get("value"))
        return _add(_remove(doc, path), path, copy.deepcopy(op.get("value")))
    if kind in ("move", "copy"):
        source = op.get("from")
        if not isinstance(source, str):
            raise PatchError(f"JSON patch {kind} operation {number} needs 'from'", BAD_REQUEST)
        value = copy.deepcopy(_get(doc, source))
        if kind == "move":
            doc = _remove(doc, source)
        return _add(doc, path, value)
    if kind == "test":
        if not json_equal(_get(doc, path), op.get("value")):
            raise PatchError(f"JSON patch test failed at {path!r}")
        return doc
    raise PatchError(f"JSON patch operation {number}: unknown op {kind!r}", BAD_REQUEST)


def json_patch(target: Any, operations: Any) -> Any:
    """RFC 6902: ``target`` with ``operations`` applied in order, as a new value."""
    if not isinstance(operations, list):
        raise PatchError("a JSON patch must be a list of operations", BAD_REQUEST)
    doc = copy.deepcopy(target)
    for number, op in enumerate(operations):
        if not isinstance(op, dict) or "op" not in op or "path" not in op:
            raise PatchError(f"JSON patch operation {number} needs 'op' and 'path'", BAD_REQUEST)
        _pointer(op["path"])
        doc = _apply(doc, op, number)
    return doc
