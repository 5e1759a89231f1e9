"""The marks Karmada (≥ 1.12) puts on a resource template its policy claims, and on its binding.

Karmada's detector labels a claimed object with the policy's permanent id and annotates it with
the policy's name (and namespace, for a PropagationPolicy); the keys below are Karmada's
current ones (older releases used ``…/name`` *labels*, since moved to annotations). A policy's
permanent id is its own ``…/permanent-id`` label when it carries one, else its UID: Caldera does
not stamp policies, and a UID is just as unique (only a restored backup changes it).

Pure: :func:`claim_patch` returns the JSON merge patch that brings an object's marks in line
with the governing policy (None when nothing changes), so the controller writes only on change.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

Obj = Mapping[str, Any]

PP_PERMANENT_ID = "propagationpolicy.karmada.io/permanent-id"
CPP_PERMANENT_ID = "clusterpropagationpolicy.karmada.io/permanent-id"
PP_NAME = "propagationpolicy.karmada.io/name"
PP_NAMESPACE = "propagationpolicy.karmada.io/namespace"
CPP_NAME = "clusterpropagationpolicy.karmada.io/name"

CLAIM_LABELS = (PP_PERMANENT_ID, CPP_PERMANENT_ID)
CLAIM_ANNOTATIONS = (PP_NAME, PP_NAMESPACE, CPP_NAME)


def permanent_id(policy: Obj) -> str:
    meta = policy.get("metadata") or {}
    labels = meta.get("labels") or {}
    key = CPP_PERMANENT_ID if policy.get("kind") == "ClusterPropagationPolicy" else PP_PERMANENT_ID
    return str(labels.get(key) or meta.get("uid") or "")


def claim_marks(policy: Obj | None) -> tuple[dict[str, str], dict[str, str]]:
    """(labels, annotations) the governing ``policy`` puts on what it claims; empty for None."""
    if policy is None:
        return {}, {}
    meta = policy.get("metadata") or {}
    name = str(meta.get("name") or "")
    if policy.get("kind") == "ClusterPropagationPolicy":
        return {CPP_PERMANENT_ID: permanent_id(policy)}, {CPP_NAME: name}
    return ({PP_PERMANENT_ID: permanent_id(policy)},
            {PP_NAME: name, PP_NAMESPACE: str(meta.get("namespace") or "")})


def claim_patch(obj: Obj, policy: Obj | None) -> dict[str, Any] | None:
    """The merge patch setting ``obj``'s claim marks for ``policy`` and removing stale ones."""
    meta = obj.get("metadata") or {}
    labels, notes = claim_marks(policy)
    patch: dict[str, Any] = {}
    for field, keys, wanted in (("labels", CLAIM_LABELS, labels), ("annotations", CLAIM_ANNOTATIONS, notes)):
        current = meta.get(field) or {}
        change: dict[str, Any] = {k: v for k, v in wanted.items() if current.get(k) != v}
        change.update({k: None for k in keys if k in current and k not in wanted})
        if change:
            patch[field] = change
    return {"metadata": patch} if patch else None


def with_marks(meta: dict[str, Any], policy: Obj | None) -> dict[str, Any]:
    """``meta`` (a binding's desired metadata) carrying the policy's claim marks, stale ones dropped."""
    labels, notes = claim_marks(policy)
    meta["labels"] = {**{k: v for k, v in (meta.get("labels") or {}).items() if k not in CLAIM_LABELS}, **labels}
    meta["annotations"] = {**{k: v for k, v in (meta.get("annotations") or {}).items()
                              if k not in CLAIM_ANNOTATIONS}, **notes}
    return meta
