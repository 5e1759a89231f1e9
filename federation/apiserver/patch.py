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
from policies.k8s import patches

MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
APPLY = "application/apply-patch+yaml"
PATCH_TYPES = [JSON_PATCH, MERGE, STRATEGIC]


def merge_patch(target: Any, patch: Any, strategic: bool = False) -> Any:
    """A merge patch (policies.k8s.patches); ``strategic`` also drops ``$`` directives."""
    if not strategic:
        return patches.merge_patch(target, patch)
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


def json_patch(target: Any, operations: Any) -> Any:
    """RFC 6902 (policies.k8s.patches): a malformed patch is 400, one that does not apply 422."""
    try:
        return patches.json_patch(target, operations)
    except patches.PatchError as exc:
        if exc.status == patches.BAD_REQUEST:
            raise bad_request(str(exc)) from None
        raise ApiError(422, "Invalid", str(exc)) from None


def apply_patch(content_type: str, target: Any, patch: Any) -> Any:
    base = content_type.split(";")[0].strip().lower()
    if base == MERGE:
        return merge_patch(target, patch)
    if base == STRATEGIC:
        return merge_patch(target, patch, strategic=True)
    if base == JSON_PATCH:
        return json_patch(target, patch)
    raise unsupported_media(content_type, PATCH_TYPES)
