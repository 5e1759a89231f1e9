"""One member agent in a network namespace of its own, whose link to the federation a test can cut.

:class:`Partition` creates a namespace and a veth pair (a private /30; addresses only on the pair it
made), a relay on each side (``e2e.netns_relay``: the agent keeps talking to the federation's
loopback address, so its kubeconfig and TLS checks are unchanged), starts the agent inside the
namespace (``ip netns exec``) and a sampler beside it (``e2e.netns_sampler``). ``cut()`` takes the
veth pair down, ``heal()`` brings it up. ``close()`` removes everything, also after a failure.
:func:`unavailable` says why ``ip netns`` cannot be used here (the tests skip with that reason).
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Optional

from federation.demo.processes import AGENT_LISTENING, ManagedProcess, System, free_port

REPO = Path(__file__).resolve().parents[1]


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", *args], capture_output=True, text=True, timeout=20, check=check)


def unavailable() -> Optional[str]:
    """None when this process may create network namespaces, else why not."""
    if shutil.which("ip") is None:
        return "the ip command (iproute2) is not installed"
    if os.geteuid() != 0:
        return "creating network namespaces needs root"
    name = f"c31probe{os.getpid()}"
    made = _ip("netns", "add", name, check=False)
    if made.returncode != 0:
        return f"ip netns add is not permitted here: {made.stderr.strip()}"
    _ip("netns", "del", name, check=False)
    return None


class Partition:
    def __init__(self, system: System, cluster: str, samples: Path, period: float = 0.25) -> None:
        tag = f"{os.getpid() % 10000}{random.randrange(100, 999)}"
        self.system, self.cluster, self.samples, self.period = system, cluster, samples, period
        self.netns = f"c31-{tag}"
        self.outer, self.inner = f"c31o{tag}", f"c31i{tag}"
        octet = random.randrange(1, 250)
        self.outer_ip, self.inner_ip = f"10.231.{octet}.1", f"10.231.{octet}.2"
        self.procs: list[subprocess.Popen[str]] = []
        self.made_netns = self.made_link = False
        #: the agent's /status port: a restarted agent listens on it again, so the one sampler
        #: keeps one timeline (not answering while the agent is down)
        self.listen = 0

    # ------------------------------------------------------------------ setup
    def open(self) -> None:
        _ip("netns", "add", self.netns)
        self.made_netns = True
        _ip("link", "add", self.outer, "type", "veth", "peer", "name", self.inner)
        self.made_link = True
        _ip("link", "set", self.inner, "netns", self.netns)
        _ip("addr", "add", f"{self.outer_ip}/30", "dev", self.outer)
        _ip("link", "set", self.outer, "up")
        for args in (("addr", "add", f"{self.inner_ip}/30", "dev", self.inner), ("link", "set", self.inner, "up"),
                     ("link", "set", "lo", "up")):
            _ip("-n", self.netns, *args)
        port = self.system.port
        relay_port = free_port()
        self._spawn([sys.executable, "-m", "e2e.netns_relay", f"{self.outer_ip}:{relay_port}", f"127.0.0.1:{port}"])
        self._spawn(["ip", "netns", "exec", self.netns, sys.executable, "-m", "e2e.netns_relay",
                     f"127.0.0.1:{port}", f"{self.outer_ip}:{relay_port}"])

    def _spawn(self, cmd: list[str], out: Optional[Path] = None) -> subprocess.Popen[str]:
        with open(out or self.samples.parent / f"{self.netns}-{len(self.procs)}.log", "w", encoding="utf-8") as log:
            proc = subprocess.Popen(cmd, cwd=REPO, stdout=log, stderr=subprocess.STDOUT, text=True,
                                    start_new_session=True, env={**os.environ, "PYTHONPATH": str(REPO)})
        self.procs.append(proc)
        return proc

    def start_agent(self) -> ManagedProcess:
        """Start (or restart, on the same /status port) the cluster's agent inside the namespace, as
        one of the System's agents (stopped with it); the first start also starts its sampler."""
        system = self.system
        spec = next(c for c in system.clusters if c.name == self.cluster)
        first = not self.listen
        listen = self.listen = self.listen or free_port()
        cmd = ["ip", "netns", "exec", self.netns, sys.executable, "-m", "member_agent", "agent",
               "--cluster", spec.name, "--kubeconfig", str(system.agent_kubeconfig(spec.name)),
               "--sim", str(spec.sim_file), "--speed", f"{system.speed:g}", "--listen", f"127.0.0.1:{listen}",
               *system.agent_args, *spec.agent_args]
        slot = system.agents.get(spec.name)
        if slot is None:
            slot = system.agents[spec.name] = ManagedProcess(f"caldera agent {spec.name}", cmd,
                                                             system.log_dir / f"agent-{spec.name}.log")
        slot.cmd = cmd
        slot.start()
        slot.wait_for(AGENT_LISTENING, system.startup_timeout)
        if first:
            self._spawn(["ip", "netns", "exec", self.netns, sys.executable, "-m", "e2e.netns_sampler",
                         f"http://127.0.0.1:{listen}/status", str(self.samples), str(self.period)])
        return slot

    # ------------------------------------------------------------------ the partition
    def cut(self) -> None:
        _ip("link", "set", self.outer, "down")

    def heal(self) -> None:
        _ip("link", "set", self.outer, "up")

    # ------------------------------------------------------------------ teardown
    def close(self) -> None:
        for proc in self.procs:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, 9)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(5)
        slot = self.system.agents.get(self.cluster)
        if slot is not None:
            slot.stop()
        if self.made_link:
            _ip("link", "del", self.outer, check=False)
        if self.made_netns:
            _ip("netns", "del", self.netns, check=False)


def sampler(path: Path, url: str, period: float = 0.25) -> subprocess.Popen[str]:
    """A sampler for an agent in this namespace (stop it with :func:`stop`)."""
    with open(path.with_suffix(".log"), "w", encoding="utf-8") as log:
        return subprocess.Popen([sys.executable, "-m", "e2e.netns_sampler", url, str(path), str(period)], cwd=REPO,
                                stdout=log, stderr=subprocess.STDOUT, text=True, start_new_session=True,
                                env={**os.environ, "PYTHONPATH": str(REPO)})


def stop(proc: subprocess.Popen[str]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, 9)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(5)
