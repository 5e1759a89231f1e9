"""Durable object store: one SQLite file, one global resourceVersion, every object in memory.

Reads are served from an in-memory index (dicts of wire objects); every write is one short
SQLite transaction in WAL mode with ``synchronous=FULL``, committed before the caller gets
its answer, so an object acknowledged with a 2xx survives ``kill -9``. The counter of the
last resourceVersion lives in the same transaction as the object it versions, so it never
goes backwards across restarts, even after deletes.

The store knows nothing of Kubernetes semantics (uid, generation, finalizers); that is
:mod:`federation.apiserver.registry`. It only versions objects and tells the watch hub.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson

Obj = dict[str, Any]
#: (namespace or "", name)
ObjKey = tuple[str, str]

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

#: Called after every committed change: (event type, resource, new object, previous object or None).
Listener = Callable[[str, str, Obj, "Obj | None"], None]


class Store:
    """Objects keyed by resource (``batch.volcano.sh/jobs``, ``pods``), namespace and name."""

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
        """Store ``obj`` (its metadata.resourceVersion is set here) and commit; returns it."""
        meta = obj["metadata"]
        key = (meta.get("namespace") or "", meta["name"])
        rv = self._rv + 1
        meta["resourceVersion"] = str(rv)
        body = orjson.dumps(obj)
        self._commit([("INSERT OR REPLACE INTO objects VALUES (?, ?, ?, ?, ?)",
                       (resource, key[0], key[1], rv, body))], rv)
        items = self._objects.setdefault(resource, {})
        previous = items.get(key)
        items[key] = obj
        self._notify(event, resource, obj, previous)
        return obj

    def delete(self, resource: str, obj: Obj) -> Obj:
        """Remove ``obj``; the DELETED event carries the object at a new resourceVersion."""
        meta = obj["metadata"]
        key = (meta.get("namespace") or "", meta["name"])
        rv = self._rv + 1
        self._commit([("DELETE FROM objects WHERE resource=? AND namespace=? AND name=?",
                       (resource, key[0], key[1]))], rv)
        previous = self._objects.get(resource, {}).pop(key, None)
        gone = dict(obj)
        gone["metadata"] = dict(meta, resourceVersion=str(rv))
        self._notify("DELETED", resource, gone, previous)
        return gone

    def _commit(self, statements: list[tuple[str, tuple[Any, ...]]], rv: int) -> None:
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            for sql, params in statements:
                db.execute(sql, params)
            db.execute("INSERT OR REPLACE INTO meta VALUES ('rv', ?)", (rv,))
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        self._rv = rv

    def _notify(self, event: str, resource: str, obj: Obj, previous: Obj | None) -> None:
        for listener in self._listeners:
            listener(event, resource, obj, previous)

    def close(self) -> None:
        self._db.close()
