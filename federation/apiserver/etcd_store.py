"""The etcd v3 store: objects under ``--etcd-prefix``, resourceVersion = etcd revision.

Keys and values are laid out by :mod:`etcd_keys`; watches older than the cache are answered from
etcd's history by :mod:`etcd_history`.

Every replica keeps the whole prefix in memory (kube-apiserver's watch cache): loaded by one
range read at start, then kept current by one etcd watch from the next revision. Every change
reaches the cache, the listeners and so every watcher in etcd's order, so two replicas hand out
the same events with the same resourceVersions. Writes are transactions that compare the key's
create revision (create) or mod revision (update, delete) with what the caller read; a write
returns once its revision is in this replica's cache. :meth:`consistent` (called before every
request) reads, with a quorum read, the revision of the last write to the prefix and waits until
the cache has applied that revision's events, so what a replica answers is never older than what
another replica already acknowledged. Without quorum that read fails and the request gets 503; a
write whose answer never came back is not acknowledged (503, "may or may not have been committed").

Why a last-write key and not etcd's progress notifications: before etcd 3.4.24 / 3.5.8 a requested
progress notification travels apart from the events (etcd-io/etcd#15220), so it can announce a
revision whose events are still on their way. Every write transaction also puts
``PREFIX/last_write_rev_key`` (same revision as the object), and the cache counts a revision as held
only once its events arrived. A resumed watch starts after the last event applied, never after a
revision merely announced.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterator
from typing import Any

import grpc.aio

from federation.apiserver.etcd_client import (
    EtcdConfig,
    EtcdConnection,
    compare_absent,
    compare_mod,
    op_delete,
    op_get,
    op_put,
    prefix_end,
)
from federation.apiserver.etcd_history import follow_history, why
from federation.apiserver.etcd_keys import KeyLayout, decode, deleted_at, encode
from federation.apiserver.storage import (
    Expired,
    HistorySink,
    KeyExists,
    Listener,
    Obj,
    ObjKey,
    RollbackListener,
    StaleWrite,
    StorageUnavailable,
    StoreFailed,
)

log = logging.getLogger("caldera.apiserver.etcd")
PUT, DELETE = 0, 1  # mvccpb.Event.EventType


class EtcdStore:
    """:class:`federation.apiserver.storage.Storage` on etcd (call :meth:`start` first)."""

    #: etcd delivers every event on its own after its own commit, so without a pause a busy
    #: watch stream makes one loopback write per event (50-70 us each here), which bounded the
    #: fan-out to a third of SQLite's; events arriving within 5 ms now go out in one write.
    watch_coalesce_s = 0.005

    def __init__(self, config: EtcdConfig) -> None:
        self.config = config
        self.conn = EtcdConnection(config)  # checks the flags now: EtcdConfigError
        self.keys = KeyLayout(config.prefix)
        self.prefix = self.keys.prefix
        self._objects: dict[str, dict[ObjKey, Obj]] = {}
        self._listeners: list[Listener] = []
        self.rv = 0
        self.opened_rv = 0
        #: put by every write transaction: its mod revision is the prefix's last write (see the docstring)
        self._last_write = self.prefix + b"last_write_rev_key"
        self._waiters: list[tuple[int, asyncio.Future[None]]] = []
        self._watch_task: asyncio.Task[None] | None = None
        #: the shared quorum read callers of :meth:`consistent` join, and the task sending them
        self._next_read: asyncio.Future[int] | None = None
        self._reader: asyncio.Task[None] | None = None
        self._compactor: asyncio.Task[None] | None = None
        self.failure: BaseException | None = None
        self.commits = 0
        self.committed_writes = 0
        #: writes etcd refused for good (its space quota: NOSPACE)
        self.failed_commits = 0
        #: reads at an older revision are possible (list_at, history)
        self.keeps_history = True
        self.describe = f"etcd {self.conn.describe} prefix {config.prefix}"

    # -- start / stop --------------------------------------------------------------------

    async def start(self) -> EtcdStore:
        await self.conn.connect()
        response = await self.conn.range(self.prefix, prefix_end(self.prefix))
        for kv in response.kvs:
            parsed = self.keys.parse(kv.key)
            if parsed is not None:
                resource, key = parsed
                self._objects.setdefault(resource, {})[key] = decode(kv.value, kv.mod_revision)
        self.rv = self.opened_rv = int(response.header.revision)
        self._watch_task = asyncio.create_task(self._watch_loop(), name="etcd-cache-watch")
        if self.config.compaction_interval > 0:
            from federation.apiserver.etcd_compactor import run_compactor

            self._compactor = asyncio.create_task(run_compactor(self), name="etcd-compactor")
        return self

    async def drain(self) -> None:
        return None  # nothing is queued: every write was answered by etcd

    async def aclose(self) -> None:
        for task in (self._watch_task, self._compactor, self._reader):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        await self.conn.close()

    def close(self) -> None:
        """Synchronous close is not possible for a gRPC channel: use :meth:`aclose`."""

    # -- reads (cache) -------------------------------------------------------------------

    def get(self, resource: str, namespace: str, name: str) -> Obj | None:
        return self._objects.get(resource, {}).get((namespace, name))

    def list(self, resource: str, namespace: str | None = None) -> list[Obj]:
        items = self._objects.get(resource, {})
        keys = sorted(k for k in items if namespace is None or k[0] == namespace)
        return [items[k] for k in keys]

    def iter_all(self) -> Iterator[tuple[str, Obj]]:
        for resource, items in self._objects.items():
            for obj in list(items.values()):
                yield resource, obj

    def count(self, resource: str) -> int:
        return len(self._objects.get(resource, {}))

    def add_listener(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def add_rollback_listener(self, listener: RollbackListener) -> None:
        """Nothing to roll back: the cache holds only what etcd committed."""

    async def probe(self) -> bool:
        return True  # etcd itself says whether a write fits (NOSPACE): there is no failed state to clear

    async def consistent(self) -> int:
        """Wait until the cache holds every write etcd had committed to the prefix when this was called.

        Concurrent callers share one quorum read (etcd's own read-index batching, one level up): a
        caller joins the next read to be *sent*, never one already in flight, so the revision it gets
        covers every write acknowledged before it called. Under 50 clients this saves most of the
        reads, one etcd round trip per request."""
        if self._next_read is None:
            self._next_read = asyncio.get_running_loop().create_future()
            if self._reader is None or self._reader.done():
                self._reader = asyncio.create_task(self._send_reads(), name="etcd-consistent-read")
        target = await asyncio.shield(self._next_read)
        await self._wait_applied(target, "read")
        return self.rv

    async def _send_reads(self) -> None:
        while self._next_read is not None:
            batch, self._next_read = self._next_read, None
            try:
                response = await self.conn.range(self._last_write)
            except asyncio.CancelledError:
                batch.cancel()
                raise
            except Exception as exc:
                batch.set_exception(exc)
                batch.exception()  # retrieved here too: a batch whose callers were all cancelled stays quiet
                continue
            batch.set_result(max((int(kv.mod_revision) for kv in response.kvs), default=0))

    async def wait_durable(self, rv: int | None = None) -> None:
        return None  # the cache holds only what etcd committed

    async def list_at(self, resource: str, namespace: str | None, rv: int) -> list[Obj]:
        if rv == self.rv:
            return self.list(resource, namespace)
        start = self.keys.resource_prefix(resource, namespace)
        try:
            response = await self.conn.range(start, prefix_end(start), revision=rv)
        except StorageUnavailable as exc:
            if "compacted" in str(exc):
                raise Expired(rv, 0) from None
            raise
        items = []
        for kv in response.kvs:
            if self.keys.parse(kv.key) is not None:
                items.append(decode(kv.value, kv.mod_revision))
        items.sort(key=lambda o: (o["metadata"].get("namespace") or "", o["metadata"]["name"]))
        return items

    # -- writes --------------------------------------------------------------------------

    async def create(self, resource: str, obj: Obj) -> Obj:
        key = self.keys.key(resource, obj)
        response = await self._txn([compare_absent(key)], [op_put(key, encode(obj)), self._mark()], [])
        if not response.succeeded:
            raise KeyExists(obj["metadata"]["name"])
        return await self._written(obj, int(response.header.revision))

    async def update(self, resource: str, obj: Obj, expect_rv: int) -> Obj:
        key = self.keys.key(resource, obj)
        response = await self._txn([compare_mod(key, expect_rv)], [op_put(key, encode(obj)), self._mark()], [op_get(key)])
        if not response.succeeded:
            raise StaleWrite(self._current(response))
        return await self._written(obj, int(response.header.revision))

    async def remove(self, resource: str, obj: Obj, expect_rv: int) -> Obj:
        key = self.keys.key(resource, obj)
        response = await self._txn([compare_mod(key, expect_rv)], [op_delete(key), self._mark()], [op_get(key)])
        if not response.succeeded:
            raise StaleWrite(self._current(response))
        gone = dict(obj, metadata=dict(obj["metadata"]))
        return await self._written(gone, int(response.header.revision))

    def _mark(self) -> Any:
        return op_put(self._last_write, b"")

    async def _txn(self, compare: list[Any], success: list[Any], failure: list[Any]) -> Any:
        try:
            return await self.conn.txn(compare, success, failure)
        except StoreFailed as exc:
            self.failed_commits += 1
            log.error("etcd refused a write: %s (free space: compact, defragment, disarm the alarm)", exc)
            raise

    async def _written(self, obj: Obj, revision: int) -> Obj:
        self.commits += 1
        self.committed_writes += 1
        obj["metadata"]["resourceVersion"] = str(revision)
        try:
            await self._wait_applied(revision, "write")
        except StorageUnavailable:
            # Committed: acknowledging it is right; this replica's cache catches up later.
            log.warning("etcd watch is behind revision %d after a committed write", revision)
        return obj

    @staticmethod
    def _current(response: Any) -> Obj | None:
        for op in response.responses:
            for kv in op.response_range.kvs:
                return decode(kv.value, kv.mod_revision)
        return None

    # -- the cache watch -----------------------------------------------------------------

    async def _wait_applied(self, revision: int, what: str) -> None:
        if revision <= self.rv:
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append((revision, future))
        try:
            await asyncio.wait_for(asyncio.shield(future), self.config.request_timeout)
        except TimeoutError:
            raise StorageUnavailable(f"the API server's view of etcd is behind revision {revision} "
                                     f"(its watch does not advance); cannot serve the {what}") from None

    def _advance(self, revision: int) -> None:
        """Release the requests waiting for ``revision`` (its events are applied: ``self.rv``)."""
        still = []
        for rev, future in self._waiters:
            if future.done():
                continue
            if rev <= revision:
                future.set_result(None)
            else:
                still.append((rev, future))
        self._waiters = still

    async def _watch_loop(self) -> None:
        backoff = 0.1
        while True:
            try:
                await self._follow()
                backoff = 0.1
            except asyncio.CancelledError:
                raise
            except (grpc.aio.AioRpcError, StorageUnavailable) as exc:
                log.warning("etcd watch interrupted (%s); resuming from revision %d", why(exc), self.rv + 1)
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, 2.0)

    async def _follow(self) -> None:
        stream = self.conn.watch_stream(self.prefix, prefix_end(self.prefix), self.rv + 1, False)
        try:
            async for response in stream:
                if response.compact_revision:
                    await self._relist()
                    return
                if response.canceled:
                    raise StorageUnavailable(response.cancel_reason or "watch canceled")
                for event in response.events:  # etcd never splits one revision's events over two responses
                    self._apply(event)
        finally:
            stream.cancel()

    def _apply(self, event: Any) -> None:
        kv = event.kv
        revision = int(kv.mod_revision)
        if revision < self.rv:
            return  # already applied (a resumed stream repeats nothing, but be safe); == rv: the same txn
        parsed = self.keys.parse(kv.key)
        if parsed is not None:
            resource, key = parsed
            items = self._objects.setdefault(resource, {})
            previous = items.get(key)
            if event.type == DELETE:
                items.pop(key, None)
                if previous is not None:
                    self.rv = revision
                    self._notify("DELETED", resource, deleted_at(previous, revision), previous)
            else:
                obj = decode(kv.value, revision)
                items[key] = obj
                self.rv = revision
                self._notify("ADDED" if previous is None else "MODIFIED", resource, obj, previous)
        self.rv = max(self.rv, revision)
        self._advance(revision)

    async def _relist(self) -> None:
        """The watch fell behind a compaction: reload and tell listeners what changed meanwhile."""
        response = await self.conn.range(self.prefix, prefix_end(self.prefix))
        revision = int(response.header.revision)
        fresh: dict[str, dict[ObjKey, Obj]] = {}
        for kv in response.kvs:
            parsed = self.keys.parse(kv.key)
            if parsed is not None:
                fresh.setdefault(parsed[0], {})[parsed[1]] = decode(kv.value, kv.mod_revision)
        old, self._objects = self._objects, fresh
        self.rv = revision
        for resource in sorted(set(old) | set(fresh)):
            before, after = old.get(resource, {}), fresh.get(resource, {})
            for key in sorted(set(before) | set(after)):
                prev, now = before.get(key), after.get(key)
                if now is None and prev is not None:
                    self._notify("DELETED", resource, deleted_at(prev, revision), prev)
                elif now is not None and prev != now:
                    self._notify("ADDED" if prev is None else "MODIFIED", resource, now, prev)
        log.warning("etcd history was compacted past this replica's watch; reloaded at revision %d", revision)
        self._advance(revision)

    def _notify(self, event: str, resource: str, obj: Obj, previous: Obj | None) -> None:
        for listener in self._listeners:
            listener(event, resource, obj, previous)

    # -- history for watches older than the cache -----------------------------------------

    async def history(self, resource: str, namespace: str | None, since: int,
                      sink: HistorySink) -> asyncio.Task[None] | None:
        """Replay and follow ``resource`` from etcd itself, from revision ``since + 1``."""
        return await follow_history(self.conn, self.keys, resource, namespace, since, sink)
