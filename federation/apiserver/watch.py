"""Watch fan-out: one hub per server, a bounded history, one queue per watcher.

Every committed change becomes a :class:`WatchEvent` appended to a ring of recent events and
handed to the watchers of its resource. A watch that starts from resourceVersion ``N`` is
replayed from the ring; if ``N`` is older than the ring reaches, the watch is answered with
410 Expired and the client must relist (what kube-apiserver does when etcd compacted).

Selectors follow Kubernetes semantics: an object that stops matching is sent as DELETED and
one that starts matching as ADDED, so a watch on ``spec.nodeName=`` sees a pod leave when it
is bound.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from federation.apiserver.selectors import Predicate
from federation.apiserver.status import expired

Obj = dict[str, Any]


@dataclass(slots=True)
class WatchEvent:
    type: str
    resource: str
    rv: int
    obj: Obj
    previous: Obj | None
    #: set when a failed commit undid this change (SQLite): it must never be sent
    undone: bool = False
    _line: bytes | None = None
    _frame: bytes | None = None

    @property
    def namespace(self) -> str:
        return self.obj["metadata"].get("namespace") or ""

    def line(self, type_: str | None = None) -> bytes:
        """``{"type": ..., "object": ...}\\n``, encoded once and shared by every watcher."""
        if type_ is not None and type_ != self.type:
            return orjson.dumps({"type": type_, "object": self.obj}) + b"\n"
        if self._line is None:
            self._line = orjson.dumps({"type": self.type, "object": self.obj}) + b"\n"
        return self._line

    def frame(self, type_: str, encode: Callable[[str, Obj], bytes]) -> bytes:
        """The protobuf watch frame, like :meth:`line` encoded once and shared by every watcher."""
        if type_ != self.type:
            return encode(type_, self.obj)
        if self._frame is None:
            self._frame = encode(type_, self.obj)
        return self._frame


@dataclass(eq=False)
class Watcher:
    resource: str
    namespace: str | None
    predicate: Predicate | None
    max_queued: int
    queue: asyncio.Queue[tuple[str, WatchEvent] | None] = field(default_factory=asyncio.Queue)
    overflowed: bool = False
    #: feeds a watcher older than the hub's history from the store's own (etcd) history
    feeder: asyncio.Task[None] | None = None
    #: the future :meth:`wait` sleeps on; set by :meth:`put`
    _waiter: asyncio.Future[bool] | None = None

    def put(self, item: tuple[str, WatchEvent] | None) -> None:
        """Queue ``item`` (None ends the stream) and wake the stream's writer."""
        self.queue.put_nowait(item)
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(True)

    async def wait(self, timeout: float) -> bool:
        """True once something is queued, False after ``timeout`` seconds with nothing.

        Cheaper than ``asyncio.wait_for(queue.get(), timeout)``, which makes a Task per call:
        with 100 watchers every event wakes 100 writers, and on etcd (no group commit to batch
        events) that wrapper was a quarter of each wake-up's cost."""
        if not self.queue.empty():
            return True
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[bool] = loop.create_future()
        self._waiter = waiter
        timer = loop.call_later(timeout, _time_up, waiter)
        try:
            await waiter
        finally:
            timer.cancel()
            self._waiter = None
        return not self.queue.empty()

    def forget_after(self, rv: int) -> None:
        kept = []
        while not self.queue.empty():
            item = self.queue.get_nowait()
            if item is None or item[1].rv <= rv:
                kept.append(item)
            else:
                item[1].undone = True
        for item in kept:
            self.queue.put_nowait(item)

    def offer_change(self, type_: str, resource: str, obj: Obj, previous: Obj | None) -> None:
        self.offer(WatchEvent(type_, resource, int(obj["metadata"]["resourceVersion"]), obj, previous))

    def offer(self, event: WatchEvent) -> None:
        """Queue ``event`` as the type this watcher should see, or drop it if it doesn't concern it."""
        if event.resource != self.resource:
            return
        if self.namespace is not None and event.namespace != self.namespace:
            return
        type_ = self.visible_type(event)
        if type_ is None:
            return
        if self.queue.qsize() >= self.max_queued:
            # A watcher that cannot keep up is cut off; it resumes from its last resourceVersion.
            self.overflowed = True
            self.put(None)
            return
        self.put((type_, event))

    def visible_type(self, event: WatchEvent) -> str | None:
        if self.predicate is None:
            return event.type
        now = self.predicate(event.obj)
        before = event.previous is not None and self.predicate(event.previous)
        if event.type == "DELETED":
            return "DELETED" if (now or before) else None
        if now and before:
            return "MODIFIED"
        if now:
            return "ADDED"
        if before:
            return "DELETED"
        return None


def _time_up(waiter: asyncio.Future[bool]) -> None:
    if not waiter.done():
        waiter.set_result(False)


class WatchHub:
    """Recent events and live watchers."""

    def __init__(self, start_rv: int, history: int = 50_000, max_queued: int = 100_000) -> None:
        self._history: deque[WatchEvent] = deque(maxlen=history)
        #: Events with rv <= floor may be missing from the history.
        self.floor = start_rv
        self._watchers: set[Watcher] = set()
        self.max_queued = max_queued
        self.on_change: Callable[[str, int], None] | None = None

    def publish(self, type_: str, resource: str, obj: Obj, previous: Obj | None) -> None:
        event = WatchEvent(type_, resource, int(obj["metadata"]["resourceVersion"]), obj, previous)
        if len(self._history) == self._history.maxlen:
            self.floor = self._history[0].rv
        self._history.append(event)
        for watcher in self._watchers:
            watcher.offer(event)

    def roll_back(self, durable_rv: int) -> None:
        """Forget the events after ``durable_rv`` (a failed commit undid them; no watcher was sent one:
        streams wait for durability) and drop them from the watchers' queues."""
        while self._history and self._history[-1].rv > durable_rv:
            self._history.pop().undone = True
        self.floor = min(self.floor, durable_rv)
        for watcher in self._watchers:
            watcher.forget_after(durable_rv)

    def subscribe(self, resource: str, namespace: str | None, predicate: Predicate | None,
                  since: int | None) -> Watcher:
        """A watcher fed every later event; with ``since``, first the history after it (410 if too old)."""
        if since is not None and since < self.floor:
            raise expired(since, self.floor)
        watcher = Watcher(resource, namespace, predicate, self.max_queued)
        if since is not None:
            for event in self._history:
                if event.rv > since:
                    watcher.offer(event)
        self._watchers.add(watcher)
        self._changed(resource)
        return watcher

    def detached(self, resource: str, namespace: str | None, predicate: Predicate | None) -> Watcher:
        """A watcher the hub does not feed (the store's history does, through ``offer_change``)."""
        return Watcher(resource, namespace, predicate, self.max_queued)

    def unsubscribe(self, watcher: Watcher) -> None:
        if watcher.feeder is not None:
            watcher.feeder.cancel()
        self._watchers.discard(watcher)
        self._changed(watcher.resource)

    def close_all(self) -> None:
        for watcher in list(self._watchers):
            watcher.put(None)

    def count(self, resource: str | None = None) -> int:
        return sum(1 for w in self._watchers if resource is None or w.resource == resource)

    def _changed(self, resource: str) -> None:
        if self.on_change is not None:
            self.on_change(resource, self.count(resource))
