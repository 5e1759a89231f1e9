"""Real ``caldera serve`` and ``caldera agent`` processes on loopback, and their clean end.

Every process is started in a new session (``start_new_session``), so it leads its own process
group: stopping one signals the whole group, and :func:`leftover_processes` can prove from
``/proc`` that nothing of a group survived. :class:`System` owns one federation and its agents;
``stop()`` is idempotent and is also registered with :mod:`atexit`, so an interrupted demo or a
failed test never leaves processes behind.

The federation listens on a port chosen here (not port 0) so that a restart after a crash comes
back on the same address and the agents' kubeconfigs stay valid.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Optional

SERVE_LISTENING = re.compile(r"listening on (https?://\S+)")
AGENT_LISTENING = re.compile(r"caldera agent \S+ listening on (http://\S+)")
KUBECONFIGS_WRITTEN = re.compile(r"agent kubeconfig for cluster (\S+):")


class StartupError(RuntimeError):
    """A process exited or stayed silent before announcing itself; carries its log tail."""


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


def _die_with_parent() -> None:
    """In the child before exec: SIGTERM when the parent dies (Linux prctl PR_SET_PDEATHSIG)."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG = 1


def _stat_fields(pid: int) -> Optional[list[str]]:
    """Fields of /proc/PID/stat after the command name (which may contain spaces)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text[text.rfind(")") + 2:].split()


def leftover_processes(groups: set[int]) -> list[int]:
    """Live (non-zombie) processes whose process group or session is one of ``groups``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        fields = _stat_fields(int(entry.name))
        if fields is None or fields[0] in ("Z", "X"):
            continue
        pgrp, session = int(fields[2]), int(fields[3])
        if pgrp in groups or session in groups:
            found.append(int(entry.name))
    return found


def wait_gone(groups: set[int], timeout: float = 5.0) -> list[int]:
    """Poll ``/proc`` until nothing of ``groups`` is alive (signals land asynchronously); what is left."""
    deadline = time.monotonic() + timeout
    while (left := leftover_processes(groups)) and time.monotonic() < deadline:
        time.sleep(0.02)
    return left


@dataclass
class ManagedProcess:
    """One child process in its own process group, its output in a log file."""

    name: str
    cmd: list[str]
    log_path: Path
    proc: Optional[subprocess.Popen[bytes]] = None
    groups: set[int] = field(default_factory=set)  # every group this slot ever led (restarts)
    stopped_on_purpose: bool = False  # stop() or kill() was called: its end is not a failure
    _log: Optional[IO[bytes]] = None
    _offset: int = 0

    def start(self) -> "ManagedProcess":
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log_path, "ab")  # noqa: SIM115 - closed in _reap
        self._offset = self._log.tell()
        self.stopped_on_purpose = False
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        # Die with the parent even if it is SIGKILLed (no atexit then). Only from the main thread:
        # the kernel ties the signal to the thread that forked.
        preexec = _die_with_parent if threading.current_thread() is threading.main_thread() else None
        self.proc = subprocess.Popen(self.cmd, stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     start_new_session=True, env=env, preexec_fn=preexec)
        self.groups.add(self.proc.pid)
        return self

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def output(self) -> str:
        """What this run of the process has written so far."""
        try:
            with open(self.log_path, "rb") as handle:
                handle.seek(self._offset)
                return handle.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def wait_for(self, pattern: re.Pattern[str], timeout: float) -> re.Match[str]:
        """Poll the log until ``pattern`` appears; fail early if the process exits."""
        deadline = time.monotonic() + timeout
        while True:
            match = pattern.search(self.output())
            if match:
                return match
            if not self.alive:
                raise StartupError(f"{self.name} exited with {self.proc.returncode if self.proc else '?'} "
                                   f"before it was ready:\n{self.tail()}")
            if time.monotonic() > deadline:
                raise StartupError(f"{self.name} was not ready within {timeout:.0f}s:\n{self.tail()}")
            time.sleep(0.05)

    def tail(self, lines: int = 20) -> str:
        return "\n".join(self.output().splitlines()[-lines:])

    def _signal_group(self, sig: int) -> None:
        if self.proc is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, sig)

    def stop(self, timeout: float = 10.0) -> Optional[int]:
        """SIGTERM the group, SIGKILL it after ``timeout``; returns the leader's exit code."""
        if self.proc is None:
            return None
        self.stopped_on_purpose = True
        if self.proc.poll() is None:
            self._signal_group(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self._signal_group(signal.SIGKILL)
                self.proc.wait(10)
        return self._reap()

    def kill(self) -> Optional[int]:
        """SIGKILL the group at once (a crash, as the failure tests want it)."""
        if self.proc is None:
            return None
        self.stopped_on_purpose = True
        self._signal_group(signal.SIGKILL)
        self.proc.wait(10)
        return self._reap()

    def _reap(self) -> Optional[int]:
        assert self.proc is not None
        code = self.proc.returncode
        # anything the leader left behind in its group goes too, and is waited for
        if leftover_processes({self.proc.pid}):
            self._signal_group(signal.SIGKILL)
            wait_gone({self.proc.pid})
        if self._log is not None:
            self._log.close()
            self._log = None
        return code


@dataclass
class ClusterSpec:
    """One member cluster of the demo: its name and its sim cluster file."""

    name: str
    sim_file: Path
    agent_args: list[str] = field(default_factory=list)  # extra flags for this cluster's agent only


@dataclass
class System:
    """A federation and one sim agent per member cluster, under ``data_dir``."""

    data_dir: Path
    clusters: list[ClusterSpec]
    speed: float = 10.0
    serve_args: list[str] = field(default_factory=list)
    agent_args: list[str] = field(default_factory=list)
    startup_timeout: float = 60.0
    port: int = 0
    url: str = ""
    federation: Optional[ManagedProcess] = None
    agents: dict[str, ManagedProcess] = field(default_factory=dict)
    _registered: bool = False

    @property
    def log_dir(self) -> Path:
        return self.data_dir / "logs"

    @property
    def kubeconfig(self) -> Path:
        return self.data_dir / "admin.kubeconfig"

    def agent_kubeconfig(self, cluster: str) -> Path:
        return self.data_dir / f"agent-{cluster}.kubeconfig"

    def _register(self) -> None:
        if not self._registered:
            atexit.register(self.stop)
            self._registered = True

    # -- federation --------------------------------------------------------------------
    def start_federation(self) -> ManagedProcess:
        """Start (or restart, on the same port) ``caldera serve``; returns when it listens."""
        self._register()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        if not self.port:
            self.port = free_port()
        cmd = [sys.executable, "-m", "federation", "serve", "--data-dir", str(self.data_dir),
               "--listen", f"127.0.0.1:{self.port}", *self.serve_args]
        for spec in self.clusters:
            if not self.agent_kubeconfig(spec.name).exists():
                cmd += ["--agent-token", spec.name]
        if self.federation is None:
            self.federation = ManagedProcess("caldera serve", cmd, self.log_dir / "serve.log")
        else:
            self.federation.cmd = cmd
        self.federation.start()
        self.url = self.federation.wait_for(SERVE_LISTENING, self.startup_timeout).group(1)
        for spec in self.clusters:  # written just before the listening line; checked, not assumed
            if not self.agent_kubeconfig(spec.name).exists():
                raise StartupError(f"caldera serve did not write {self.agent_kubeconfig(spec.name)}")
        return self.federation

    # -- agents ------------------------------------------------------------------------
    def start_agent(self, name: str) -> ManagedProcess:
        spec = next((c for c in self.clusters if c.name == name), None)
        if spec is None:
            raise KeyError(f"no member cluster {name!r} in this system")
        self._register()
        cmd = [sys.executable, "-m", "member_agent", "agent", "--cluster", spec.name,
               "--kubeconfig", str(self.agent_kubeconfig(spec.name)), "--sim", str(spec.sim_file),
               "--speed", f"{self.speed:g}", "--listen", "127.0.0.1:0", *self.agent_args, *spec.agent_args]
        slot = self.agents.get(name)
        if slot is None:
            slot = self.agents[name] = ManagedProcess(f"caldera agent {name}", cmd, self.log_dir / f"agent-{name}.log")
        slot.cmd = cmd
        slot.start()
        return slot

    def start(self) -> "System":
        """Federation first (agents need its kubeconfigs), then every agent, in parallel."""
        self.start_federation()
        for spec in self.clusters:
            self.start_agent(spec.name)
        for slot in self.agents.values():
            slot.wait_for(AGENT_LISTENING, self.startup_timeout)
        return self

    # -- the end -----------------------------------------------------------------------
    def processes(self) -> list[ManagedProcess]:
        return [p for p in [*self.agents.values(), self.federation] if p is not None]

    def unexpected_exits(self) -> list[str]:
        """Processes that ended without stop()/kill(): their name, exit code and last log lines."""
        return [f"{p.name} exited with {p.proc.returncode if p.proc else '?'}:\n{p.tail()}"
                for p in self.processes() if not p.alive and not p.stopped_on_purpose]

    def groups(self) -> set[int]:
        return {g for p in self.processes() for g in p.groups}

    def stop(self, timeout: float = 10.0) -> dict[str, Optional[int]]:
        """SIGTERM every group at once, then wait for each (SIGKILL stragglers). Safe to call twice."""
        codes: dict[str, Optional[int]] = {}
        live = [p for p in self.processes() if p.alive]
        for proc in live:  # signal all at once, then wait: shutdown in parallel
            proc._signal_group(signal.SIGTERM)
        for proc in self.processes():
            codes[proc.name] = proc.stop(timeout)
        for pid in leftover_processes(self.groups()):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        wait_gone(self.groups())
        return codes
