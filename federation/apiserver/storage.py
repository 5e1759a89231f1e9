"""The storage interface the API server uses, with two implementations.

* :class:`federation.apiserver.store.Store`: one SQLite file, one process (the embedded default);
* :class:`federation.apiserver.etcd_store.EtcdStore`: etcd v3, any number of API replicas.

Both keep every object of the store in memory (a cache the registry's admission checks and the
list/get handlers read synchronously) and version objects with one global, increasing
resourceVersion (the SQLite counter, or the etcd revision). Writes are asynchronous and
conditional: ``create`` fails with :class:`KeyExists` when the key is taken, ``update`` and
``remove`` with :class:`StaleWrite` unless the stored object still has the resourceVersion the
caller read (an etcd transaction comparing mod revisions, or the same check in the SQLite
process). When a write returns, its change is in the cache and has been handed to the
listeners (watch hub, owner index), in resourceVersion order.

The store knows nothing of Kubernetes semantics (uid, generation, finalizers): that is
:mod:`federation.apiserver.registry`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Any, Protocol

Obj = dict[str, Any]
#: (namespace or "", name)
ObjKey = tuple[str, str]
#: Called after every change: (event type, resource, new object, previous object or None).
Listener = Callable[[str, str, Obj, "Obj | None"], None]
#: Called after a failed commit undid the changes past ``durable_rv``, newest first:
#: (durable_rv, [(resource, object restored or None, object undone or None), ...]).
RollbackListener = Callable[[int, "list[tuple[str, Obj | None, Obj | None]]"], None]
#: Feeds one watcher from the store's own history: (type, resource, obj, previous) per event.
HistorySink = Callable[[str, str, Obj, "Obj | None"], None]


class StorageError(RuntimeError):
    """Base of the store's own errors (the registry maps them to Status answers)."""


class StoreFailed(StorageError):
    """A write failed for good (SQLite: a full disk, an I/O error; etcd: its space quota): nothing of it
    was stored. The API answers 500 with the cause in the message, as kube-apiserver answers a failed
    storage write. ``cause`` is the backend's own error."""

    def __init__(self, message: str, cause: BaseException | None = None) -> None:
        super().__init__(message)
        self.cause = cause


class StorageUnavailable(StorageError):
    """The backend cannot answer now (etcd lost quorum, or no endpoint answers): 503, retry later.

    ``unknown_outcome`` is True when a write was sent but its result never came back: it was not
    acknowledged, and it may or may not have been committed.
    """

    def __init__(self, message: str, unknown_outcome: bool = False) -> None:
        super().__init__(message)
        self.unknown_outcome = unknown_outcome


class KeyExists(StorageError):
    """``create`` found the key taken."""


class StaleWrite(StorageError):
    """``update``/``remove`` found the object changed (or gone) since the resourceVersion given."""

    def __init__(self, current: Obj | None) -> None:
        super().__init__("the object has been modified")
        self.current = current


class Expired(StorageError):
    """A read at (or a watch from) a revision the backend has compacted away."""

    def __init__(self, requested: int, oldest: int) -> None:
        super().__init__(f"revision {requested} has been compacted (oldest kept: {oldest})")
        self.requested = requested
        self.oldest = oldest


class Storage(Protocol):
    """What :class:`~federation.apiserver.registry.Registry`, the routes and the server use."""

    #: the newest resourceVersion applied to this process's cache
    rv: int
    #: how long a busy watch stream waits to batch its next write (0: write at once)
    watch_coalesce_s: float
    #: the resourceVersion current when this process opened the store (watch history starts here)
    opened_rv: int
    #: set while commits fail (SQLite: a full disk): writes are refused until a probe commits again
    failure: BaseException | None
    commits: int
    committed_writes: int
    #: writes the backend refused for good (SQLite commits, etcd's NOSPACE)
    failed_commits: int
    #: a short description for logs and /readyz ("sqlite /path", "etcd http://...")
    describe: str
    #: reads at an older revision are possible (etcd's MVCC history until compacted)
    keeps_history: bool

    # reads from the cache (shared objects: callers copy before changing them)
    def get(self, resource: str, namespace: str, name: str) -> Obj | None: ...
    def list(self, resource: str, namespace: str | None = None) -> list[Obj]: ...
    def iter_all(self) -> Iterator[tuple[str, Obj]]: ...
    def count(self, resource: str) -> int: ...
    def add_listener(self, listener: Listener) -> None: ...
    def add_rollback_listener(self, listener: RollbackListener) -> None: ...

    async def probe(self) -> bool:
        """True when writes can be committed (a failed SQLite store tries a transaction and recovers)."""
        ...

    # conditional writes; the returned object carries its new resourceVersion
    async def create(self, resource: str, obj: Obj) -> Obj: ...
    async def update(self, resource: str, obj: Obj, expect_rv: int) -> Obj: ...
    async def remove(self, resource: str, obj: Obj, expect_rv: int) -> Obj: ...

    async def consistent(self) -> int:
        """Bring the cache up to the backend's current revision (a quorum read with etcd)."""
        ...

    async def wait_durable(self, rv: int | None = None) -> None:
        """Return once what the answer about ``rv`` reveals is durable (committed)."""
        ...

    async def list_at(self, resource: str, namespace: str | None, rv: int) -> list[Obj]:
        """Objects of ``resource`` as they were at ``rv`` (for list pagination); :class:`Expired`."""
        ...

    async def history(self, resource: str, namespace: str | None, since: int,
                sink: HistorySink) -> "asyncio.Task[None] | None":
        """Feed ``sink`` every change after ``since`` from the backend's own history, or None if it
        keeps none beyond the watch hub's (SQLite). Raises :class:`Expired` through the task."""
        ...

    async def drain(self) -> None: ...
    async def aclose(self) -> None: ...
