"""PATCH bodies: JSON merge patch (RFC 7386), JSON patch (RFC 6902).

Strategic merge patches are applied by :mod:`federation.apiserver.strategic` (the registry sends
them there: lists merged by the built-in kinds' patch-merge keys; custom resources get 415). The
``strategic`` path below, a merge patch that drops ``$`` directives, is what remains for callers
without the kind at hand.
"""

from __future__ import annotations

import copy
from typing import Any

from federation.apiserver.status import ApiError, bad_request, unsupported_media

MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
APPLY = "application/apply-patch+yaml"
PATCH_TYPES = [JSON_PATCH, MERGE, STRATEGIC]


def merge_patch(target: Any, patch: Any, strategic: bool = False) -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if strategic and key.startswith("$"):
            continue
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value, strategic)
    return result


def _unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise bad_request(f"invalid JSON pointer {path!r}: must start with '/'")
    return [_unescape(t) for t in path[1:].split("/")]


def _index(container: list[Any], token: str, path: str, allow_end: bool) -> int:
    if token == "-" and allow_end:
        return len(container)
    if not token.isdigit():
        raise ApiError(422, "Invalid", f"JSON patch path {path!r}: {token!r} is not an array index")
    index = int(token)
    limit = len(container) + (1 if allow_end else 0)
    if index >= limit:
        raise ApiError(422, "Invalid", f"JSON patch path {path!r}: index {index} out of range")
    return index


def _parent(doc: Any, tokens: list[str], path: str) -> Any:
    node = doc
    for token in tokens[:-1]:
        if isinstance(node, dict):
            if token not in node:
                raise ApiError(422, "Invalid", f"JSON patch path {path!r}: {token!r} does not exist")
            node = node[token]
        elif isinstance(node, list):
            node = node[_index(node, token, path, False)]
        else:
            raise ApiError(422, "Invalid", f"JSON patch path {path!r}: cannot descend into a scalar")
    return node


def _get(doc: Any, path: str) -> Any:
    tokens = _pointer(path)
    if not tokens:
        return doc
    parent = _parent(doc, tokens, path)
    last = tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise ApiError(422, "Invalid", f"JSON patch path {path!r} does not exist")
        return parent[last]
    if isinstance(parent, list):
        return parent[_index(parent, last, path, False)]
    raise ApiError(422, "Invalid", f"JSON patch path {path!r}: not a container")


def _add(doc: Any, path: str, value: Any) -> Any:
    tokens = _pointer(path)
    if not tokens:
        return value
    parent = _parent(doc, tokens, path)
    last = tokens[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        parent.insert(_index(parent, last, path, True), value)
    else:
        raise ApiError(422, "Invalid", f"JSON patch path {path!r}: not a container")
    return doc


def _remove(doc: Any, path: str) -> Any:
    tokens = _pointer(path)
    if not tokens:
        raise ApiError(422, "Invalid", "JSON patch cannot remove the whole document")
    parent = _parent(doc, tokens, path)
    last = tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise ApiError(422, "Invalid", f"JSON patch remove: path {path!r} does not exist")
        del parent[last]
    elif isinstance(parent, list):
        del parent[_index(parent, last, path, False)]
    else:
        raise ApiError(422, "Invalid", f"JSON patch path {path!r}: not a container")
    return doc


def json_patch(target: Any, operations: Any) -> Any:
    """Apply RFC 6902 operations in order; any failure leaves ``target`` untouched."""
    if not isinstance(operations, list):
        raise bad_request("a JSON patch must be a list of operations")
    doc = copy.deepcopy(target)
    for number, op in enumerate(operations):
        if not isinstance(op, dict) or "op" not in op or "path" not in op:
            raise bad_request(f"JSON patch operation {number} needs 'op' and 'path'")
        kind, path = op["op"], op["path"]
        if kind == "add":
            doc = _add(doc, path, copy.deepcopy(op.get("value")))
        elif kind == "remove":
            doc = _remove(doc, path)
        elif kind == "replace":
            _get(doc, path)
            doc = _add(_remove(doc, path), path, copy.deepcopy(op.get("value"))) if _pointer(path) \
                else copy.deepcopy(op.get("value"))
        elif kind in ("move", "copy"):
            source = op.get("from")
            if not isinstance(source, str):
                raise bad_request(f"JSON patch {kind} operation {number} needs 'from'")
            value = copy.deepcopy(_get(doc, source))
            if kind == "move":
                doc = _remove(doc, source)
            doc = _add(doc, path, value)
        elif kind == "test":
            if _get(doc, path) != op.get("value"):
                raise ApiError(422, "Invalid", f"JSON patch test failed at {path!r}")
        else:
            raise bad_request(f"JSON patch operation {number}: unknown op {kind!r}")
    return doc


def apply_patch(content_type: str, target: Any, patch: Any) -> Any:
    base = content_type.split(";")[0].strip().lower()
    if base == MERGE:
        return merge_patch(target, patch)
    if base == STRATEGIC:
        return merge_patch(target, patch, strategic=True)
    if base == JSON_PATCH:
        return json_patch(target, patch)
    raise unsupported_media(content_type, PATCH_TYPES)
