"""EtcdStore.consistent(): concurrent callers share one quorum read, but never one sent before they called.

A fake connection stands in for etcd (no process): each range call is recorded and held until the test
releases it, so the order of "caller arrives" and "read sent" is exact.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from federation.apiserver.etcd_client import EtcdConfig
from federation.apiserver.etcd_store import EtcdStore
from federation.apiserver.storage import StorageUnavailable


class HeldReads:
    """``range`` of the last-write key: each call waits for its release and answers the revision then."""

    def __init__(self) -> None:
        self.sent: list[asyncio.Future[Any]] = []
        self.revision = 7

    async def range(self, key: bytes, *args: Any, **kwargs: Any) -> Any:
        held: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.sent.append(held)
        return await held

    async def close(self) -> None:
        return None

    def answer(self, i: int, revision: int | None = None, error: Exception | None = None) -> None:
        if error is not None:
            self.sent[i].set_exception(error)
            return
        kv = type("KV", (), {"mod_revision": revision or self.revision})()
        self.sent[i].set_result(type("Response", (), {"kvs": [kv]})())


def held_store() -> tuple[EtcdStore, HeldReads]:
    store = EtcdStore(EtcdConfig(["http://127.0.0.1:2379"]))
    fake = HeldReads()
    store.conn = fake  # type: ignore[assignment]
    store.rv = 100  # the cache already holds every revision the fake answers
    return store, fake


async def test_concurrent_callers_share_one_read_sent_after_they_called() -> None:
    store, reads = held_store()
    first = [asyncio.create_task(store.consistent()) for _ in range(20)]
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert len(reads.sent) == 1, "20 callers at once: one read"
    late = [asyncio.create_task(store.consistent()) for _ in range(5)]  # arrive while that read is in flight
    await asyncio.sleep(0)
    reads.answer(0)
    assert await asyncio.gather(*first) == [100] * 20
    await asyncio.sleep(0)
    assert not any(t.done() for t in late), "a caller must not take a read sent before it called"
    assert len(reads.sent) == 2, "the late callers share the next read"
    reads.answer(1)
    assert await asyncio.gather(*late) == [100] * 5
    await store.aclose()


async def test_a_failed_read_fails_its_callers_and_the_next_caller_reads_again() -> None:
    store, reads = held_store()
    callers = [asyncio.create_task(store.consistent()) for _ in range(3)]
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    reads.answer(0, error=StorageUnavailable("etcd cannot serve the read (no quorum)"))
    for task in callers:
        with pytest.raises(StorageUnavailable, match="no quorum"):
            await task
    again = asyncio.create_task(store.consistent())
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert len(reads.sent) == 2
    reads.answer(1)
    assert await again == 100
    await store.aclose()
