"""A full disk under the SQLite store: the API answers with the cause, keeps serving reads, and takes
writes again once space is freed, with no restart.

The data directory is a small tmpfs this test mounts (and always unmounts); where ``mount`` is not
permitted the test skips and says so. The disk is filled with a file, writes then fail; the file is
removed, and writes come back by themselves.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sqlite3
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from federation.apiserver.server import ApiServer, ServerConfig
from federation.apiserver.store import Store
from tests.apiserver.helpers import request

CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
DISK_FULL = "database or disk is full"


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 3 MiB tmpfs mounted on a fresh directory, unmounted afterwards whatever happens."""
    mount_point = tmp_path / "disk"
    mount_point.mkdir()
    try:
        run = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(mount_point)],
                             capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        pytest.skip(f"cannot run mount to make a small disk: {exc}")
    if run.returncode != 0:
        pytest.skip(f"mounting a tmpfs is not permitted here (needs root): {run.stderr.strip()}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], capture_output=True, timeout=30, check=False)


def fill(directory: Path) -> Path:
    """Write a file until the disk has no space left."""
    filler = directory / "filler"
    chunk = b"\0" * 65536
    with open(filler, "wb", buffering=0) as handle:
        for size in (65536, 4096, 512):
            with contextlib.suppress(OSError):
                while True:
                    written = handle.write(chunk[:size])
                    if not written:
                        break
    assert os.statvfs(directory).f_bavail == 0, "the disk was not filled"
    return filler


def configmap(name: str, size: int = 2000) -> str:
    return json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
                       "data": {"payload": "x" * size}})


async def create(server: ApiServer, name: str) -> tuple[int, Any]:
    return await request(server, "POST", CONFIGMAPS, body=configmap(name))


async def names(server: ApiServer) -> set[str]:
    code, body = await request(server, "GET", CONFIGMAPS)
    assert code == 200, body
    return {item["metadata"]["name"] for item in body["items"]}


async def watch_events(server: ApiServer, since: str, seen: list[tuple[str, str, str]]) -> None:
    headers = {"Authorization": f"Bearer {server.admin_token}"}
    url = f"{server.url}{CONFIGMAPS}?watch=1&resourceVersion={since}&timeoutSeconds=60"
    async with aiohttp.ClientSession() as session, session.get(url, headers=headers) as resp:
        async for line in resp.content:
            event = json.loads(line)
            meta = event["object"]["metadata"]
            seen.append((event["type"], meta.get("name", ""), meta.get("resourceVersion", "")))


async def until(check: Any, timeout: float, what: str) -> Any:
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        result = await check()
        if result:
            return result
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(0.05)


async def failed_commits(server: ApiServer) -> float:
    code, text = await request(server, "GET", "/metrics")
    assert code == 200
    for line in str(text).splitlines():
        if line.startswith("apiserver_storage_failed_commits_total "):
            return float(line.split()[1])
    raise AssertionError("apiserver_storage_failed_commits_total is not exposed")


async def test_full_disk_answers_its_cause_serves_reads_and_recovers_without_restart(small_disk: Path) -> None:
    acked: set[str] = set()
    refused: set[str] = set()
    seen: list[tuple[str, str, str]] = []
    async with ApiServer(ServerConfig(data_dir=small_disk)) as server:
        for i in range(5):
            code, body = await create(server, f"before-{i}")
            assert code == 201, body
            acked.add(f"before-{i}")
        start_rv = str(server.store.rv)
        watch = asyncio.create_task(watch_events(server, start_rv, seen))
        filler = fill(small_disk)

        # several writers at once: one group commit fails, all of them are undone and refused
        wanted = [f"full-{i}-{uuid.uuid4().hex[:4]}" for i in range(6)]
        results = await asyncio.gather(*(create(server, name) for name in wanted))
        for name, (code, body) in zip(wanted, results, strict=True):
            if code == 201:
                acked.add(name)
                continue
            assert code == 500, body
            assert DISK_FULL in body["message"] and body["kind"] == "Status", body
            refused.add(name)
        assert refused, "no write failed on a full disk"
        assert server.store.failure is not None
        code, body = await create(server, "while-full")
        assert code == 500 and DISK_FULL in body["message"], body  # refused at once, with the cause
        refused.add("while-full")

        assert await names(server) == acked  # reads are served and show only what is on disk
        code, body = await request(server, "GET", f"{CONFIGMAPS}/before-0")
        assert code == 200, body
        code, body = await request(server, "GET", "/readyz")
        assert code == 503 and DISK_FULL in body["message"] and "writes" in body["message"], body
        assert await failed_commits(server) >= 1

        filler.unlink()  # space again: the store probes and takes writes with no restart
        await until(lambda: _ready(server), 10, "/readyz once space is freed")
        code, body = await create(server, "after")
        assert code == 201, body
        acked.add("after")
        assert await names(server) == acked
        await until(lambda: _has(seen, "after"), 10, "the watch to deliver the write after recovery")
        watch.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watch
        added = [name for type_, name, _ in seen if type_ == "ADDED"]
        assert set(added) == acked - {f"before-{i}" for i in range(5)}, seen  # no event for an undone write
        rvs = [int(rv) for _, _, rv in seen]
        assert rvs == sorted(rvs) and len(set(rvs)) == len(rvs), seen

    store = Store(small_disk / "caldera.db")  # nothing lost, nothing half-written
    try:
        assert {o["metadata"]["name"] for o in store.list("configmaps", "default")} == acked
        assert not acked & refused
    finally:
        store.close()
    with contextlib.closing(sqlite3.connect(small_disk / "caldera.db")) as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)


async def _ready(server: ApiServer) -> bool:
    code, _ = await request(server, "GET", "/readyz")
    return code == 200


async def _has(seen: list[tuple[str, str, str]], name: str) -> bool:
    return any(n == name for _, n, _ in seen)
