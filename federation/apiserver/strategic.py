"""Strategic merge patch (``application/strategic-merge-patch+json``) for the built-in kinds.

A strategic merge patch is a merge patch in which some lists are merged instead of replaced,
by the ``patchStrategy``/``patchMergeKey`` tags of the Go types (k8s.io/api): a Pod's containers
by ``name``, its conditions by ``type``, a Node's addresses by ``type``... (:data:`MERGE_KEYS`).
A list without a strategy is replaced whole, as in a merge patch. Directives, as kubectl and
client-go write them:

* ``$patch: replace`` in a map (replace the map) or as a list element (replace the list);
  ``$patch: delete`` in a map (remove it) or in a list element (remove the element with its key);
* ``$retainKeys: [...]`` keeps only the listed keys of the map;
* ``$deleteFromPrimitiveList/<field>: [...]`` removes values from a merged list of scalars;
* ``$setElementOrder/<field>: [...]`` orders a merged list: the listed elements first, in that
  order, then the others as they were.

Custom resources have no Go types, so kube-apiserver refuses strategic merge patches of them with
415; so does Caldera (:func:`served`).
"""

from __future__ import annotations

import copy
from typing import Any

from federation.apiserver import status as st
from policies.kinds import KindInfo

#: "" merges a list of scalars as a set; a name merges a list of maps by that key
_COMMON = {"metadata.finalizers": "", "metadata.ownerReferences": "uid"}
_CONTAINER = {"ports": "containerPort", "env": "name", "volumeMounts": "mountPath", "volumeDevices": "devicePath"}
_POD_SPEC = {"containers": "name", "initContainers": "name", "ephemeralContainers": "name", "volumes": "name",
             "imagePullSecrets": "name", "hostAliases": "ip", "topologySpreadConstraints": "topologyKey",
             "schedulingGates": "name", "resourceClaims": "name"}


def _pod() -> dict[str, str]:
    keys = {f"spec.{field}": key for field, key in _POD_SPEC.items()}
    for containers in ("containers", "initContainers", "ephemeralContainers"):
        keys.update({f"spec.{containers}[].{field}": key for field, key in _CONTAINER.items()})
    keys.update({"status.conditions": "type", "status.podIPs": "ip", "status.hostIPs": "ip"})
    return keys


MERGE_KEYS: dict[tuple[str, str], dict[str, str]] = {
    ("v1", "Pod"): _pod(),
    ("v1", "Node"): {"spec.podCIDRs": "", "status.conditions": "type", "status.addresses": "type"},
    ("v1", "Namespace"): {"status.conditions": "type"},
    ("v1", "ServiceAccount"): {"secrets": "name"},
}

PATCH = "$patch"
RETAIN = "$retainKeys"
DELETE_FROM = "$deleteFromPrimitiveList/"
ORDER = "$setElementOrder/"


def served(info: KindInfo) -> bool:
    """Built-in kinds (core and ``*.k8s.io`` groups) take strategic merge patches; CRDs do not."""
    return info.group == "" or info.group.endswith(".k8s.io")


def _clean(value: Any) -> Any:
    """A value from the patch with its directives removed (it is stored as given otherwise)."""
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items() if not k.startswith("$")}
    if isinstance(value, list):
        return [_clean(v) for v in value if not (isinstance(v, dict) and v.get(PATCH) in ("replace", "delete"))]
    return value


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _merge_map(original: Any, patch: dict[str, Any], path: str, keys: dict[str, str]) -> Any:
    directive = patch.get(PATCH)
    if directive == "delete":
        return None
    if directive == "replace":
        return _clean(patch)
    if directive not in (None, "merge"):
        raise st.bad_request(f"strategic merge patch: unknown $patch directive {directive!r} at {path or '.'}")
    result = dict(original) if isinstance(original, dict) else {}
    for key, value in patch.items():
        if key.startswith("$"):
            continue
        child = _join(path, key)
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict):
            merged = _merge_map(result.get(key), value, child, keys)
            if merged is None:
                result.pop(key, None)
            else:
                result[key] = merged
        elif isinstance(value, list) and child in keys:
            result[key] = _merge_list(result.get(key), value, child, keys)
        else:
            result[key] = _clean(value)
    for key, value in patch.items():
        if key.startswith(DELETE_FROM) and isinstance(value, list):
            field = key[len(DELETE_FROM):]
            if isinstance(result.get(field), list):
                result[field] = [v for v in result[field] if v not in value]
        elif key.startswith(ORDER) and isinstance(value, list):
            field = key[len(ORDER):]
            if isinstance(result.get(field), list):
                result[field] = _ordered(result[field], value, keys.get(_join(path, field), ""))
    retain = patch.get(RETAIN)
    if isinstance(retain, list):
        result = {k: v for k, v in result.items() if k in retain}
    return result


def _merge_list(original: Any, patch: list[Any], path: str, keys: dict[str, str]) -> list[Any]:
    key = keys[path]
    if any(isinstance(p, dict) and p.get(PATCH) == "replace" for p in patch):
        return [_clean(p) for p in patch if not (isinstance(p, dict) and PATCH in p)]
    result = list(original) if isinstance(original, list) else []
    if not key:  # a set of scalars: add what is missing, keep the order
        return result + [v for v in patch if v not in result]
    for item in patch:
        if not isinstance(item, dict) or key not in item:
            raise st.bad_request(f"strategic merge patch: an element of {path} does not contain its merge "
                                 f"key {key!r}")
        at = next((i for i, o in enumerate(result) if isinstance(o, dict) and o.get(key) == item[key]), None)
        if item.get(PATCH) == "delete":
            if at is not None:
                del result[at]
            continue
        if at is None:
            result.append(_clean(item))
        else:
            result[at] = _merge_map(result[at], item, f"{path}[]", keys)
    return result


def _ordered(items: list[Any], order: list[Any], key: str) -> list[Any]:
    def ident(value: Any) -> Any:
        return value.get(key) if key and isinstance(value, dict) else value

    wanted = [ident(o) for o in order]
    listed = sorted((i for i in items if ident(i) in wanted), key=lambda i: wanted.index(ident(i)))
    return listed + [i for i in items if ident(i) not in wanted]


def strategic_merge(info: KindInfo, target: Any, patch: Any) -> Any:
    """``target`` with ``patch`` applied (a new object; ``target`` is not changed)."""
    if not isinstance(patch, dict):
        raise st.bad_request("a strategic merge patch must be a JSON object")
    keys = dict(_COMMON)
    keys.update(MERGE_KEYS.get((info.api_version, info.kind), {}))
    merged = _merge_map(copy.deepcopy(target), patch, "", keys)
    if merged is None:
        raise st.bad_request("a strategic merge patch cannot delete the whole object")
    return merged
