"""The watch hub's watcher queue: how a stream's writer sleeps and is woken (no HTTP)."""

from __future__ import annotations

import asyncio
from typing import Any

from federation.apiserver.watch import WatchHub


def _obj(name: str, rv: int) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "default", "resourceVersion": str(rv)}}


async def test_wait_times_out_false_when_nothing_is_queued() -> None:
    watcher = WatchHub(0).subscribe("configmaps", None, None, None)
    assert await watcher.wait(0.01) is False
    assert watcher._waiter is None  # nothing left behind for a later put to wake


async def test_publish_wakes_every_sleeping_watcher_in_order() -> None:
    hub = WatchHub(0)
    watchers = [hub.subscribe("configmaps", None, None, None) for _ in range(3)]
    sleeping = [asyncio.create_task(w.wait(30)) for w in watchers]
    await asyncio.sleep(0)  # every writer is now asleep on its future
    assert all(w._waiter is not None for w in watchers)
    hub.publish("ADDED", "configmaps", _obj("a", 5), None)
    hub.publish("MODIFIED", "configmaps", _obj("a", 6), _obj("a", 5))
    assert await asyncio.wait_for(asyncio.gather(*sleeping), 5) == [True, True, True]
    for watcher in watchers:
        first, second = watcher.queue.get_nowait(), watcher.queue.get_nowait()
        assert first is not None and second is not None
        assert [(first[0], first[1].rv), (second[0], second[1].rv)] == [("ADDED", 5), ("MODIFIED", 6)]


async def test_wait_returns_at_once_when_already_queued_and_close_wakes() -> None:
    hub = WatchHub(0)
    watcher = hub.subscribe("configmaps", None, None, None)
    hub.publish("ADDED", "configmaps", _obj("a", 1), None)
    assert await watcher.wait(30) is True
    watcher.queue.get_nowait()
    sleeping = asyncio.create_task(watcher.wait(30))
    await asyncio.sleep(0)
    hub.close_all()
    assert await asyncio.wait_for(sleeping, 5) is True
    assert watcher.queue.get_nowait() is None  # the end-of-stream marker


async def test_other_resources_do_not_wake_a_watcher() -> None:
    hub = WatchHub(0)
    watcher = hub.subscribe("configmaps", None, None, None)
    hub.publish("ADDED", "pods", _obj("p", 1), None)
    assert await watcher.wait(0.01) is False
