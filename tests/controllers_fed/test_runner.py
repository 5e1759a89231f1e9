"""The informer relists on 410 and reports what vanished meanwhile; the work queue collapses keys."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from federation.apiserver.server import ApiServer, ServerConfig
from federation.client import ResourceClient, api_client_from_dict
from federation.controllers.runner import Informer, WorkQueue
from policies.kinds import lookup
from tests.controllers_fed.conftest import until

CONFIG_MAPS = lookup("v1", "ConfigMap")


def cm(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"},
            "data": {"k": name}}


async def test_informer_follows_watch_and_relists_after_410(tmp_path: Path) -> None:
    config = ServerConfig(data_dir=tmp_path, watch_history=5)
    async with ApiServer(config) as server, api_client_from_dict(server.kubeconfig()) as api:
        rc = ResourceClient(api, 10.0)
        seen: list[tuple[str, str]] = []
        informer = Informer(rc, CONFIG_MAPS, lambda kind, obj, _old: seen.append((kind, obj["metadata"]["name"])),
                            watch_timeout=5, backoff=0.05)
        await rc.create(CONFIG_MAPS, cm("before"), "default")
        stop = asyncio.Event()
        task = asyncio.create_task(informer.run(stop))
        await until(lambda: _true(informer.synced.is_set()), "the first list")
        assert ("ADDED", "before") in seen
        await rc.create(CONFIG_MAPS, cm("live"), "default")
        await until(lambda: _true(informer.get("default", "live") is not None), "the watched ADDED")
        # stop watching, then change more than the server's watch history holds
        stop.set()
        await asyncio.wait_for(task, 10)
        await rc.delete(CONFIG_MAPS, "before", "default")
        for i in range(8):
            await rc.create(CONFIG_MAPS, cm(f"burst-{i}"), "default")
        seen.clear()
        stop = asyncio.Event()
        informer.synced.clear()
        task = asyncio.create_task(informer.run(stop))  # relists: the cache is diffed, not dropped
        await until(lambda: _true(informer.get("default", "burst-7") is not None), "the relisted objects")
        assert ("DELETED", "before") in seen
        assert ("ADDED", "burst-0") in seen and ("ADDED", "live") not in seen
        stop.set()
        await asyncio.wait_for(task, 10)


async def _true(value: bool) -> bool:
    return value


async def test_work_queue_collapses_and_delays() -> None:
    queue = WorkQueue()
    queue.add("a")
    queue.add("a")
    queue.add("b", delay=0.05)
    assert len(queue) == 1
    key = await queue.get()
    queue.add("a")  # while active: handled again after done()
    queue.done(key)
    assert await asyncio.wait_for(queue.get(), 1) == "a"
    queue.done("a")
    assert await asyncio.wait_for(queue.get(), 1) == "b"
