"""etcd members as real processes on loopback (free ports, a temp data dir), for tests and e2e.

``etcd`` (3.4+) comes from Debian's ``etcd-server`` package; without it, :func:`require_etcd`
skips the test and says so.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ETCD = shutil.which("etcd")


def require_etcd() -> str:
    if ETCD is None:
        pytest.skip("etcd is not installed (Debian package etcd-server); the etcd backend tests need it")
    return ETCD


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class EtcdMember:
    name: str
    data_dir: Path
    client_port: int = field(default_factory=free_port)
    peer_port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None
    #: more etcd flags (e.g. ``--quota-backend-bytes=...``)
    extra_args: list[str] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.client_port}"

    @property
    def peer_url(self) -> str:
        return f"http://127.0.0.1:{self.peer_port}"

    def start(self, initial_cluster: str, state: str = "new") -> None:
        binary = require_etcd()
        log = open(self.data_dir.parent / f"{self.name}.log", "ab")  # noqa: SIM115 (the process owns it)
        self.process = subprocess.Popen(
            [binary, "--name", self.name, "--data-dir", str(self.data_dir),
             "--listen-client-urls", self.url, "--advertise-client-urls", self.url,
             "--listen-peer-urls", self.peer_url, "--initial-advertise-peer-urls", self.peer_url,
             "--initial-cluster", initial_cluster, "--initial-cluster-state", state,
             "--initial-cluster-token", "caldera-test", *self.extra_args],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()

    def signal(self, sig: int) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, sig)

    def kill(self) -> None:
        self.signal(signal.SIGKILL)
        if self.process is not None:
            self.process.wait(10)

    def healthy(self) -> bool:
        try:
            with urllib.request.urlopen(self.url + "/health", timeout=1) as resp:  # noqa: S310 (loopback)
                return b'"true"' in resp.read()
        except urllib.error.HTTPError as exc:  # 503 while there is no leader: the error holds the socket
            exc.close()
            return False
        except OSError:
            return False


class EtcdCluster:
    """``size`` members of one etcd cluster; ``start()`` waits until every member reports healthy."""

    def __init__(self, root: Path, size: int = 1, extra_args: list[str] | None = None) -> None:
        root.mkdir(parents=True, exist_ok=True)
        self.members = [EtcdMember(f"m{i}", root / f"m{i}.etcd", extra_args=list(extra_args or []))
                        for i in range(size)]
        self.initial = ",".join(f"{m.name}={m.peer_url}" for m in self.members)

    @property
    def urls(self) -> list[str]:
        return [m.url for m in self.members]

    def start(self, timeout: float = 30.0) -> EtcdCluster:
        for member in self.members:
            member.start(self.initial)
        self.wait_healthy(timeout)
        return self

    def restart(self, member: EtcdMember) -> None:
        member.start(self.initial, state="existing")

    def wait_healthy(self, timeout: float = 30.0, members: list[EtcdMember] | None = None) -> None:
        deadline = time.monotonic() + timeout
        pending = list(members or self.members)
        while pending:
            pending = [m for m in pending if not m.healthy()]
            if not pending:
                return
            for m in pending:
                if m.process is not None and m.process.poll() is not None:
                    raise RuntimeError(f"etcd {m.name} exited: see {m.data_dir.parent / (m.name + '.log')}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"etcd members {[m.name for m in pending]} not healthy after {timeout}s")
            time.sleep(0.1)

    def stop(self) -> None:
        for member in self.members:
            member.signal(signal.SIGTERM)
        for member in self.members:
            if member.process is not None:
                try:
                    member.process.wait(10)
                except subprocess.TimeoutExpired:
                    member.kill()
