"""The etcd store's cache counts a revision as held only once its events arrived.

etcd before 3.4.24 / 3.5.8 may send a requested progress notification ahead of the events it
covers (etcd-io/etcd#15220). Seen under e2e/test_ha.py: a replica's watch got "progress: 484"
before the event of revision 484, was then cut by a lost etcd member, resumed from 485 and never
held the Job written at 484, although that create had been acknowledged. These tests drive
:class:`EtcdStore` with a scripted watch stream (no etcd process) to pin down both halves: a
consistent read waits for the last write's events, and a resumed watch starts after the last event
applied, whatever revision a progress answer announced.
"""

from __future__ import annotations

import asyncio
from typing import Any

import orjson

from federation.apiserver.etcd_client import EtcdConfig
from federation.apiserver.etcd_store import EtcdStore
from federation.apiserver.etcdpb import rpc_pb2 as pb
from federation.apiserver.storage import StorageUnavailable

PREFIX = b"/caldera/registry/"
JOB_KEY = PREFIX + b"batch.volcano.sh/jobs/default/late"
LAST_WRITE = PREFIX + b"last_write_rev_key"
OPENED = 5  # the revision the store loads at start


def _job_event(revision: int) -> Any:
    body = orjson.dumps({"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
                         "metadata": {"name": "late", "namespace": "default"}})
    return pb.WatchResponse(header={"revision": revision}, events=[
        {"type": 0, "kv": {"key": JOB_KEY, "value": body, "mod_revision": revision, "create_revision": revision}},
        {"type": 0, "kv": {"key": LAST_WRITE, "value": b"", "mod_revision": revision}}])


def _progress(revision: int) -> Any:
    return pb.WatchResponse(header={"revision": revision})  # no events, not a creation answer


class ScriptedEtcd:
    """What EtcdStore calls on its connection; each watch stream plays the next script (a queue)."""

    def __init__(self, last_write: int) -> None:
        self.last_write = last_write
        self.streams: list[asyncio.Queue[Any]] = []
        self.starts: list[int] = []

    async def connect(self) -> None:
        return None

    async def close(self) -> None:
        return None

    async def range(self, key: bytes, range_end: bytes | None = None, revision: int = 0,
                    timeout: float | None = None, count_only: bool = False) -> Any:
        if key == LAST_WRITE:
            return pb.RangeResponse(header={"revision": self.last_write},
                                    kvs=[{"key": LAST_WRITE, "mod_revision": self.last_write}])
        return pb.RangeResponse(header={"revision": OPENED})

    def watch_stream(self, key: bytes, range_end: bytes, start_revision: int, prev_kv: bool,
                     progress: Any = None) -> Any:
        self.starts.append(start_revision)
        script: asyncio.Queue[Any] = asyncio.Queue()
        self.streams.append(script)
        return _Stream(script)


class _Stream:
    def __init__(self, script: asyncio.Queue[Any]) -> None:
        self.script = script

    def __aiter__(self) -> "_Stream":
        return self

    async def __anext__(self) -> Any:
        item = await self.script.get()
        self.script.task_done()
        if isinstance(item, BaseException):
            raise item
        return item

    def cancel(self) -> None:
        return None


async def _store(etcd: ScriptedEtcd) -> EtcdStore:
    store = EtcdStore(EtcdConfig(servers=["http://127.0.0.1:1"], compaction_interval=0, request_timeout=5))
    store.conn = etcd  # type: ignore[assignment]
    return await store.start()


async def _stream(etcd: ScriptedEtcd, n: int) -> asyncio.Queue[Any]:
    """The ``n``-th watch stream, once the store's watch task opened it (after its backoff, if resumed)."""
    deadline = asyncio.get_running_loop().time() + 5
    while len(etcd.streams) < n:
        assert asyncio.get_running_loop().time() < deadline, f"the store opened {len(etcd.streams)} watch streams"
        await asyncio.sleep(0.01)
    return etcd.streams[n - 1]


async def _turns(n: int = 20) -> None:
    """Let every ready task run ``n`` times (what a released waiter needs to finish)."""
    for _ in range(n):
        await asyncio.sleep(0)


async def test_a_consistent_read_waits_for_the_events_not_for_a_progress_answer() -> None:
    etcd = ScriptedEtcd(last_write=OPENED + 1)
    store = await _store(etcd)
    try:
        script = await _stream(etcd, 1)
        reading = asyncio.create_task(store.consistent())
        await script.put(_progress(OPENED + 1))  # announced before its event arrives
        await script.join()
        await _turns()
        assert not reading.done(), "a progress answer was taken for the events of its revision"
        await script.put(_job_event(OPENED + 1))
        assert await asyncio.wait_for(reading, 5) == OPENED + 1
        assert store.get("batch.volcano.sh/jobs", "default", "late") is not None
    finally:
        await store.aclose()


async def test_a_resumed_watch_starts_after_the_last_event_applied() -> None:
    etcd = ScriptedEtcd(last_write=OPENED + 1)
    store = await _store(etcd)
    try:
        first = await _stream(etcd, 1)
        await first.put(_progress(OPENED + 1))
        await first.put(StorageUnavailable("etcdserver: no leader"))  # a member lost mid-stream
        second = await _stream(etcd, 2)
        assert etcd.starts == [OPENED + 1, OPENED + 1], "the resumed watch skipped a revision it never held"
        await second.put(_job_event(OPENED + 1))
        await asyncio.wait_for(store.consistent(), 5)
        assert store.get("batch.volcano.sh/jobs", "default", "late") is not None
        assert store.rv == OPENED + 1
    finally:
        await store.aclose()
