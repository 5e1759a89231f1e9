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

A commit that fails (a full disk: SQLite's "database or disk is full", an I/O error) loses
nothing that was acknowledged and leaves nothing half-done: every change after the last durable
resourceVersion is undone in the in-memory index (and the rollback listeners, the watch hub and
the owner index, forget them), their writers get :class:`StoreFailed` carrying the cause, and the
store refuses writes (reads go on) until a probe transaction commits again: on a timer, and on
every ``/readyz``. Writes then resume without a restart.

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
    RollbackListener,
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
#: one change not yet durable: (resourceVersion, resource, key, object before, object after or None)
Undo = tuple[int, str, ObjKey, "Obj | None", "Obj | None"]
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
        #: the last commit failure while writes are refused (None: the store commits)
        self.failure: BaseException | None = None
        #: commits and the writes they carried (for /metrics and the benchmark), failed commits
        self.commits = 0
        self.committed_writes = 0
        self.failed_commits = 0
        #: seconds between probes of a failed store (a probe commits the resourceVersion again)
        self.probe_interval = 1.0
        self._undo: list[Undo] = []
        self._rollback_listeners: list[RollbackListener] = []
        self._prober: asyncio.Task[None] | None = None
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

    def add_rollback_listener(self, listener: RollbackListener) -> None:
        self._rollback_listeners.append(listener)

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
        self._undo.append((rv, resource, key, previous, obj))
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
        self._undo.append((rv, resource, key, previous, None))
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
            self._start_prober()
            raise StoreFailed(f"{cause(self.failure)}: the store cannot commit ({self.describe}); "
                              f"writes are refused until a probe commits again, reads are served", self.failure)
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
            try:
                self._write(batch, self._rv)
            except sqlite3.Error as exc:
                self._failed(exc)
                raise StoreFailed(f"{cause(exc)}: commit failed ({self.describe}); nothing was changed",
                                  exc) from None
            self._durable(self._rv)

    def _durable(self, rv: int) -> None:
        self.durable_rv = max(self.durable_rv, rv)
        if self._undo and self._undo[-1][0] <= self.durable_rv:
            self._undo.clear()
        else:
            self._undo = [u for u in self._undo if u[0] > self.durable_rv]

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
            # SQLite already rolled back on SQLITE_FULL/IOERR: an unconditional ROLLBACK would
            # replace the real cause with "cannot rollback - no transaction is active".
            if db.in_transaction:
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
                self._durable(upto)
                self._wake()
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # the index is ahead of the disk: undo what is not durable
            self._failed(exc)
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
                future.set_exception(StoreFailed(f"{cause(self.failure)}: commit failed ({self.describe}); "
                                                 f"the change was not stored", self.failure))
            else:
                still.append((rv, future))
        self._waiters = still

    async def wait_durable(self, rv: int | None = None) -> None:
        """Return once every change up to ``rv`` (default: the current one) is committed to disk."""
        target = self._rv if rv is None else rv
        if target <= self.durable_rv:
            return
        if self.failure is not None:
            raise StoreFailed(f"{cause(self.failure)}: commit failed ({self.describe}); "
                              f"the change was not stored", self.failure)
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
        if self._prober is not None:
            self._prober.cancel()
        self._writer.shutdown(wait=True)  # the batch in flight (if any) finishes first
        if self.failure is None:
            self._commit_pending()
        self._db.close()

    # -- a failed commit: roll the memory back, refuse writes, probe until the disk takes them --

    def _failed(self, exc: BaseException) -> None:
        """Undo every change after the last durable resourceVersion and fail their writers."""
        self.failure = exc
        self.failed_commits += 1
        undone = list(reversed(self._undo))
        self._undo, self._pending = [], []
        for _rv, resource, key, before, _after in undone:
            items = self._objects.setdefault(resource, {})
            if before is None:
                items.pop(key, None)
            else:
                items[key] = before
        durable = self.durable_rv
        self._wake()  # (failure set) whoever waits past the durable resourceVersion hears the cause
        # Memory equals the disk again. The undone resourceVersions are skipped, never handed out twice,
        # so a watch stream can still tell an undone event from a later one.
        self.durable_rv = self._rv
        log.error("store commit failed (%s): %d change(s) after resourceVersion %d undone; writes are refused "
                  "until the store can commit again, reads go on", cause(exc), len(undone), durable)
        changes = [(resource, before, after) for _rv, resource, _key, before, after in undone]
        for listener in self._rollback_listeners:
            listener(durable, changes)
        self._start_prober()

    def _start_prober(self) -> None:
        if self._prober is not None and not self._prober.done():
            return
        try:
            self._prober = asyncio.get_running_loop().create_task(self._probe_until_writable())
        except RuntimeError:  # no event loop: the next write (or probe()) tries again
            self._prober = None

    async def _probe_until_writable(self) -> None:
        while self.failure is not None:
            await asyncio.sleep(self.probe_interval)
            await self.probe()

    async def probe(self) -> bool:
        """Try one small transaction; on success the failed state is cleared and writes resume."""
        if self.failure is None:
            return True
        try:
            await asyncio.get_running_loop().run_in_executor(self._writer, self._write, [], self.durable_rv)
        except sqlite3.Error as exc:
            self.failure = exc
            return False
        if self.failure is not None and not self._pending:
            self.failure = None
            log.warning("store commits again (%s): writes resumed at resourceVersion %d", self.describe, self._rv)
        return self.failure is None


def cause(exc: BaseException) -> str:
    """The failure as SQLite words it ("database or disk is full"), without the exception class."""
    return str(exc) or type(exc).__name__
