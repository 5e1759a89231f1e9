"""Small helpers on stored objects, shared by the registry and the modules it calls (server-side
apply, conversion): a leaf module, so none of them imports the registry for these."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import orjson

from policies.kinds import KindInfo

Obj = dict[str, Any]
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"


def resource_key(info: KindInfo) -> str:
    return f"{info.group}/{info.plural}" if info.group else info.plural


def copy_obj(obj: Obj) -> Obj:
    """A deep copy of a JSON object (orjson round trip: much faster than copy.deepcopy)."""
    copied: Obj = orjson.loads(orjson.dumps(obj))
    return copied


def timestamp(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def label_namespace(info: KindInfo, meta: Obj) -> None:
    """kube labels every Namespace ``kubernetes.io/metadata.name: <name>`` on create and update, so
    namespace selectors can pick namespaces by name; a value written there is replaced."""
    if info.kind == "Namespace" and info.group == "" and isinstance(meta.get("name"), str):
        labels = meta.get("labels")
        if labels is None or isinstance(labels, dict):  # anything else is refused by validation
            meta["labels"] = dict(labels or {}, **{NAMESPACE_NAME_LABEL: meta["name"]})
