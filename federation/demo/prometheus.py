"""A real Prometheus for ``caldera demo --prometheus`` and the e2e suite (docs/monitoring.md).

:func:`prometheus_config` writes the scrape configuration: the federation over HTTPS (its
self-signed certificate as the CA, a viewer token as the bearer credential) and every agent's
secure ``/metrics`` (``--metrics-bind-address``, HTTPS with a certificate made by
:func:`secure_agent_metrics`, the same viewer token, which the agent has the federation review)
with a ``cluster`` target label. The rule files are ``deploy/prometheus/*.yaml``;
``for_override`` rewrites every ``for:`` (the e2e test wants alerts within seconds, not minutes).
:class:`PrometheusProcess` runs ``prometheus`` on loopback as a :class:`ManagedProcess`.
"""

from __future__ import annotations

import atexit
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional
from urllib.parse import urlsplit

import yaml

from federation.demo.processes import (
    AGENT_LISTENING,
    ClusterSpec,
    ManagedProcess,
    StartupError,
    System,
    free_port,
)
from policies.k8s import durations

REPO = Path(__file__).resolve().parents[2]
RULES_DIR = REPO / "deploy" / "prometheus"
AGENT_METRICS = re.compile(r"caldera agent (\S+) serving metrics on (https://\S+)/metrics")
READY = re.compile(r"Server is ready to receive web requests")
FOR_LINE = re.compile(r"^(\s*for:\s*)\S+\s*$", re.MULTILINE)


def fix_agent_ports(clusters: list[ClusterSpec]) -> None:
    """Give each agent a fixed loopback port (its last ``--listen`` wins), so a restart keeps its target."""
    for spec in clusters:
        spec.agent_args = [*spec.agent_args, "--listen", f"127.0.0.1:{free_port()}"]


def agent_tls_files(data_dir: Path) -> tuple[Path, Path]:
    """(certificate, key) the demo's agents serve metrics with; the certificate is Prometheus's CA."""
    from federation.apiserver.tls import ensure_self_signed

    return ensure_self_signed(data_dir / "tls-agents", "127.0.0.1")


def secure_agent_metrics(clusters: list[ClusterSpec], data_dir: Path) -> None:
    """Fixed ports for every agent (a restart keeps its targets) and ``/metrics`` over HTTPS."""
    cert, key = agent_tls_files(data_dir)
    fix_agent_ports(clusters)
    for spec in clusters:
        spec.agent_args = [*spec.agent_args, "--metrics-bind-address", f"127.0.0.1:{free_port()}",
                           "--tls-cert-file", str(cert), "--tls-private-key-file", str(key)]


def agent_urls(system: System) -> dict[str, str]:
    """cluster -> the agent's ``http://host:port`` as it announced it (restarts may move it)."""
    found = {}
    for name, slot in system.agents.items():
        match = AGENT_LISTENING.search(slot.output())
        if match:
            found[name] = match.group(1)
    return found


def agent_metrics_urls(system: System) -> dict[str, str]:
    """cluster -> the ``https://host:port`` of the agent's secure metrics listener, as announced;
    agents without one (no ``--metrics-bind-address``) fall back to their plain listener."""
    found = agent_urls(system)
    for name, slot in system.agents.items():
        match = AGENT_METRICS.search(slot.output())
        if match:
            found[name] = match.group(2)
    return found


def copy_rules(target: Path, for_override: Optional[str] = None) -> list[Path]:
    """The shipped rule files under ``target``, every ``for:`` replaced by ``for_override`` if given."""
    target.mkdir(parents=True, exist_ok=True)
    copied = []
    for source in sorted(RULES_DIR.glob("*.yaml")):
        text = source.read_text()
        if for_override:
            text = FOR_LINE.sub(lambda m: f"{m.group(1)}{for_override}", text)
        out = target / source.name
        out.write_text(text)
        copied.append(out)
    return copied


def prometheus_config(federation_url: str, agents: dict[str, str], token_file: Path, ca_file: Optional[Path],
                      rule_files: list[Path], interval: str = "15s", evaluation: Optional[str] = None,
                      agent_ca_file: Optional[Path] = None) -> dict[str, Any]:
    fed = urlsplit(federation_url)
    tls: dict[str, Any] = {"ca_file": str(ca_file)} if ca_file else {"insecure_skip_verify": True}
    schemes = {urlsplit(url).scheme for url in agents.values()} or {"https"}
    if len(schemes) > 1:
        raise ValueError(f"agents serve metrics over both http and https: {sorted(agents.items())}")
    agent_job: dict[str, Any] = {"job_name": "caldera-agents", "scheme": schemes.pop(), "metrics_path": "/metrics"}
    if agent_job["scheme"] == "https":
        agent_job["authorization"] = {"type": "Bearer", "credentials_file": str(token_file)}
        agent_job["tls_config"] = {"ca_file": str(agent_ca_file)} if agent_ca_file else {"insecure_skip_verify": True}
    return {
        "global": {"scrape_interval": interval, "evaluation_interval": evaluation or interval,
                   "scrape_timeout": interval if _seconds(interval) < 10 else "10s"},
        "rule_files": [str(p) for p in rule_files],
        "scrape_configs": [
            {"job_name": "caldera-federation", "scheme": fed.scheme or "https", "metrics_path": "/metrics",
             "authorization": {"type": "Bearer", "credentials_file": str(token_file)}, "tls_config": tls,
             "static_configs": [{"targets": [fed.netloc]}]},
            dict(agent_job, static_configs=[{"targets": [urlsplit(url).netloc], "labels": {"cluster": name}}
                                            for name, url in sorted(agents.items())]),
        ],
    }


def _seconds(duration: str) -> float:
    return durations.parse_seconds(duration)


def mint_viewer_token(system: System, user: str = "viewer") -> str:
    from federation.apiserver.auth import TokenAuthenticator

    return TokenAuthenticator(system.data_dir / "tokens.csv").mint(user, "viewer")


@dataclass
class PrometheusProcess:
    """``prometheus`` for one :class:`System`, its config and data under ``DIR/prometheus``."""

    system: System
    interval: str = "15s"
    for_override: Optional[str] = None
    binary: Optional[str] = field(default_factory=lambda: shutil.which("prometheus"))
    port: int = 0
    process: Optional[ManagedProcess] = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def home(self) -> Path:
        return self.system.data_dir / "prometheus"

    def write_config(self) -> Path:
        token_file = self.home / "viewer.token"
        self.home.mkdir(parents=True, exist_ok=True)
        if not token_file.exists():
            token_file.write_text(mint_viewer_token(self.system, "prometheus"))
            token_file.chmod(0o600)
        ca = self.system.data_dir / "tls" / "apiserver.crt"
        rules = copy_rules(self.home / "rules", self.for_override)
        agent_ca = self.system.data_dir / "tls-agents" / "apiserver.crt"
        config = prometheus_config(self.system.url, agent_metrics_urls(self.system), token_file,
                                   ca if ca.exists() else None, rules, self.interval,
                                   agent_ca_file=agent_ca if agent_ca.exists() else None)
        path = self.home / "prometheus.yml"
        path.write_text(yaml.safe_dump(config, sort_keys=False))
        return path

    def start(self, timeout: float = 60.0) -> "PrometheusProcess":
        if self.binary is None:
            raise StartupError("prometheus is not installed (Debian package 'prometheus')")
        config = self.write_config()
        self.port = self.port or free_port()
        cmd = [self.binary, f"--config.file={config}", f"--storage.tsdb.path={self.home / 'data'}",
               f"--web.listen-address=127.0.0.1:{self.port}", "--storage.tsdb.retention.time=1d",
               "--web.enable-lifecycle"]
        atexit.register(self.stop)
        self.process = ManagedProcess("prometheus", cmd, self.system.log_dir / "prometheus.log").start()
        self.process.wait_for(READY, timeout)
        return self

    def stop(self) -> Optional[int]:
        return self.process.stop() if self.process is not None else None
