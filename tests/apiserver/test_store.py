"""The store's group commit: writes queued in one turn of the event loop share one transaction,
nothing is reported durable before it is on disk, and a reopened store has every durable write."""

from __future__ import annotations

import asyncio
from pathlib import Path

from federation.apiserver.store import Store

RES = "batch.volcano.sh/jobs"


def _obj(name: str) -> dict[str, object]:
    return {"metadata": {"name": name, "namespace": "default"}, "spec": {"n": name}}


async def test_writes_of_one_loop_turn_share_one_commit(tmp_path: Path) -> None:
    store = Store(tmp_path / "db")
    start = store.rv
    for i in range(100):
        store.put(RES, _obj(f"j{i}"), "ADDED")
    assert store.rv == start + 100 and store.durable_rv == start, "queued, not yet on disk"
    await store.wait_durable(store.rv)
    assert store.durable_rv == store.rv
    assert (store.commits, store.committed_writes) == (1, 100)
    store.delete(RES, store.get(RES, "default", "j0") or {})
    waiters = [asyncio.create_task(store.wait_durable(store.rv)) for _ in range(5)]
    await asyncio.gather(*waiters)
    assert store.commits == 2
    store.close()
    again = Store(tmp_path / "db")
    assert again.count(RES) == 99 and again.get(RES, "default", "j0") is None
    assert again.rv == start + 101, "the resourceVersion counter is durable too"
    again.close()


def test_without_an_event_loop_every_write_commits_at_once(tmp_path: Path) -> None:
    store = Store(tmp_path / "db")
    store.put(RES, _obj("a"), "ADDED")
    assert store.durable_rv == store.rv and store.commits == 1
    store.close()
    reopened = Store(tmp_path / "db")
    assert reopened.get(RES, "default", "a") == {"metadata": {"name": "a", "namespace": "default",
                                                              "resourceVersion": "1"}, "spec": {"n": "a"}}
    reopened.close()


async def test_close_commits_what_is_queued(tmp_path: Path) -> None:
    store = Store(tmp_path / "db")
    store.put(RES, _obj("late"), "ADDED")
    store.close()  # a graceful stop that did not drain first still keeps the write
    reopened = Store(tmp_path / "db")
    assert reopened.get(RES, "default", "late") is not None
    reopened.close()
