""":class:`RestFederationAPI`: the agent's federation client on plain aiohttp (no kubernetes-asyncio).

kubernetes-asyncio imports its ~800 generated API models when it loads (about 40 MiB of resident
memory), for an agent that only ever exchanges wire dicts on a dozen paths. This client speaks
those paths directly: JSON bodies, ``application/merge-patch+json`` patches, watches as a stream
of JSON lines (a 410 arrives either as the HTTP status or as an ``ERROR`` event with code 410,
and both mean *relist*). Errors map onto the agent's tree as :func:`federation_api.translate`
does (404 NotFound, 409 AlreadyExists/Conflict, 410 Gone, 429/5xx and connection errors
Unavailable). Every request has a timeout; there are no retries here (:mod:`member_agent.sync`).

Kubeconfig support: the current context's server, ``certificate-authority(-data)``,
``insecure-skip-tls-verify``, a bearer ``token``/``tokenFile``, or a client certificate
(``client-certificate(-data)`` + ``client-key(-data)``).
"""

from __future__ import annotations

import base64
import json
import os
import ssl
import tempfile
from typing import Any, AsyncIterator, Optional

import aiohttp
import yaml

from member_agent.cluster.gateway import AlreadyExists, Gone, NotFound, Obj, Unavailable, WatchEvent
from member_agent.federation_api import (
    CLUSTER,
    LEASE,
    MERGE_PATCH,
    PRIORITY_CLASS,
    QUEUE,
    REQUEST_TIMEOUT,
    WATCH_TIMEOUT,
    WORK,
)
from policies.errors import CalderaError, Conflict


class HttpError(Exception):
    def __init__(self, status: int, body: str) -> None:
        super().__init__(f"HTTP {status}: {body[:300]}")
        self.status = status
        self.body = body


def _error(status: int, body: str, what: str) -> Exception:
    if status == 404:
        return NotFound(f"{what}: not found")
    if status == 409:
        return AlreadyExists(f"{what}: already exists") if "exists" in body.lower() else Conflict(f"{what}: conflict")
    if status == 410:
        return Gone(f"{what}: resourceVersion too old")
    if status in (429, 500, 502, 503, 504):
        return Unavailable(f"{what}: HTTP {status}")
    return HttpError(status, body)


def _data_or_file(entry: dict[str, Any], key: str, base: str) -> Optional[bytes]:
    if entry.get(f"{key}-data"):
        return base64.b64decode(entry[f"{key}-data"])
    if entry.get(key):
        path = entry[key] if os.path.isabs(entry[key]) else os.path.join(base, entry[key])
        with open(path, "rb") as handle:
            return handle.read()
    return None


def load_kubeconfig(path: str) -> tuple[str, dict[str, str], ssl.SSLContext | bool]:
    """(server URL, auth headers, SSL context or False) of the kubeconfig's current context."""
    with open(path, encoding="utf-8") as handle:
        config = yaml.safe_load(handle) or {}
    return kubeconfig_parts(config, os.path.dirname(os.path.abspath(path)), path)


def kubeconfig_parts(config: dict[str, Any], base: str, path: str = "kubeconfig"
                     ) -> tuple[str, dict[str, str], ssl.SSLContext | bool]:
    """As :func:`load_kubeconfig`, for a kubeconfig already read (relative files under ``base``)."""
    contexts = {c["name"]: c.get("context") or {} for c in config.get("contexts") or []}
    context = contexts.get(config.get("current-context") or "") or next(iter(contexts.values()), {})
    clusters = {c["name"]: c.get("cluster") or {} for c in config.get("clusters") or []}
    users = {u["name"]: u.get("user") or {} for u in config.get("users") or []}
    cluster = clusters.get(context.get("cluster", "")) or next(iter(clusters.values()), {})
    user = users.get(context.get("user", "")) or next(iter(users.values()), {})
    server = str(cluster.get("server") or "").rstrip("/")
    if not server:
        raise CalderaError(f"kubeconfig {path}: the current context names no cluster server")
    headers: dict[str, str] = {}
    token = user.get("token")
    if not token and user.get("tokenFile"):
        with open(user["tokenFile"], encoding="utf-8") as handle:
            token = handle.read().strip()
    if token:
        headers["Authorization"] = f"Bearer {token}"
    ssl_context: ssl.SSLContext | bool = False
    if server.startswith("https://"):
        # As client-go: a kubeconfig's certificate-authority replaces the system roots rather than adding
        # to them, so the system store (~2 MiB once parsed by OpenSSL) is loaded only when none is given.
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # verifies the chain and the host name
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        ca = _data_or_file(cluster, "certificate-authority", base)
        if cluster.get("insecure-skip-tls-verify"):
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        elif ca:
            ctx.load_verify_locations(cadata=ca.decode())
        else:
            ctx.load_default_certs()
        cert = _data_or_file(user, "client-certificate", base)
        key = _data_or_file(user, "client-key", base)
        if cert and key:
            with tempfile.TemporaryDirectory() as tmp:  # ssl loads chains from files only
                cert_path, key_path = os.path.join(tmp, "c.pem"), os.path.join(tmp, "k.pem")
                with open(cert_path, "wb") as out:
                    out.write(cert)
                with open(key_path, "wb") as out:
                    out.write(key)
                ctx.load_cert_chain(cert_path, key_path)
        ssl_context = ctx
    return server, headers, ssl_context


def _path(group: str, version: str, plural: str, namespace: Optional[str] = None, name: Optional[str] = None,
          sub: Optional[str] = None) -> str:
    root = f"/api/{version}" if not group else f"/apis/{group}/{version}"
    parts = [root] + ([f"namespaces/{namespace}"] if namespace else []) + [plural]
    parts += [name] if name else []
    parts += [sub] if sub else []
    return "/".join(parts)


#: concurrent connections to one federation endpoint: the Works watch plus three requests in flight
CONNECTIONS_PER_SERVER = 4


class RestFederationAPI:
    """:class:`member_agent.federation_api.FederationAPI` over aiohttp."""

    def __init__(self, server: str, headers: dict[str, str], ssl_context: ssl.SSLContext | bool) -> None:
        self.server = server
        self.ssl = ssl_context
        # A small pool: one connection for the Works watch and a few for requests. aiohttp's default
        # (100) let bursts of status writes open ~10 TLS connections that periodic requests then kept
        # alive, each holding its TLS read buffers (~130 KiB in Python, more in OpenSSL) while idle.
        connector = aiohttp.TCPConnector(limit_per_host=CONNECTIONS_PER_SERVER)
        self.session = aiohttp.ClientSession(headers={**headers, "Accept": "application/json"}, connector=connector)

    @classmethod
    async def from_kubeconfig(cls, path: str) -> "RestFederationAPI":
        return cls(*load_kubeconfig(path))

    @classmethod
    def from_config(cls, config: dict[str, Any], base: str) -> "RestFederationAPI":
        return cls(*kubeconfig_parts(config, base))

    async def _request(self, what: str, method: str, path: str, body: Any = None, content_type: str = "application/json",
                       params: Optional[dict[str, str]] = None) -> Any:
        data = None if body is None else json.dumps(body)
        headers = {"Content-Type": content_type} if body is not None else {}
        try:
            async with self.session.request(method, self.server + path, data=data, headers=headers, params=params,
                                            ssl=self.ssl, timeout=aiohttp.ClientTimeout(total=REQUEST_TIMEOUT)) as resp:
                text = await resp.text()
                if resp.status >= 400:
                    raise _error(resp.status, text, what)
                return json.loads(text) if text else {}
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            raise Unavailable(f"{what}: {type(exc).__name__}: {exc}") from exc

    async def request(self, what: str, method: str, path: str, body: Any = None,
                      content_type: str = "application/json", params: Optional[dict[str, str]] = None) -> Any:
        """One JSON request on any path (the member-pod reporter and the log shipper use it)."""
        return await self._request(what, method, path, body, content_type, params)

    # ------------------------------------------------------------ Cluster
    async def get_cluster(self, name: str) -> Obj:
        return await self._request(f"Cluster {name}", "GET", _path(*CLUSTER, name=name))  # type: ignore[no-any-return]

    async def create_cluster(self, body: Obj) -> Obj:
        return await self._request(f"Cluster {body['metadata']['name']}", "POST",  # type: ignore[no-any-return]
                                   _path(*CLUSTER), body)

    async def patch_cluster_status(self, name: str, status: Obj) -> Obj:
        return await self._request(f"Cluster {name} status", "PATCH",  # type: ignore[no-any-return]
                                   _path(*CLUSTER, name=name, sub="status"), {"status": status}, MERGE_PATCH)

    # ------------------------------------------------------------ Lease
    async def get_lease(self, namespace: str, name: str) -> Obj:
        return await self._request(f"Lease {namespace}/{name}", "GET",  # type: ignore[no-any-return]
                                   _path(*LEASE, namespace=namespace, name=name))

    async def create_lease(self, namespace: str, body: Obj) -> Obj:
        return await self._request(f"Lease {namespace}/{body['metadata']['name']}", "POST",  # type: ignore[no-any-return]
                                   _path(*LEASE, namespace=namespace), body)

    async def replace_lease(self, namespace: str, name: str, body: Obj) -> Obj:
        return await self._request(f"Lease {namespace}/{name}", "PUT",  # type: ignore[no-any-return]
                                   _path(*LEASE, namespace=namespace, name=name), body)

    # ------------------------------------------------------------ Works
    async def list_works(self, namespace: str) -> tuple[list[Obj], str]:
        listing = await self._request(f"Works in {namespace}", "GET", _path(*WORK, namespace=namespace))
        return list(listing.get("items") or []), str((listing.get("metadata") or {}).get("resourceVersion") or "")

    async def watch_works(self, namespace: str, resource_version: str) -> AsyncIterator[WatchEvent]:
        what = f"watch Works in {namespace}"
        params = {"watch": "true", "resourceVersion": resource_version, "timeoutSeconds": str(WATCH_TIMEOUT),
                  "allowWatchBookmarks": "true"}
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=REQUEST_TIMEOUT, sock_read=WATCH_TIMEOUT + 30)
        try:
            async with self.session.get(self.server + _path(*WORK, namespace=namespace), params=params, ssl=self.ssl,
                                        timeout=timeout) as resp:
                if resp.status >= 400:
                    raise _error(resp.status, await resp.text(), what)
                async for line in resp.content:
                    if not line.strip():
                        continue
                    event = json.loads(line)
                    kind, obj = event.get("type"), event.get("object")
                    if kind == "ERROR":
                        code = int((obj or {}).get("code") or 500)
                        raise _error(code, json.dumps(obj), what)
                    if kind in ("ADDED", "MODIFIED", "DELETED") and isinstance(obj, dict):
                        yield WatchEvent(kind, obj)
        except (TimeoutError, aiohttp.ClientError, OSError, ValueError) as exc:
            raise Unavailable(f"{what}: {type(exc).__name__}: {exc}") from exc

    async def patch_work_status(self, namespace: str, name: str, status: Obj) -> Obj:
        return await self._request(f"Work {namespace}/{name} status", "PATCH",  # type: ignore[no-any-return]
                                   _path(*WORK, namespace=namespace, name=name, sub="status"), {"status": status},
                                   MERGE_PATCH)

    # ------------------------------------------------------------ scheduling inputs
    async def list_queues(self) -> list[Obj]:
        g, v, _ = QUEUE
        listing = await self._request("Queues", "GET", _path(*QUEUE))
        return [dict(q, apiVersion=f"{g}/{v}", kind="Queue") for q in listing.get("items") or []]

    async def list_priority_classes(self) -> list[Obj]:
        g, v, _ = PRIORITY_CLASS
        listing = await self._request("PriorityClasses", "GET", _path(*PRIORITY_CLASS))
        return [dict(q, apiVersion=f"{g}/{v}", kind="PriorityClass") for q in listing.get("items") or []]

    # ------------------------------------------------------------ events
    async def create_event(self, namespace: str, body: Obj) -> None:
        await self._request(f"Event in {namespace}", "POST", _path("", "v1", "events", namespace=namespace), body)

    async def close(self) -> None:
        await self.session.close()
