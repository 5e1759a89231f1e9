"""Crash safety: SIGKILL ``caldera serve`` in the middle of a burst of creates, restart it on the
same data directory, and check that every object acknowledged with a 2xx is there, unchanged.

Writers keep going while the server dies, so the kill lands between (or inside) commits at a
random point. Objects that never got an answer may or may not exist; objects that did must be
byte-for-byte what the server answered, and the resourceVersion must never go backwards.
"""

from __future__ import annotations

import asyncio
import copy
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest
import yaml

from tests.apiserver.serve_process import ServeProcess

pytestmark = pytest.mark.slow
SEED = Path(__file__).resolve().parents[1] / "data" / "seed"
JOBS = "/apis/batch.volcano.sh/v1alpha1/namespaces/default/jobs"
QUEUES = "/apis/scheduling.volcano.sh/v1beta1/queues"
WRITERS = 12
ROUNDS = 3
#: acknowledged writes before the kill; writers continue until the connection drops
KILL_AFTER = 120


def _job(name: str) -> dict[str, Any]:
    job: dict[str, Any] = yaml.safe_load((SEED / "job-gpu-training.yaml").read_text())
    job["metadata"] = {"name": name, "labels": {"burst": "crash"}, "annotations": {"writer": name}}
    job["spec"]["queue"] = "default"
    return job


def _queue(name: str) -> dict[str, Any]:
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": name},
            "spec": {"weight": 2, "capability": {"cpu": "8", "nvidia.com/gpu": "4"}, "reclaimable": True}}


def _token(proc: ServeProcess) -> str:
    config: Any = proc.kubeconfig_dict()
    return str(config["users"][0]["user"]["token"])


async def _burst(proc: ServeProcess, acked: dict[str, dict[str, Any]], in_flight: set[str], prefix: str) -> int:
    """Create (and patch) objects from many writers; SIGKILL the server once KILL_AFTER writes were
    acknowledged. ``acked`` holds each object's last acknowledged state, ``in_flight`` the objects
    a write was pending on when the server died."""
    headers = {"Authorization": f"Bearer {_token(proc)}", "Content-Type": "application/json"}
    patch_headers = dict(headers, **{"Content-Type": "application/merge-patch+json"})
    killed = asyncio.Event()
    failures = 0
    writes = 0

    async def writer(index: int, session: aiohttp.ClientSession) -> None:
        nonlocal failures, writes
        serial = 0
        last_job = ""
        while True:
            serial += 1
            name = f"{prefix}-{index}-{serial}"
            if serial % 3 == 0 and last_job:  # update an acknowledged Job of ours
                key, method, hdrs = last_job, "PATCH", patch_headers
                body: Any = {"metadata": {"labels": {"step": str(serial)}}}
            elif serial % 4 == 0:
                key, method, hdrs, body = f"{QUEUES}/{name}", "POST", headers, _queue(name)
            else:
                key, method, hdrs, body = f"{JOBS}/{name}", "POST", headers, _job(name)
            url = proc.url + (key if method == "PATCH" else key.rsplit("/", 1)[0])
            in_flight.add(key)
            try:
                async with session.request(method, url, data=orjson.dumps(body), headers=hdrs) as resp:
                    payload = await resp.read()
                    if resp.status not in (200, 201):
                        raise AssertionError(f"{method} {key}: {resp.status} {payload[:300]!r}")
            except (TimeoutError, aiohttp.ClientError, ConnectionError):
                failures += 1
                if killed.is_set():
                    return
                raise
            in_flight.discard(key)
            acked[key] = orjson.loads(payload)
            if key.startswith(JOBS):
                last_job = key
            writes += 1
            if writes >= KILL_AFTER and not killed.is_set():
                killed.set()
                proc.kill()

    timeout = aiohttp.ClientTimeout(total=30)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        await asyncio.gather(*(writer(i, session) for i in range(WRITERS)))
    return failures


async def _read_back(proc: ServeProcess, keys: list[str]) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {_token(proc)}"}
    found: dict[str, Any] = {}
    async with aiohttp.ClientSession() as session:
        for key in keys:
            async with session.get(proc.url + key, headers=headers) as resp:
                found[key] = (resp.status, await resp.read())
    return found


async def _verify(proc: ServeProcess, acked: dict[str, dict[str, Any]], in_flight: set[str]) -> None:
    """Every acknowledged object is there as answered (an update in flight may have landed too)."""
    found = await _read_back(proc, sorted(acked))
    missing = [key for key, (code, _) in found.items() if code != 200]
    assert not missing, f"{len(missing)} acknowledged objects lost: {missing[:5]}"
    for key, (_, raw) in found.items():
        stored = orjson.loads(raw)
        answered = copy.deepcopy(acked[key])
        assert orjson.dumps(stored["spec"], option=orjson.OPT_SORT_KEYS) == \
            orjson.dumps(answered["spec"], option=orjson.OPT_SORT_KEYS), key
        acked[key] = copy.deepcopy(stored)  # what later rounds must keep
        if stored["metadata"]["resourceVersion"] != answered["metadata"]["resourceVersion"]:
            # only an update in flight at the kill may have landed without its answer
            assert key in in_flight, f"{key} changed across the crash"
            assert int(stored["metadata"]["resourceVersion"]) > int(answered["metadata"]["resourceVersion"])
            stored["metadata"]["resourceVersion"] = answered["metadata"]["resourceVersion"]
            stored["metadata"]["labels"].pop("step", None)
            answered["metadata"]["labels"].pop("step", None)
        assert stored == answered, f"{key} changed across the crash"
    in_flight.clear()


async def test_sigkill_mid_burst_keeps_every_acknowledged_object(tmp_path: Path) -> None:
    """Three rounds of burst, SIGKILL, restart on the same data dir, check everything so far."""
    data_dir = tmp_path / "data"
    acked: dict[str, dict[str, Any]] = {}
    in_flight: set[str] = set()
    for round_ in range(ROUNDS):
        proc = ServeProcess(data_dir, "--plain-http").start()
        try:
            if round_:
                await _verify(proc, acked, in_flight)
            before = len(acked)
            failures = await _burst(proc, acked, in_flight, f"r{round_}")
        finally:
            proc.kill()
        assert proc.proc is not None and proc.proc.returncode == -9, "the server died of SIGKILL"
        assert len(acked) - before >= KILL_AFTER * 0.6
        assert failures >= 1, "writers were still sending when the server died"
    assert any(obj["metadata"].get("labels", {}).get("step") for obj in acked.values()), "updates were acknowledged"

    second = ServeProcess(data_dir, "--plain-http").start()
    try:
        await _verify(second, acked, in_flight)
        # the resourceVersion counter survived: a new write is newer than everything acknowledged
        newest = max(int(obj["metadata"]["resourceVersion"]) for obj in acked.values())
        headers = {"Authorization": f"Bearer {_token(second)}", "Content-Type": "application/json"}
        async with aiohttp.ClientSession() as session, session.post(
                second.url + JOBS, data=orjson.dumps(_job("after-restart")), headers=headers) as resp:
            assert resp.status == 201, await resp.text()
            after = await resp.json()
        assert int(after["metadata"]["resourceVersion"]) > newest
        uids = {obj["metadata"]["uid"] for obj in acked.values()}
        assert after["metadata"]["uid"] not in uids and len(uids) == len(acked)
    finally:
        assert second.stop() == 0
