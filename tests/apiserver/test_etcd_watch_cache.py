"""One etcd watch per replica feeds every API watcher (kube-apiserver's watch cache).

Drives :class:`EtcdStore` with the scripted watch streams of ``test_etcd_cache_order`` (no etcd
process) and wires it to a :class:`WatchHub` the way ``ApiServer.start`` does: however many API
watches a replica serves, it holds one etcd watch stream, each event is decoded once and the same
object reaches every watcher; a watcher from an older revision is replayed from the hub's window in
order, and one older than the window is refused with 410 unless the store's history serves it.
"""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest

from federation.apiserver.etcdpb import rpc_pb2 as pb
from federation.apiserver.status import ApiError
from federation.apiserver.watch import Watcher, WatchHub
from tests.apiserver.test_etcd_cache_order import LAST_WRITE, OPENED, PREFIX, ScriptedEtcd, _store, _stream

JOBS = "batch.volcano.sh/jobs"


def _create(revision: int, name: str) -> Any:
    body = orjson.dumps({"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
                         "metadata": {"name": name, "namespace": "default"}})
    key = PREFIX + f"{JOBS}/default/{name}".encode()
    return pb.WatchResponse(header={"revision": revision}, events=[
        {"type": 0, "kv": {"key": key, "value": body, "mod_revision": revision, "create_revision": revision}},
        {"type": 0, "kv": {"key": LAST_WRITE, "value": b"", "mod_revision": revision}}])


async def _received(watcher: Watcher, n: int) -> list[Any]:
    return [await asyncio.wait_for(watcher.queue.get(), 5) for _ in range(n)]


async def test_many_watchers_share_one_etcd_watch_and_one_decoded_object() -> None:
    etcd = ScriptedEtcd(last_write=OPENED + 3)
    store = await _store(etcd)
    hub = WatchHub(store.rv, history=2)
    store.add_listener(hub.publish)
    try:
        script = await _stream(etcd, 1)
        watchers = [hub.subscribe(JOBS, None, None, None) for _ in range(50)]
        for i in range(1, 4):
            await script.put(_create(OPENED + i, f"j{i}"))
        await asyncio.wait_for(store.consistent(), 5)
        got = [await _received(w, 3) for w in watchers]
        assert len(etcd.streams) == 1, "an API watch opened its own etcd watch"
        assert [e.rv for _, e in got[0]] == [OPENED + 1, OPENED + 2, OPENED + 3]
        for events in got[1:]:  # the very same event objects: decoded and encoded once for all
            assert all(a is b for (_, a), (_, b) in zip(events, got[0], strict=True))
        # A watcher from an old revision inside the window gets the later events, in order.
        late = hub.subscribe(JOBS, None, None, OPENED + 1)
        assert [e.obj["metadata"]["name"] for _, e in await _received(late, 2)] == ["j2", "j3"]
        # Older than the window: 410 from the hub (the routes then ask the store's own history).
        with pytest.raises(ApiError) as gone:
            hub.subscribe(JOBS, None, None, OPENED)
        assert gone.value.code == 410
        assert len(etcd.streams) == 1
    finally:
        await store.aclose()
