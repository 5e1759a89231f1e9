"""The highly available federation as real processes on loopback, for e2e/test_ha*.py and bench/ha_burst.py.

A 3-member etcd, 3 ``caldera serve`` (controllers leader-elected on the Lease
``caldera-system/caldera-controllers``), and sim agents that know every replica (``--server`` x3):
one per member cluster, or several per cluster electing a leader themselves (``--leader-elect``).
Lease timings come from the flags, so tests can use short ones.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Awaitable, Callable

import aiohttp
import yaml
from kubernetes_asyncio.client.exceptions import ApiException

from e2e.harness import AGENT_ARGS, seed_clusters
from federation.apiserver.auth import TokenAuthenticator
from federation.client import ResourceClient, api_client_from_dict
from federation.demo.processes import AGENT_LISTENING, SERVE_LISTENING, ManagedProcess
from policies.kinds import lookup
from tests.etcd_process import EtcdCluster, free_port, require_etcd

#: kube-controller-manager's defaults: lease duration, renew deadline, retry period
DEFAULT_LEASE = ("15s", "10s", "2s")
LEASE_KIND = lookup("coordination.k8s.io/v1", "Lease")


@dataclass
class HA:
    root: Path
    lease: tuple[str, str, str] = DEFAULT_LEASE
    #: agent replicas per member cluster; more than one campaigns (--leader-elect)
    agent_replicas: dict[str, int] = field(default_factory=lambda: {"cluster-a": 1, "cluster-b": 1})
    agent_lease: tuple[str, str, str] = DEFAULT_LEASE
    serves: list[ManagedProcess] = field(default_factory=list)
    urls: list[str] = field(default_factory=list)
    #: (cluster, replica index) -> process; agent_urls alike -> its plain-HTTP /status address
    agents: dict[tuple[str, int], ManagedProcess] = field(default_factory=dict)
    agent_urls: dict[tuple[str, int], str] = field(default_factory=dict)
    #: role ("admin", "agent:CLUSTER") -> its bearer token in the replicas' shared token file
    tokens: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.etcd = EtcdCluster(self.root / "etcd", size=3)

    @property
    def lease_seconds(self) -> float:
        return float(self.lease[0].removesuffix("s"))

    def serve_cmd(self, i: int, port: int) -> list[str]:
        cmd = [sys.executable, "-m", "federation", "serve", "--plain-http", "--listen", f"127.0.0.1:{port}",
               "--data-dir", str(self.root / f"serve-{i}"), "--etcd-servers", ",".join(self.etcd.urls),
               "--leader-elect", "--leader-elect-identity", f"serve-{i}",
               "--leader-elect-lease-duration", self.lease[0], "--leader-elect-renew-deadline", self.lease[1],
               "--leader-elect-retry-period", self.lease[2], "--cluster-lease-grace", "20",
               "--token-file", str(self.root / "tokens.csv")]
        return cmd

    def _mint_tokens(self) -> None:
        """The replicas' shared token file, written before they start (so all three start at once)."""
        tokens = TokenAuthenticator(self.root / "tokens.csv")
        self.tokens = {"admin": tokens.mint("admin", "admin")}
        for cluster in self.agent_replicas:
            self.tokens[f"agent:{cluster}"] = tokens.mint(f"agent-{cluster}", f"agent:{cluster}")

    def kubeconfig(self, role: str, server: str) -> dict[str, Any]:
        user = role.replace(":", "-")
        return {"apiVersion": "v1", "kind": "Config",
                "clusters": [{"name": "caldera", "cluster": {"server": server}}],
                "users": [{"name": user, "user": {"token": self.tokens[role]}}],
                "contexts": [{"name": user, "context": {"cluster": "caldera", "user": user}}],
                "current-context": user}

    def agent_cmd(self, cluster: str, replica: int) -> list[str]:
        spec = next(s for s in seed_clusters() if s.name == cluster)
        kubeconfig = self.root / f"agent-{cluster}.kubeconfig"
        kubeconfig.write_text(yaml.safe_dump(self.kubeconfig(f"agent:{cluster}", self.urls[0])))
        servers = [a for url in self.urls for a in ("--server", url)]
        cmd = [sys.executable, "-m", "member_agent", "agent", "--cluster", cluster, "--kubeconfig",
               str(kubeconfig), *servers, "--sim", str(spec.sim_file), "--speed", "10", "--listen",
               "127.0.0.1:0", *AGENT_ARGS]
        if self.agent_replicas[cluster] > 1:
            cmd += ["--leader-elect", "--leader-elect-identity", f"agent-{cluster}-{replica}",
                    "--leader-elect-lease-duration", self.agent_lease[0],
                    "--leader-elect-renew-deadline", self.agent_lease[1],
                    "--leader-elect-retry-period", self.agent_lease[2]]
        return cmd

    def start(self) -> "HA":
        require_etcd()
        self.etcd.start()
        self._mint_tokens()
        for i in range(3):
            self.serves.append(ManagedProcess(f"serve-{i}", self.serve_cmd(i, free_port()),
                                              self.root / "logs" / f"serve-{i}.log").start())
        self.urls = [proc.wait_for(SERVE_LISTENING, 90).group(1) for proc in self.serves]
        for cluster, replicas in self.agent_replicas.items():
            for r in range(replicas):
                name = f"agent-{cluster}-{r}"
                self.agents[cluster, r] = ManagedProcess(name, self.agent_cmd(cluster, r),
                                                         self.root / "logs" / f"{name}.log").start()
        for key, proc in self.agents.items():
            self.agent_urls[key] = proc.wait_for(AGENT_LISTENING, 90).group(1)
        return self

    def kill_serves(self) -> None:
        """kill -9 every API replica: the agents have no federation endpoint left."""
        for proc in self.serves:
            proc.kill()

    def restart_serves(self) -> None:
        """Every API replica again, on its old port and data dir (etcd kept the data)."""
        for i, proc in enumerate(self.serves):
            port = int(self.urls[i].rsplit(":", 1)[1])
            self.serves[i] = ManagedProcess(proc.name, self.serve_cmd(i, port), proc.log_path).start()
        for proc in self.serves:
            proc.wait_for(SERVE_LISTENING, 90)

    def stop(self) -> None:
        everything = [*self.agents.values(), *self.serves]
        for proc in everything:  # signal all at once, then wait: they shut down in parallel
            if proc.alive:
                with contextlib.suppress(Exception):
                    proc._signal_group(signal.SIGCONT)
                    proc._signal_group(signal.SIGTERM)
        for proc in everything:
            with contextlib.suppress(Exception):
                proc.stop(10)
        for member in self.etcd.members:  # SIGKILL: a graceful stop of the last members waits ~7 s on its peers
            member.kill()

    def client(self, i: int) -> Any:
        return api_client_from_dict(self.kubeconfig("admin", self.urls[i]))

    async def agent_status(self, key: tuple[str, int]) -> dict[str, Any]:
        async with aiohttp.ClientSession() as session, session.get(self.agent_urls[key] + "/status") as resp:
            found: dict[str, Any] = await resp.json()
            return found


@contextlib.asynccontextmanager
async def clients(ha: HA) -> Any:
    """One ResourceClient per API replica."""
    opened = [ha.client(i) for i in range(len(ha.urls))]
    try:
        yield [ResourceClient(await c.__aenter__(), timeout=15) for c in opened]
    finally:
        for c in opened:
            await c.__aexit__(None, None, None)


async def lease_holder(rc: ResourceClient, name: str = "caldera-controllers",
                       namespace: str = "caldera-system") -> str:
    try:
        lease = await rc.get(LEASE_KIND, name, namespace)
    except ApiException:
        return ""
    return str((lease.get("spec") or {}).get("holderIdentity") or "")


async def until(probe: Callable[[], Awaitable[Any]], timeout: float, what: str) -> Any:
    """Poll ``probe`` until truthy (connection errors and API errors count as not yet)."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = await probe()
            if last:
                return last
        except (TimeoutError, ApiException, OSError, aiohttp.ClientError) as exc:
            last = exc
        await asyncio.sleep(0.25)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}; last seen: {last!r}")


async def other_holder(rc: ResourceClient, old: str, name: str = "caldera-controllers",
                       namespace: str = "caldera-system") -> str:
    now = await lease_holder(rc, name, namespace)
    return now if now and now != old else ""


async def leads(url: str, identity: str, name: str = "caldera-controllers") -> float | None:
    """``leader_election_master_status`` of ``identity`` on a replica's /metrics (None: not exported)."""
    async with aiohttp.ClientSession() as session, session.get(url + "/metrics",
                                                               timeout=aiohttp.ClientTimeout(total=5)) as resp:
        text = await resp.text()
    for line in text.splitlines():
        if line.startswith("leader_election_master_status{") and f'identity="{identity}"' in line \
                and f'name="{name}"' in line:
            return float(line.rsplit(" ", 1)[1])
    return None
