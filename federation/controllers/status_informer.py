"""A small list-then-watch cache for the status and health controllers.

``Informer(rc, info, namespace, label_selector, on_change).run(stop)`` keeps ``items`` equal to
the API's objects of one kind and calls ``on_change(obj, deleted)`` for every object that
changed, appeared or disappeared. After a watch ends (timeout, 410 Gone, connection error) it
lists again and reports the difference, so nothing is missed. An object's own newer copy
(e.g. the answer of our own status write, stored with :meth:`remember`) is never replaced by
an older watch event.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any

from kubernetes_asyncio import watch
from kubernetes_asyncio.client.exceptions import ApiException

from federation.client import ResourceClient
from policies.kinds import KindInfo

Obj = dict[str, Any]
Key = tuple[str, str]
OnChange = Callable[[Obj, bool], None]

log = logging.getLogger("caldera.controllers.informer")

WATCH_TIMEOUT = 240
RETRY_DELAY = 1.0


def key_of(obj: Obj) -> Key:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


def _rv(obj: Obj | None) -> int:
    try:
        return int(((obj or {}).get("metadata") or {}).get("resourceVersion") or 0)
    except ValueError:
        return 0


class Informer:
    def __init__(self, rc: ResourceClient, info: KindInfo, namespace: str | None, on_change: OnChange,
                 label_selector: str | None = None) -> None:
        self.rc = rc
        self.info = info
        self.namespace = namespace
        self.on_change = on_change
        self.label_selector = label_selector
        self.items: dict[Key, Obj] = {}
        self.synced = asyncio.Event()

    def remember(self, obj: Obj) -> None:
        """Store an object we just wrote (newer than what the watch may still deliver)."""
        if _rv(obj) >= _rv(self.items.get(key_of(obj))):
            self.items[key_of(obj)] = obj

    def _apply(self, event_type: str, obj: Obj) -> None:
        key = key_of(obj)
        if event_type == "DELETED":
            if self.items.pop(key, None) is not None:
                self.on_change(obj, True)
            return
        old = self.items.get(key)
        if old is not None and _rv(old) >= _rv(obj):
            return
        self.items[key] = obj
        self.on_change(obj, False)

    async def _relist(self) -> str:
        listed = await self.rc.list(self.info, self.namespace, label_selector=self.label_selector)
        fresh = {key_of(o): o for o in listed.get("items") or []}
        for key in [k for k in self.items if k not in fresh]:
            self.on_change(self.items.pop(key), True)
        for obj in fresh.values():
            self._apply("MODIFIED", obj)
        self.synced.set()
        return str((listed.get("metadata") or {}).get("resourceVersion") or "")

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            try:
                rv = await self._relist()
                async with watch.Watch() as stream:
                    async for event in stream.stream(self.rc.list, self.info, self.namespace,
                                                     label_selector=self.label_selector, resource_version=rv,
                                                     timeout_seconds=WATCH_TIMEOUT):
                        kind = event.get("type")
                        obj = event.get("object")
                        if kind in ("ADDED", "MODIFIED", "DELETED") and isinstance(obj, dict):
                            self._apply(kind, obj)
                        if stop.is_set():
                            return
            except asyncio.CancelledError:
                raise
            except ApiException as exc:
                if exc.status != 410:
                    log.warning("watching %s failed: %s; listing again", self.info.plural, exc.reason)
                    await _pause(stop, RETRY_DELAY)
            except Exception as exc:  # noqa: BLE001 - keep the loop alive; the next list repairs the cache
                log.warning("watching %s failed: %s; listing again", self.info.plural, exc)
                await _pause(stop, RETRY_DELAY)


async def _pause(stop: asyncio.Event, seconds: float) -> None:
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), seconds)
