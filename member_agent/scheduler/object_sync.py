"""Feeding the scheduler cache from whole lists of objects, as events of what changed.

The agent holds its cluster's objects as lists (its informers' caches plus its own writes still in
flight); the scheduler cache (:mod:`scheduler_cache`) wants informer events. :class:`ObjectSync`
turns one list per pass into the upserts and deletes that differ from the previous pass.
"""

from __future__ import annotations

import copy
from typing import Any, Iterable, Mapping

from member_agent.scheduler.framework.object_fields import plain_object
from member_agent.scheduler.framework.snapshot import Snapshot
from member_agent.scheduler.scheduler_cache import SchedulerCache, object_key


class ObjectSync:
    """Feeds a :class:`SchedulerCache` from the full list of objects a caller has each pass
    (the agent's informer cache plus its in-flight writes): only objects that differ from
    the previous pass become events, so the snapshot still costs what changed. Objects are
    compared by content against a private copy (callers may change their dicts in place)."""

    def __init__(self, cache: SchedulerCache) -> None:
        self.cache = cache
        self._last: dict[tuple[str, str], Mapping[str, Any]] = {}

    def snapshot(self, objects: Iterable[Any]) -> Snapshot:
        seen: dict[tuple[str, str], Mapping[str, Any]] = {}
        for raw in objects:
            if raw is None:
                continue
            obj = plain_object(raw)
            if obj.get("kind") == "List":
                for item in obj.get("items") or ():
                    self._one(plain_object(item), seen)
            else:
                self._one(obj, seen)
        for key, obj in self._last.items():
            if key not in seen:
                self.cache.delete(obj)
        self._last = seen
        return self.cache.snapshot()

    def _one(self, obj: Mapping[str, Any], seen: dict[tuple[str, str], Mapping[str, Any]]) -> None:
        key = (str(obj.get("kind")), object_key(obj))
        previous = self._last.get(key)
        if previous is None or previous != obj:
            obj = copy.deepcopy(obj)
            self.cache.upsert(obj)
        else:
            obj = previous
        seen[key] = obj
