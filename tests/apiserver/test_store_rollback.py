"""A commit that fails (here: SQLite's SQLITE_FULL, injected) is undone everywhere memory holds it:
the index, the watch hub's history and queues, the registry's owner index; its writers hear the
cause; writes are refused until a probe commits, then resume with resourceVersions never used before.
(tests/apiserver/test_full_disk.py does the same on a real full disk.)"""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from federation.apiserver.registry import Registry
from federation.apiserver.storage import StoreFailed
from federation.apiserver.store import Store
from federation.apiserver.watch import WatchHub

RES = "configmaps"
FULL = "database or disk is full"


def _obj(name: str, owner: str | None = None, n: int = 0) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default", "uid": f"uid-{name}"}
    if owner:
        meta["ownerReferences"] = [{"apiVersion": "v1", "kind": "ConfigMap", "name": owner, "uid": f"uid-{owner}"}]
    return {"metadata": meta, "data": {"n": str(n)}}


class DiskFull:
    """Makes the store's transactions fail as SQLite does on a full disk, while ``full`` is set."""

    def __init__(self, store: Store) -> None:
        self.full = False
        self._write = store._write

        def write(batch: Any, rv: int) -> None:
            if self.full:
                raise sqlite3.OperationalError(FULL)
            self._write(batch, rv)

        store._write = write  # type: ignore[method-assign]


@pytest.fixture
def setup(tmp_path: Path) -> Any:
    store = Store(tmp_path / "db")
    hub = WatchHub(store.rv)
    store.add_listener(hub.publish)
    store.add_rollback_listener(lambda durable, _changes: hub.roll_back(durable))
    registry = Registry(store)
    yield store, hub, registry, DiskFull(store)
    store.close()


async def test_a_failed_commit_is_undone_in_memory_and_its_writers_hear_the_cause(setup: Any) -> None:
    store, hub, registry, disk = setup
    store.put(RES, _obj("owner"), "ADDED")
    await store.wait_durable()
    durable, kept = store.rv, dict(store.get(RES, "default", "owner"))
    watcher = hub.subscribe(RES, None, None, durable)

    disk.full = True
    store.put(RES, _obj("owner", n=1), "MODIFIED")
    store.put(RES, _obj("child", owner="owner"), "ADDED")
    store.delete(RES, _obj("owner", n=1))
    high = store.rv
    assert registry.owners.by_owner.get("uid-owner"), "indexed while pending"
    with pytest.raises(StoreFailed, match=FULL) as failed:
        await store.wait_durable(high)
    assert isinstance(failed.value.cause, sqlite3.OperationalError)

    assert store.get(RES, "default", "owner") == kept and store.get(RES, "default", "child") is None
    assert [o["metadata"]["name"] for o in store.list(RES)] == ["owner"]
    assert not registry.owners.by_owner.get("uid-owner"), "the owner index forgot the undone child"
    assert watcher.queue.empty(), "no undone event stays queued"
    assert all(e.rv <= durable for e in hub._history)
    assert store.failed_commits == 1 and store.failure is not None
    await store.wait_durable(store.rv)  # reads may be answered: memory equals the disk

    with pytest.raises(StoreFailed, match=FULL):
        store.put(RES, _obj("refused"), "ADDED")  # refused at once while the disk is full
    assert store.get(RES, "default", "refused") is None
    assert not await store.probe() and store.failure is not None

    disk.full = False
    assert await store.probe() and store.failure is None
    written = store.put(RES, _obj("after"), "ADDED")
    await store.wait_durable()
    assert int(written["metadata"]["resourceVersion"]) > high, "an undone resourceVersion is never reused"
    assert [e.obj["metadata"]["name"] for _, e in [watcher.queue.get_nowait()]] == ["after"]


async def test_the_prober_clears_the_failure_by_itself(setup: Any) -> None:
    store, _hub, _registry, disk = setup
    store.probe_interval = 0.01
    disk.full = True
    store.put(RES, _obj("lost"), "ADDED")
    with pytest.raises(StoreFailed):
        await store.wait_durable()
    disk.full = False
    for _ in range(500):
        if store.failure is None:
            break
        await asyncio.sleep(0.01)
    assert store.failure is None, "the background probe did not clear the failed state"
    store.put(RES, _obj("back"), "ADDED")
    await store.wait_durable()
    assert store.get(RES, "default", "back") is not None and store.get(RES, "default", "lost") is None


def test_without_an_event_loop_a_failed_commit_raises_its_cause_and_changes_nothing(tmp_path: Path) -> None:
    store = Store(tmp_path / "db")
    disk = DiskFull(store)
    disk.full = True
    try:
        with pytest.raises(StoreFailed, match=FULL):
            store.put(RES, _obj("a"), "ADDED")
        assert store.get(RES, "default", "a") is None and store.failed_commits == 1
    finally:
        disk.full = False
        store.close()
