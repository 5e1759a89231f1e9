"""Start and stop an API server: store, watch hub, registry, auth, HTTP(S) listener.

In a test::

    async with ApiServer(ServerConfig(data_dir=tmp_path)) as server:   # free loopback port
        async with server.api_client() as api: ...                    # admin kubernetes-asyncio client
        agent_cfg = server.kubeconfig("agent:cluster-a")              # kubeconfig dict for a role

The API server knows nothing of controllers: the controller manager (federation/controllers/
manager.py) is a client like any other, and ``caldera serve`` starts both in one process
(federation/cli/serve.py).
"""

from __future__ import annotations

import base64
import contextlib
import os
import ssl
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from aiohttp import web

from federation.apiserver import conversion
from federation.apiserver.app import build_app
from federation.apiserver.auth import TokenAuthenticator
from federation.apiserver.member_view import MemberView
from federation.apiserver.rbac import reconcile_bootstrap
from federation.apiserver.registry import Registry
from federation.apiserver.state import ApiServerState
from federation.apiserver.storage import Storage
from federation.apiserver.store import Store
from federation.apiserver.watch import WatchHub

if TYPE_CHECKING:
    from federation.apiserver.etcd_client import EtcdConfig

FEDERATION_NAMESPACES = ("default", "kube-system", "karmada-cluster", "caldera-system")
MEMBER_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


@dataclass
class ServerConfig:
    data_dir: Path = Path("caldera-data")
    #: HOST:PORT; port 0 picks a free port (see ApiServer.url after start)
    listen: str = "127.0.0.1:0"
    token_file: Path | None = None
    tls_cert_file: Path | None = None
    tls_private_key_file: Path | None = None
    #: serve HTTPS with a certificate generated under DIR/tls when no cert file is given
    #: (kubectl sends bearer tokens only over TLS); in-process tests usually keep plain HTTP
    self_signed_tls: bool = False
    #: stand in for a member cluster's API server: core kinds only, no federation /status
    member_mode: bool = False
    watch_history: int = 50_000
    bookmark_interval: float = 30.0
    #: clusters to write DIR/agent-<cluster>.kubeconfig for at start-up (new agent tokens)
    agent_kubeconfigs: list[str] = field(default_factory=list)
    #: store objects in etcd (``--etcd-servers``) instead of DIR/caldera.db
    etcd: EtcdConfig | None = None
    #: ServiceAccount tokens: issuer (also the audience they must carry), RS256 signing key
    #: (default DIR/sa-signing.key, generated), shortest TokenRequest lifetime (kube: 10 minutes)
    service_account_issuer: str = "https://kubernetes.default.svc.cluster.local"
    service_account_key_file: Path | None = None
    service_account_min_expiration: int = 600
    #: audit log (kube's --audit-log-path, "-" = stdout; None = off), its policy file, rotation
    audit_log_path: Path | str | None = None
    audit_policy_file: Path | None = None
    audit_log_maxsize: int = 0
    audit_log_maxbackup: int = 0
    #: the dashboard's GPU chart reads this Prometheus (``--prometheus-url``; None: the server's samples)
    prometheus_url: str | None = None


async def open_store(cfg: ServerConfig, data_dir: Path) -> Storage:
    """The SQLite file under ``data_dir``, or etcd when ``cfg.etcd`` is set (EtcdConfigError on a bad flag)."""
    if cfg.etcd is None:
        return Store(data_dir / "caldera.db")
    from federation.apiserver.etcd_store import EtcdStore

    return await EtcdStore(cfg.etcd).start()


def split_listen(listen: str) -> tuple[str, int]:
    host, _, port = listen.rpartition(":")
    if not host:
        raise ValueError(f"--listen must be HOST:PORT, got {listen!r}")
    return host.strip("[]"), int(port)


class ApiServer:
    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        self.data_dir = Path(config.data_dir)
        self._runner: web.AppRunner | None = None
        self.state: ApiServerState | None = None
        self.url = ""
        self.admin_token = ""

    # -- lifecycle -----------------------------------------------------------------------

    async def start(self) -> "ApiServer":
        cfg = self.config
        self.data_dir.mkdir(parents=True, exist_ok=True)
        store = await open_store(cfg, self.data_dir)
        hub = WatchHub(store.rv, history=cfg.watch_history)
        store.add_listener(hub.publish)
        store.add_rollback_listener(lambda durable_rv, _changes: hub.roll_back(durable_rv))
        registry = Registry(store)
        members = None
        if not cfg.member_mode:  # agents' pods and PodGroups, served read-only (docs/protocol.md "Member pods")
            members = MemberView(hub.publish)
            members.load(store.iter_all())
            store.add_listener(members.on_change)
        token_file = Path(cfg.token_file) if cfg.token_file else self.data_dir / "tokens.csv"
        auth = TokenAuthenticator(token_file)
        if cfg.token_file is None:
            self.admin_token = auth.token_for("admin") or auth.mint("admin", "admin")
        else:
            self.admin_token = auth.token_for("admin") or ""
        from federation.apiserver.serviceaccounts import ServiceAccountTokens, load_or_create_key

        sa_key = load_or_create_key(Path(cfg.service_account_key_file or self.data_dir / "sa-signing.key"))
        sa_tokens = ServiceAccountTokens(store, sa_key, cfg.service_account_issuer, cfg.service_account_min_expiration)
        state = ApiServerState(store=store, registry=registry, hub=hub, auth=auth, sa_tokens=sa_tokens,
                               bookmark_interval=cfg.bookmark_interval, member_mode=cfg.member_mode,
                               audit=self._audit_log(), members=members)
        if cfg.prometheus_url:
            state.extra["prometheus_url"] = cfg.prometheus_url
        self.state = state
        for namespace in MEMBER_NAMESPACES if cfg.member_mode else FEDERATION_NAMESPACES:
            await registry.ensure_namespace(namespace)
        await registry.ensure_default_queue()
        await reconcile_bootstrap(registry)  # the bootstrap RBAC policy (federation.apiserver.rbac)
        await conversion.repair(registry)  # Jobs missing for converted kinds (a crash between two commits)
        host, port = split_listen(cfg.listen)
        ssl_context = None
        if cfg.tls_cert_file is None and cfg.self_signed_tls:
            from federation.apiserver.tls import ensure_self_signed

            cfg.tls_cert_file, cfg.tls_private_key_file = ensure_self_signed(self.data_dir / "tls", host)
        if cfg.tls_cert_file:
            ssl_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            ssl_context.load_cert_chain(str(cfg.tls_cert_file), str(cfg.tls_private_key_file or cfg.tls_cert_file))
        self._runner = web.AppRunner(build_app(state), access_log=None, handle_signals=False,
                                     shutdown_timeout=2.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, host, port, ssl_context=ssl_context)
        await site.start()
        bound_port = port
        server = getattr(site, "_server", None)
        if server is not None and server.sockets:
            bound_port = server.sockets[0].getsockname()[1]
        client_host = "127.0.0.1" if host in ("0.0.0.0", "", "::") else host
        if ":" in client_host:
            client_host = f"[{client_host}]"
        self.url = f"{'https' if ssl_context else 'http'}://{client_host}:{bound_port}"
        state.address = f"{client_host}:{bound_port}"
        if self.admin_token:
            self.write_kubeconfig(self.data_dir / "admin.kubeconfig", "admin", token=self.admin_token)
        for cluster in cfg.agent_kubeconfigs:
            self.write_kubeconfig(self.data_dir / f"agent-{cluster}.kubeconfig", f"agent:{cluster}")
        return self

    def _audit_log(self) -> Any:
        cfg = self.config
        if cfg.audit_log_path is None:
            return None
        from federation.apiserver.audit import AuditLog, load_policy

        policy = load_policy(Path(cfg.audit_policy_file)) if cfg.audit_policy_file else None
        return AuditLog(cfg.audit_log_path, policy, cfg.audit_log_maxsize, cfg.audit_log_maxbackup)

    async def stop(self) -> None:
        if self.state is not None:
            self.state.stopping = True
            self.state.hub.close_all()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self.state is not None:
            with contextlib.suppress(Exception):
                await self.state.store.drain()
            await self.state.store.aclose()
            if self.state.audit is not None:
                self.state.audit.close()
            self.state = None

    async def __aenter__(self) -> "ApiServer":
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # -- credentials ---------------------------------------------------------------------

    @property
    def store(self) -> Storage:
        assert self.state is not None, "server not started"
        return self.state.store

    def mint_token(self, role: str, user: str | None = None) -> str:
        """A new token for ``admin``, ``viewer`` or ``agent:<cluster>`` (appended to the token file)."""
        assert self.state is not None, "server not started"
        return self.state.auth.mint(user or role.replace(":", "-"), role)

    def kubeconfig(self, role: str = "admin", token: str | None = None) -> dict[str, Any]:
        """A kubeconfig dict for this server and ``role`` (a new token unless one is given)."""
        if token is None:
            token = self.admin_token if role == "admin" and self.admin_token else self.mint_token(role)
        cluster: dict[str, Any] = {"server": self.url}
        if self.config.tls_cert_file:
            cluster["certificate-authority-data"] = base64.b64encode(
                Path(self.config.tls_cert_file).read_bytes()).decode()
        user = role.replace(":", "-")
        return {"apiVersion": "v1", "kind": "Config", "preferences": {},
                "clusters": [{"name": "caldera", "cluster": cluster}],
                "users": [{"name": user, "user": {"token": token}}],
                "contexts": [{"name": f"caldera-{user}", "context": {"cluster": "caldera", "user": user}}],
                "current-context": f"caldera-{user}"}

    def write_kubeconfig(self, path: Path, role: str, token: str | None = None) -> Path:
        text = yaml.safe_dump(self.kubeconfig(role, token), sort_keys=False)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
        return path

    def api_client(self, role: str = "admin") -> Any:
        """A kubernetes-asyncio ApiClient for ``role`` (use ``async with``)."""
        from federation.client import api_client_from_dict

        return api_client_from_dict(self.kubeconfig(role))
