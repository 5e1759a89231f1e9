"""Durable object store: one SQLite file, one global resourceVersion, every object in memory.

Reads are served from an in-memory index (dicts of wire objects). Writes change the index at
once (so the next admission check sees them) and queue their SQL; a flusher commits everything
queued in one SQLite transaction (WAL, ``synchronous=FULL``: one fsync) on a writer thread,
while the event loop keeps serving. This is group commit: under concurrency many writes share
an fsync. Nothing leaves the server before it is durable: the API answers a write, a read or a
watch event only after :meth:`Store.wait_durable` for the resourceVersion it reveals, so an
object acknowledged with a 2xx (or seen by anyone) survives ``kill -9``. The counter of the
last resourceVersion is committed in the same transaction as the objects it versions, so it
never goes backwards across restarts, even after deletes. Without a running event loop (tools,
tests) every write commits before it returns.

The store knows nothing of Kubernetes semantics (uid, generation, finalizers); that is
:mod:`federation.apiserver.registry`. It only versions objects and tells its listeners.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import orjson

from federation.apiserver.storage import (
    HistorySink,
    KeyExists,
    Listener,
    Obj,
    ObjKey,
    StaleWrite,
    StoreFailed,
)

__all__ = ["Obj", "ObjKey", "Store", "StoreFailed"]

SCHEMA = """
CREATE TABLE IF NOT EXISTS objects (
    resource TEXT NOT NULL,
    namespace TEXT NOT NULL,
    name TEXT NOT NULL,
    rv INTEGER NOT NULL,
    body BLOB NOT NULL,
    PRIMARY KEY (resource, namespace, name)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
"""

Statement = tuple[str, tuple[Any, ...]]
Batch = list[Statement]  # (an alias: the class's own ``list`` method shadows the builtin inside it)
log = logging.getLogger("caldera.apiserver.store")


class Store:
    """Objects keyed by resource (``batch.volcano.sh/jobs``, ``pods``), namespace and name.

    Implements :class:`federation.apiserver.storage.Storage` for one process: the conditional
    writes check the cache (this process is the only writer), and ``put``/``delete`` are the
    unconditional synchronous forms they use.
    """

    #: SQLite's group commit already hands a stream several events per write
    watch_coalesce_s = 0.0

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(self.path), isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        # FULL: the WAL is fsync'ed at every commit, so a committed write survives power loss too.
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.executescript(SCHEMA)
        self._objects: dict[str, dict[ObjKey, Obj]] = {}
        self._listeners: list[Listener] = []
        row = self._db.execute("SELECT value FROM meta WHERE key='rv'").fetchone()
        self._rv: int = int(row[0]) if row else 0
        for resource, namespace, name, rv, body in self._db.execute(
                "SELECT resource, namespace, name, rv, body FROM objects"):
            self._objects.setdefault(resource, {})[(namespace, name)] = orjson.loads(body)
            self._rv = max(self._rv, int(rv))
        #: The resourceVersion current when this process opened the store (watch history starts here).
        self.opened_rv = self._rv
        #: Every change up to this resourceVersion is on disk.
        self.durable_rv = self._rv
        self._pending: Batch = []
        self._waiters: list[tuple[int, asyncio.Future[None]]] = []
        self._flusher: asyncio.Task[None] | None = None
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="caldera-store")
        self.failure: BaseException | None = None
        #: commits and the writes they carried (for /metrics and the benchmark)
        self.commits = 0
        self.committed_writes = 0
        #: reads at an older revision are possible (list_at, history)
        self.keeps_history = False
        self.describe = f"sqlite {self.path}"

    # -- reads ---------------------------------------------------------------------------

    @property
    def rv(self) -> int:
        return self._rv

    def get(self, resource: str, namespace: str, name: str) -> Obj | None:
        """The stored object (shared: callers must copy before changing it)."""
        return self._objects.get(resource, {}).get((namespace, name))

    def list(self, resource: str, namespace: str | None = None) -> list[Obj]:
        """Objects of ``resource`` (in ``namespace`` when given) sorted by namespace then name."""
        items = self._objects.get(resource, {})
        keys = sorted(k for k in items if namespace is None or k[0] == namespace)
        return [items[k] for k in keys]

    def iter_all(self) -> Iterator[tuple[str, Obj]]:
        for resource, items in self._objects.items():
            for obj in list(items.values()):
                yield resource, obj

    def count(self, resource: str) -> int:
        return len(self._objects.get(resource, {}))

    # -- writes --------------------------------------------------------------------------

    def add_listener(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def next_rv(self) -> int:
        return self._rv + 1

    def put(self, resource: str, obj: Obj, event: str) -> Obj:
        """Store ``obj`` (its metadata.resourceVersion is set here); durable once ``wait_durable(rv)``."""
        meta = obj["metadata"]
        key = (meta.get("namespace") or "", meta["name"])
        rv = self._begin_write()
        meta["resourceVersion"] = str(rv)
        self._queue(("INSERT OR REPLACE INTO objects VALUES (?, ?, ?, ?, ?)",
                     (resource, key[0], key[1], rv, orjson.dumps(obj))))
        items = self._objects.setdefault(resource, {})
        previous = items.get(key)
        items[key] = obj
        self._notify(event, resource, obj, previous)
        return obj

    def delete(self, resource: str, obj: Obj) -> Obj:
        """Remove ``obj``; the DELETED event carries the object at a new resourceVersion."""
        meta = obj["metadata"]
        key = (meta.get("namespace") or "", meta["name"])
        rv = self._begin_write()
        self._queue(("DELETE FROM objects WHERE resource=? AND namespace=? AND name=?",
                     (resource, key[0], key[1])))
        previous = self._objects.get(resource, {}).pop(key, None)
        gone = dict(obj)
        gone["metadata"] = dict(meta, resourceVersion=str(rv))
        self._notify("DELETED", resource, gone, previous)
        return gone

    # -- the Storage interface: conditional writes -----------------------------------------

    def _key_of(self, obj: Obj) -> ObjKey:
        meta = obj["metadata"]
        return (meta.get("namespace") or "", meta["name"])

    def _check(self, resource: str, obj: Obj, expect_rv: int) -> None:
        current = self._objects.get(resource, {}).get(self._key_of(obj))
        if current is None or int(current["metadata"]["resourceVersion"]) != expect_rv:
            raise StaleWrite(current)

    async def create(self, resource: str, obj: Obj) -> Obj:
        if self._key_of(obj) in self._objects.get(resource, {}):
            raise KeyExists(obj["metadata"]["name"])
        return self.put(resource, obj, "ADDED")

    async def update(self, resource: str, obj: Obj, expect_rv: int) -> Obj:
        self._check(resource, obj, expect_rv)
        return self.put(resource, obj, "MODIFIED")

    async def remove(self, resource: str, obj: Obj, expect_rv: int) -> Obj:
        self._check(resource, obj, expect_rv)
        return self.delete(resource, obj)

    async def consistent(self) -> int:
        return self._rv  # the only writer: the cache is the truth

    async def list_at(self, resource: str, namespace: str | None, rv: int) -> list[Obj]:
        return self.list(resource, namespace)  # no history kept: pages read the current state

    async def history(self, resource: str, namespace: str | None, since: int,
                sink: HistorySink) -> "asyncio.Task[None] | None":
        return None  # the watch hub's ring is all the history there is

    async def aclose(self) -> None:
        try:
            await self.drain()
        finally:
            self.close()

    # -- durability (group commit) -------------------------------------------------------

    def _begin_write(self) -> int:
        if self.failure is not None:
            raise StoreFailed(f"the store failed to commit earlier ({self.failure}); restart the server")
        self._rv += 1
        return self._rv

    def _queue(self, statement: Statement) -> None:
        self._pending.append(statement)
        if self._flusher is not None:
            return  # the running flusher takes it in its next batch
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no event loop: commit before returning
            self._commit_pending()
            return
        self._flusher = loop.create_task(self._flush())

    def _commit_pending(self) -> None:
        batch, self._pending = self._pending, []
        if batch:
            self._write(batch, self._rv)
            self.durable_rv = self._rv

    def _write(self, batch: Batch, rv: int) -> None:
        """One transaction for the whole batch (runs on the writer thread, or inline without a loop)."""
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            for sql, params in batch:
                db.execute(sql, params)
            db.execute("INSERT OR REPLACE INTO meta VALUES ('rv', ?)", (rv,))
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        self.commits += 1
        self.committed_writes += len(batch)

    async def _flush(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            while self._pending:
                batch, self._pending = self._pending, []
                upto = self._rv
                await loop.run_in_executor(self._writer, self._write, batch, upto)
                self.durable_rv = max(self.durable_rv, upto)
                self._wake()
        except BaseException as exc:  # the index is ahead of the disk now: refuse further work
            self.failure = exc
            log.critical("store commit failed: %s; refusing further writes", exc)
            self._wake()
            if isinstance(exc, asyncio.CancelledError):
                raise
        finally:
            self._flusher = None

    def _wake(self) -> None:
        still: list[tuple[int, asyncio.Future[None]]] = []
        for rv, future in self._waiters:
            if future.done():
                continue
            if rv <= self.durable_rv:
                future.set_result(None)
            elif self.failure is not None:
                future.set_exception(StoreFailed(f"commit failed: {self.failure}"))
            else:
                still.append((rv, future))
        self._waiters = still

    async def wait_durable(self, rv: int | None = None) -> None:
        """Return once every change up to ``rv`` (default: the current one) is committed to disk."""
        target = self._rv if rv is None else rv
        if target <= self.durable_rv:
            return
        if self.failure is not None:
            raise StoreFailed(f"commit failed: {self.failure}")
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append((target, future))
        await future

    async def drain(self) -> None:
        """Wait for every queued write to be committed."""
        while self._flusher is not None:
            await asyncio.shield(self._flusher)

    def _notify(self, event: str, resource: str, obj: Obj, previous: Obj | None) -> None:
        for listener in self._listeners:
            listener(event, resource, obj, previous)

    def close(self) -> None:
        """Commit what is queued (call :meth:`drain` first from async code) and close the file."""
        self._writer.shutdown(wait=True)  # the batch in flight (if any) finishes first
        if self.failure is None:
            self._commit_pending()
        self._db.close()
