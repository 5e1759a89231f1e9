"""What every request handler of the API server shares: the store, the registry, the watch hub,
the authenticator, the metrics, and the key the aiohttp application keeps it under.

Its own module, below :mod:`app` and :mod:`routes`, so both can use it without importing each
other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from federation.apiserver.audit import AuditLog
from federation.apiserver.auth import TokenAuthenticator
from federation.apiserver.member_view import MemberView
from federation.apiserver.metrics import ApiMetrics
from federation.apiserver.rbac import Authorizer
from federation.apiserver.registry import Registry
from federation.apiserver.serviceaccounts import ServiceAccountTokens
from federation.apiserver.storage import Storage
from federation.apiserver.watch import WatchHub

#: kube-apiserver's limit on a request body (--max-request-bytes for JSON/YAML: 3 MiB); 413 beyond it.
MAX_REQUEST_BODY_BYTES = 3 * 1024 * 1024


@dataclass
class ApiServerState:
    store: Storage
    registry: Registry
    hub: WatchHub
    auth: TokenAuthenticator
    metrics: ApiMetrics = field(default_factory=ApiMetrics)
    address: str = "127.0.0.1:7443"
    max_body: int = MAX_REQUEST_BODY_BYTES
    bookmark_interval: float = 30.0
    stopping: bool = False
    member_mode: bool = False
    extra: dict[str, Any] = field(default_factory=dict)
    #: RBAC (federation.apiserver.rbac.install); built over the registry when not given
    authorizer: Authorizer = None  # type: ignore[assignment]
    #: ServiceAccount JWTs (TokenRequest and their authentication); None: static tokens only
    sa_tokens: ServiceAccountTokens | None = None
    #: the audit log (--audit-log-path); None: requests are not audited
    audit: AuditLog | None = None
    #: member Pods and PodGroups as the agents report them (federation mode; None in --member-mode)
    members: MemberView | None = None
    #: log requests waiting for their agent (federation/apiserver/member_logs.py)
    log_broker: Any = None

    def __post_init__(self) -> None:
        if self.authorizer is None:
            from federation.apiserver.rbac import install

            self.authorizer = install(self.registry)


STATE_KEY: web.AppKey[ApiServerState] = web.AppKey("state", ApiServerState)
