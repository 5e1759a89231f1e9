"""Watch-loop helpers shared by the federation controllers: informers and a keyed work queue.

* :class:`Informer` keeps an in-memory copy of one kind (all namespaces): list, then watch
  from the list's resourceVersion; on a clean end of stream re-watch from the last version
  seen; on ``410 Gone`` relist and diff against the cache, so objects that vanished while we
  were away still produce a DELETED callback; on any other error reconnect with capped
  exponential backoff. kubernetes-asyncio has no default timeout, so every call carries one.
* :class:`WorkQueue` is a level-triggered queue of keys: a key queued twice is handled once,
  a key added while it is being handled is handled again afterwards, and ``add(key, delay)``
  schedules a later visit (the earliest request wins).
* :func:`run_workers` pulls keys and calls the reconcile function, requeueing a key whose
  reconcile raised with per-key exponential backoff.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Hashable
from typing import Any

from kubernetes_asyncio import watch
from kubernetes_asyncio.client.exceptions import ApiException

from federation.client import ResourceClient
from federation.controllers.poison import PoisonGuard
from policies.backoff import Backoff
from policies.kinds import KindInfo

log = logging.getLogger("caldera.controllers")

Obj = dict[str, Any]
ObjKey = tuple[str, str]  # (namespace, name); namespace "" for cluster-scoped kinds
#: callback(event type, new object, previous object or None); DELETED passes the last copy
Handler = Callable[[str, Obj, Obj | None], None]


def obj_key(obj: Obj) -> ObjKey:
    meta = obj.get("metadata") or {}
    return (meta.get("namespace") or "", meta.get("name") or "")


def resource_version(obj: Obj | None) -> int:
    try:
        return int(((obj or {}).get("metadata") or {}).get("resourceVersion") or 0)
    except ValueError:
        return 0


class Informer:
    """A cache of every object of one kind (optionally one namespace, or those matching a label
    selector), kept current by list + watch.

    A copy the controller wrote itself (:meth:`remember`) is never replaced by an older one that
    a watch or a relist still delivers.
    """

    def __init__(self, rc: ResourceClient, info: KindInfo, handler: Handler | None = None, *,
                 namespace: str | None = None, label_selector: str | None = None,
                 watch_timeout: int = 300, backoff: float = 0.2, max_backoff: float = 10.0) -> None:
        self.rc = rc
        self.info = info
        self.namespace = namespace
        self.label_selector = label_selector
        self.handlers: list[Handler] = [handler] if handler else []
        self.store: dict[ObjKey, Obj] = {}
        self.synced = asyncio.Event()
        self.watch_timeout = watch_timeout
        self.backoff = backoff
        self.max_backoff = max_backoff
        self._rv = ""

    def get(self, namespace: str, name: str) -> Obj | None:
        return self.store.get((namespace if self.info.namespaced else "", name))

    def items(self) -> list[Obj]:
        return list(self.store.values())

    def remember(self, obj: Obj) -> None:
        """Store an object this controller just wrote (newer than what the watch may still deliver)."""
        key = obj_key(obj)
        if resource_version(obj) >= resource_version(self.store.get(key)):
            self.store[key] = obj

    def _emit(self, kind: str, obj: Obj, old: Obj | None) -> None:
        for handler in self.handlers:
            try:
                handler(kind, obj, old)
            except Exception:  # a broken handler must not stop the watch
                log.exception("%s handler failed on %s %s", self.info.kind, kind, obj_key(obj))

    async def _relist(self) -> None:
        listed = await self.rc.list(self.info, self.namespace, label_selector=self.label_selector)
        items = listed.get("items") or []
        fresh: dict[ObjKey, Obj] = {}
        for item in items:
            item.setdefault("apiVersion", self.info.api_version)
            item.setdefault("kind", self.info.kind)
            key = obj_key(item)
            kept = self.store.get(key)  # written by us while the list was on its way
            fresh[key] = kept if resource_version(kept) > resource_version(item) else item
        old_store, self.store = self.store, fresh
        for key, obj in fresh.items():
            previous = old_store.get(key)
            if previous is None:
                self._emit("ADDED", obj, None)
            elif (previous.get("metadata") or {}).get("resourceVersion") != (obj.get("metadata") or {}).get(
                    "resourceVersion"):
                self._emit("MODIFIED", obj, previous)
        for key, obj in old_store.items():
            if key not in fresh:
                self._emit("DELETED", obj, obj)
        self._rv = str((listed.get("metadata") or {}).get("resourceVersion") or "")
        self.synced.set()

    def _apply(self, kind: str, obj: Obj) -> None:
        rv = (obj.get("metadata") or {}).get("resourceVersion")
        if rv:
            self._rv = str(rv)
        if kind == "BOOKMARK":
            return
        key = obj_key(obj)
        previous = self.store.get(key)
        if kind == "DELETED":
            self.store.pop(key, None)
            self._emit("DELETED", obj, previous)
            return
        if resource_version(previous) > resource_version(obj):
            return  # an older copy than the one we hold (we wrote a newer one ourselves)
        self.store[key] = obj
        self._emit("ADDED" if previous is None else "MODIFIED", obj, previous)

    async def _watch(self) -> None:
        async with watch.Watch() as w:
            async for event in w.stream(self.rc.list, self.info, self.namespace, label_selector=self.label_selector,
                                        resource_version=self._rv or None,
                                        timeout_seconds=self.watch_timeout, allow_watch_bookmarks=True):
                obj = event.get("object")
                if isinstance(obj, dict) and event.get("type") != "ERROR":
                    self._apply(str(event.get("type")), obj)

    async def _watch_until(self, stop: asyncio.Event) -> bool:
        """One watch request, abandoned as soon as ``stop`` is set (True: stopped)."""
        watching = asyncio.ensure_future(self._watch())
        stopping = asyncio.ensure_future(stop.wait())
        try:
            await asyncio.wait({watching, stopping}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for fut in (watching, stopping):
                if not fut.done():
                    fut.cancel()
                    with contextlib.suppress(asyncio.CancelledError, Exception):
                        await fut
        if stop.is_set():
            return True
        watching.result()  # re-raise the watch's error, if any
        return False

    async def run(self, stop: asyncio.Event) -> None:
        policy = Backoff(self.backoff, self.max_backoff)
        failures = 0
        need_list = True
        while not stop.is_set():
            try:
                if need_list:
                    await self._relist()
                    need_list = False
                if await self._watch_until(stop):
                    return
                failures = 0
            except asyncio.CancelledError:
                raise
            except ApiException as err:
                if err.status == 410:
                    need_list = True
                    continue
                failures += 1
                delay = policy.delay(failures)
                log.warning("watch %s failed (%s); retrying in %.1fs", self.info.plural, err.status, delay)
                await _sleep_or_stop(stop, delay)
                need_list = need_list or err.status in (401, 403, 404)
            except Exception as err:  # connection errors, malformed streams
                failures += 1
                delay = policy.delay(failures)
                log.warning("watch %s failed (%s); retrying in %.1fs", self.info.plural, err, delay)
                await _sleep_or_stop(stop, delay)


async def _sleep_or_stop(stop: asyncio.Event, delay: float) -> None:
    with contextlib.suppress(asyncio.TimeoutError):
        await asyncio.wait_for(stop.wait(), delay)


class WorkQueue:
    """Keys to reconcile; duplicates collapse, ``add(key, delay)`` schedules a later visit."""

    def __init__(self) -> None:
        self._queue: asyncio.Queue[Hashable] = asyncio.Queue()
        self._queued: set[Hashable] = set()
        self._active: set[Hashable] = set()
        self._again: set[Hashable] = set()
        self._timers: dict[Hashable, tuple[float, asyncio.TimerHandle]] = {}

    def add(self, key: Hashable, delay: float = 0.0) -> None:
        if delay > 0:
            loop = asyncio.get_running_loop()
            when = loop.time() + delay
            current = self._timers.get(key)
            if current is not None and current[0] <= when:
                return
            if current is not None:
                current[1].cancel()
            self._timers[key] = (when, loop.call_at(when, self._fire, key))
            return
        if key in self._active:
            self._again.add(key)
        elif key not in self._queued:
            self._queued.add(key)
            self._queue.put_nowait(key)

    def _fire(self, key: Hashable) -> None:
        self._timers.pop(key, None)
        self.add(key)

    async def get(self) -> Hashable:
        key = await self._queue.get()
        self._queued.discard(key)
        self._active.add(key)
        return key

    def done(self, key: Hashable) -> None:
        self._active.discard(key)
        if key in self._again:
            self._again.discard(key)
            self.add(key)

    def close(self) -> None:
        for _, handle in self._timers.values():
            handle.cancel()
        self._timers.clear()

    def __len__(self) -> int:
        return len(self._queued)


async def run_workers(queue: WorkQueue, reconcile: Callable[[Any], Awaitable[None]], stop: asyncio.Event,
                      workers: int = 4, base_backoff: float = 0.5, max_backoff: float = 30.0,
                      name: str = "controller", guard: PoisonGuard | None = None) -> None:
    """Reconcile keys until ``stop``; a failing key is retried with per-key exponential backoff,
    unless ``guard`` finds the failure permanent: then it is reported and parked until the object
    changes (:mod:`federation.controllers.poison`)."""
    failures: dict[Hashable, int] = {}
    policy = Backoff(base_backoff, max_backoff)

    async def worker() -> None:
        while not stop.is_set():
            key = await queue.get()
            version = guard.version(key) if guard is not None else None
            try:
                if guard is not None and guard.skip(key, version):
                    continue
                await reconcile(key)
                failures.pop(key, None)
            except asyncio.CancelledError:
                raise
            except Exception as err:
                count = failures.get(key, 0) + 1
                failures[key] = count
                if guard is not None and guard.should_poison(err, count):
                    failures.pop(key, None)
                    await guard.poison(key, version, err, name)
                    continue
                delay = policy.delay(count)  # any count: 2 ** count once overflowed past 1,024 failures
                level = logging.WARNING if count < 5 else logging.ERROR
                log.log(level, "%s: reconcile %s failed (%s: %s); retry %d in %.1fs", name, key,
                        type(err).__name__, err, count, delay, exc_info=count >= 5)
                queue.add(key, delay)
            finally:
                queue.done(key)

    tasks = [asyncio.create_task(worker()) for _ in range(workers)]
    try:
        await stop.wait()
    finally:
        await cancel_all(tasks)
        queue.close()


async def cancel_all(tasks: list[asyncio.Task[Any]]) -> None:
    """Cancel ``tasks`` and wait until each has finished (their errors are already logged)."""
    for task in tasks:
        task.cancel()
    for task in tasks:
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task


async def run_controller(informers: list[Informer], queue: WorkQueue,
                         reconcile: Callable[[Any], Awaitable[None]], stop: asyncio.Event,
                         workers: int, name: str, guard: PoisonGuard | None = None) -> None:
    """A controller's life: start its informers, wait until each has listed once, then reconcile
    keys from ``queue`` with ``workers`` workers until ``stop``."""
    tasks = [asyncio.create_task(inf.run(stop)) for inf in informers]
    try:
        if await wait_synced(informers, stop):
            await run_workers(queue, reconcile, stop, workers, name=name, guard=guard)
    finally:
        await cancel_all(tasks)


async def wait_synced(informers: list[Informer], stop: asyncio.Event) -> bool:
    """Wait until every informer has listed once (False: stopped first). Informers retry on their own."""
    async def all_synced() -> None:
        await asyncio.gather(*(inf.synced.wait() for inf in informers))

    synced: asyncio.Future[Any] = asyncio.ensure_future(all_synced())
    stopped: asyncio.Future[Any] = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({synced, stopped}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for fut in (synced, stopped):
            if not fut.done():
                fut.cancel()
    return not stop.is_set()


def wall_clock() -> float:
    return time.time()


def is_not_found(err: BaseException) -> bool:
    return isinstance(err, ApiException) and err.status == 404


def is_conflict(err: BaseException) -> bool:
    return isinstance(err, ApiException) and err.status == 409


class QueueController:
    """What the dispatch and placement controllers share: options, clock, a resource client, a
    work queue, and informers made with the options' watch timeout."""

    def __init__(self, api: Any, options: Any) -> None:
        from federation.controllers.common import ControllerOptions

        self.api = api
        self.options = options or ControllerOptions()
        self.clock = self.options.clock
        self.rc = ResourceClient(api, self.options.request_timeout)
        self.queue = WorkQueue()

    def informer(self, info: KindInfo, handler: Handler | None = None) -> Informer:
        return Informer(self.rc, info, handler, watch_timeout=self.options.watch_timeout)
