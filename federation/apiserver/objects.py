"""Small helpers on stored objects, shared by the registry and the modules it calls (server-side
apply, conversion): a leaf module, so none of them imports the registry for these."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import orjson

from policies.kinds import KindInfo

Obj = dict[str, Any]


def resource_key(info: KindInfo) -> str:
    return f"{info.group}/{info.plural}" if info.group else info.plural


def copy_obj(obj: Obj) -> Obj:
    """A deep copy of a JSON object (orjson round trip: much faster than copy.deepcopy)."""
    copied: Obj = orjson.loads(orjson.dumps(obj))
    return copied


def timestamp(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
