"""``caldera serve`` elects a leader by default wherever the store is shared, and a leader that missed its
renew deadline stops saying it leads before it answers anything else.

* ``--leader-elect`` defaults to true with ``--etcd-servers`` and to false on the embedded SQLite.
* Two real ``caldera serve --etcd-servers`` replicas started with no leader-election flag but an identity
  (and short lease timings) elect one leader.
* A leader paused (SIGSTOP) past its renew deadline and the lease, then resumed (SIGCONT): the very first
  answers it gives (a metrics scrape and ``/status``, both sent while it was still stopped) no longer
  call it leader, and at no poll do both replicas report leading.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml

from federation import metrics
from federation.cli import serve
from federation.controllers.leader_election import ElectionConfig, LeaderElector
from federation.status_api import controller_leader
from tests.controllers_fed.test_leader_election import NoApi
from tests.etcd_process import EtcdCluster, require_etcd

LISTENING = re.compile(r"listening on (https?://\S+)")
#: shorter than kube-controller-manager's 15s/10s/2s so the pause is short; long enough for 2 loaded cores
TIMING = ["--leader-elect-lease-duration", "8s", "--leader-elect-renew-deadline", "6s",
          "--leader-elect-retry-period", "1s"]


def _serve_args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    serve.register(parser)
    return parser.parse_args(list(argv))


@pytest.mark.parametrize(("argv", "elects"), [
    ([], False),  # the embedded SQLite: one process owns the file
    (["--etcd-servers", "http://127.0.0.1:2379"], True),  # a shared store: kube-controller-manager's default
    (["--etcd-servers", "http://127.0.0.1:2379", "--leader-elect=false"], False),
    (["--leader-elect"], True),
    (["--leader-elect=true"], True),
])
def test_leader_elect_defaults_to_true_on_a_shared_store(argv: list[str], elects: bool) -> None:
    assert serve.leader_elect_default(_serve_args(*argv)) is elects


def test_a_leader_past_its_renew_deadline_stops_reporting_itself_at_once() -> None:
    now = [100.0]
    # this process's only candidate: electors of other tests in this worker leave their gauge children
    metrics.LEADER.clear()
    config = ElectionConfig(identity="paused-replica", lease_duration=3, renew_deadline=2, retry_period=0.4,
                            clock=lambda: now[0])
    elector = LeaderElector(NoApi(), config)
    elector._won(now[0])
    elector._set_leading(True)
    lease = {"metadata": {"name": "caldera-controllers"},
             "spec": {"holderIdentity": "paused-replica", "renewTime": "2026-01-01T00:00:00.000000Z",
                      "leaseDurationSeconds": 3}}
    fresh = datetime(2026, 1, 1, 0, 0, 1, tzinfo=UTC)
    assert metrics.leader_states("caldera-controllers")["paused-replica"] is True
    assert controller_leader([lease], fresh, metrics.leader_states("caldera-controllers"))["leader"] == "paused-replica"
    now[0] += 2.5  # SIGSTOP .. SIGCONT: the campaign loop has not run since
    assert elector.is_leader, "the loop has not noticed yet"
    assert metrics.leader_states("caldera-controllers")["paused-replica"] is False, "the scrape judges the deadline"
    status = controller_leader([lease], fresh, metrics.leader_states("caldera-controllers"))
    assert status["leader"] is None and status["candidates"] == {"paused-replica": False}
    elector._set_leading(False)


@pytest.fixture
def etcd(tmp_path: Path) -> Iterator[EtcdCluster]:
    require_etcd()
    cluster = EtcdCluster(tmp_path / "etcd").start()
    yield cluster
    cluster.stop()


class Replica:
    def __init__(self, root: Path, index: int, etcd_url: str) -> None:
        self.identity = f"replica-{index}"
        self.log = root / f"{self.identity}.log"
        self.data_dir = root / self.identity
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "federation", "serve", "--plain-http", "--listen", "127.0.0.1:0",
                 "--data-dir", str(self.data_dir), "--etcd-servers", etcd_url,
                 "--etcd-compaction-interval", "0", "--leader-elect-identity", self.identity, *TIMING],
                stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                env={**os.environ, "PYTHONUNBUFFERED": "1"})
        self.url = ""

    def wait_listening(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            match = LISTENING.search(self.log.read_text(errors="replace"))
            if match:
                self.url = match.group(1)
                return
            assert self.proc.poll() is None, self.log.read_text()
            time.sleep(0.1)
        raise AssertionError(f"{self.identity} did not start: {self.log.read_text()}")

    def signal(self, sig: int) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, sig)

    async def leading(self, timeout: float = 15.0) -> bool | None:
        """``leader_election_master_status`` of this replica (None: it never campaigned)."""
        async with aiohttp.ClientSession() as session, session.get(
                self.url + "/metrics", timeout=aiohttp.ClientTimeout(total=timeout)) as resp:
            text = await resp.text()
        for line in text.splitlines():
            if line.startswith("leader_election_master_status{") and f'identity="{self.identity}"' in line:
                return float(line.rsplit(" ", 1)[1]) == 1.0
        return None

    async def status(self, timeout: float = 15.0) -> dict[str, Any]:
        config = yaml.safe_load((self.data_dir / "admin.kubeconfig").read_text())
        headers = {"Authorization": f"Bearer {config['users'][0]['user']['token']}"}
        async with aiohttp.ClientSession() as session, session.get(
                self.url + "/status", headers=headers, timeout=aiohttp.ClientTimeout(total=timeout)) as resp:
            body = await resp.json()
            assert resp.status == 200, body
            return dict(body["controllers"])


@pytest.fixture
def replicas(etcd: EtcdCluster, tmp_path: Path) -> Iterator[list[Replica]]:
    started = [Replica(tmp_path, i, etcd.urls[0]) for i in range(2)]
    try:
        for replica in started:
            replica.wait_listening()
        yield started
    finally:
        for replica in started:
            replica.signal(signal.SIGCONT)
            replica.signal(signal.SIGTERM)
        for replica in started:
            try:
                replica.proc.wait(15)
            except subprocess.TimeoutExpired:
                replica.signal(signal.SIGKILL)
                replica.proc.wait(5)


async def _one_leader(replicas: list[Replica]) -> Replica | None:
    # both asked at once: asked one after the other, a slow scrape of the first could straddle a
    # legitimate hand-over and show the old and the new leader as if they overlapped
    states = list(await asyncio.gather(*(r.leading() for r in replicas)))
    assert states.count(True) <= 1, f"two leaders: {states}"
    return replicas[states.index(True)] if states.count(True) == 1 and None not in states else None


async def _reports(replica: Replica, leader: str) -> bool:
    return (await replica.status())["leader"] == leader


async def _until(check: Any, timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = await check()
        if result:
            return result
        await asyncio.sleep(0.5)  # two /metrics scrapes per poll: leave the loaded replicas time to renew
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


@pytest.mark.slow
async def test_two_etcd_replicas_with_default_flags_elect_one_leader_and_a_paused_one_never_lingers(
        replicas: list[Replica]) -> None:
    leader = await _until(lambda: _one_leader(replicas), 30, "one leader among two replicas with default flags")
    other = next(r for r in replicas if r is not leader)
    for replica in replicas:
        await _until(lambda r=replica: _reports(r, leader.identity), 10, f"{replica.identity}'s /status")

    leader.signal(signal.SIGSTOP)
    try:
        await _until(other.leading, 40, "the other replica to take over from the paused leader (8s lease)")
        # asked while the old leader is still stopped: its first answers after SIGCONT are these
        scrape = asyncio.create_task(leader.leading(timeout=20))
        status = asyncio.create_task(leader.status(timeout=20))
        await asyncio.sleep(0.3)  # the scenario: the requests wait in the stopped process's socket
        assert not scrape.done() and not status.done()
    finally:
        leader.signal(signal.SIGCONT)
    assert await scrape is False, "the resumed leader's first metrics scrape still said it leads"
    first = await status
    assert first["leader"] != leader.identity and first["candidates"] == {leader.identity: False}, first
    for _ in range(6):  # a few of the new leader's renewals: never two leaders at one poll
        await _one_leader(replicas)
        await asyncio.sleep(0.5)
    await _until(lambda: _logged_step_down(leader), 30, f"{leader.identity}'s loop to step down")


async def _logged_step_down(replica: Replica) -> bool:
    text = replica.log.read_text(errors="replace")
    return "stepping down" in text or "lost Lease" in text
