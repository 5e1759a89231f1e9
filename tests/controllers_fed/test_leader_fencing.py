"""A deposed leader cannot undo the new leader's decisions.

* Real processes: two ``caldera controllers --leader-elect`` against one API; the leader is paused
  with SIGSTOP for longer than the lease, the other takes over within the lease duration (plus a
  margin), and after SIGCONT the old leader steps down without writing the Lease again.
* What the paused leader's controllers would send on waking is refused by the API itself:
  tests/apiserver/test_fencing.py (on SQLite and etcd).
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from federation.apiserver.server import ApiServer, ServerConfig
from tests.apiserver.helpers import request

REPO = Path(__file__).resolve().parents[2]
LEASE = "/apis/coordination.k8s.io/v1/namespaces/caldera-system/leases/caldera-controllers"
TIMING = ["--leader-elect-lease-duration", "3s", "--leader-elect-renew-deadline", "2s",
          "--leader-elect-retry-period", "0.4s"]


@pytest.fixture
def processes() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for proc in started:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGCONT)
            os.killpg(proc.pid, signal.SIGTERM)
    for proc in started:
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(5)


async def _holder(server: ApiServer) -> dict[str, Any]:
    code, lease = await request(server, "GET", LEASE)
    return lease["spec"] if code == 200 else {}


async def _until_holder(server: ApiServer, wanted: set[str], timeout: float) -> tuple[str, float]:
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        holder = (await _holder(server)).get("holderIdentity")
        if holder in wanted:
            return holder, time.monotonic() - start
        await asyncio.sleep(0.05)
    raise AssertionError(f"no holder among {wanted} after {timeout}s: {await _holder(server)}")


@pytest.mark.slow
async def test_a_paused_leader_is_replaced_and_steps_down(tmp_path: Path,
                                                          processes: list[subprocess.Popen[bytes]]) -> None:
    async with ApiServer(ServerConfig(data_dir=tmp_path / "api")) as server:
        kubeconfig = tmp_path / "admin.kubeconfig"
        kubeconfig.write_text(yaml.safe_dump(server.kubeconfig()))
        logs = {}
        for name in ("a", "b"):
            logs[name] = tmp_path / f"{name}.log"
            with open(logs[name], "wb") as out:
                processes.append(subprocess.Popen(
                    [sys.executable, "-m", "federation", "controllers", "--kubeconfig", str(kubeconfig),
                     "--leader-elect", "--leader-elect-identity", name, *TIMING],
                    cwd=REPO, stdout=out, stderr=subprocess.STDOUT, start_new_session=True))
        leader, _ = await _until_holder(server, {"a", "b"}, 60)
        other = "b" if leader == "a" else "a"
        paused = processes[0 if leader == "a" else 1]
        before = await _holder(server)
        os.killpg(paused.pid, signal.SIGSTOP)
        successor, took = await _until_holder(server, {other}, 3 + 5 + 10)
        assert successor == other and took <= 3 + 5 + 3, f"took over after {took:.1f}s"
        taken = await _holder(server)
        assert taken["leaseTransitions"] == before["leaseTransitions"] + 1
        await asyncio.sleep(1.0)  # paused longer than the lease (and the renew deadline)
        os.killpg(paused.pid, signal.SIGCONT)
        deadline = time.monotonic() + 15
        while "stepping down" not in logs[leader].read_text():
            assert time.monotonic() < deadline, logs[leader].read_text()[-2000:]
            await asyncio.sleep(0.1)
        for _ in range(10):  # a few retry periods later the Lease is still the successor's
            spec = await _holder(server)
            assert spec["holderIdentity"] == other and spec["leaseTransitions"] == taken["leaseTransitions"]
            await asyncio.sleep(0.2)
