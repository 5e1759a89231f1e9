"""kubernetes-asyncio clients for Caldera's API (CLI, controllers, tests).

``api_client_from_dict(kubeconfig)`` and ``load_client(path)`` return an ``ApiClient``;
``default_kubeconfig_path()`` finds ``--kubeconfig``, ``$KUBECONFIG`` or the admin kubeconfig
``caldera serve`` wrote under ``./caldera-data``. Remember the library's traps: pass
``_request_timeout`` on calls, ``_content_type="application/merge-patch+json"`` on custom
object patches, and ``_preload_content=False`` on pod binding.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml
from kubernetes_asyncio import client as k8s
from kubernetes_asyncio.config.kube_config import KubeConfigLoader

from policies.kinds import KindInfo

MERGE_PATCH = "application/merge-patch+json"
DEFAULT_DATA_DIR = Path("caldera-data")


def default_kubeconfig_path(explicit: str | None = None, data_dir: Path = DEFAULT_DATA_DIR) -> Path:
    if explicit:
        return Path(explicit)
    env = os.environ.get("KUBECONFIG")
    if env:
        return Path(env.split(os.pathsep)[0])
    return data_dir / "admin.kubeconfig"


def configuration_from_dict(kubeconfig: dict[str, Any]) -> k8s.Configuration:
    """A Configuration for the kubeconfig's current context (synchronous: token auth only needs no I/O)."""
    config = k8s.Configuration()
    contexts = {c["name"]: c["context"] for c in kubeconfig.get("contexts", [])}
    context = contexts[kubeconfig.get("current-context") or next(iter(contexts))]
    cluster = {c["name"]: c["cluster"] for c in kubeconfig.get("clusters", [])}[context["cluster"]]
    user = {u["name"]: u["user"] for u in kubeconfig.get("users", [])}.get(context.get("user", ""), {})
    config.host = cluster["server"]
    if user.get("token"):
        config.api_key = {"BearerToken": user["token"]}
        config.api_key_prefix = {"BearerToken": "Bearer"}
    if cluster.get("insecure-skip-tls-verify"):
        config.verify_ssl = False
    elif cluster.get("certificate-authority-data"):
        config.ssl_ca_cert = str(ca_file(cluster["certificate-authority-data"]))
    elif cluster.get("certificate-authority"):
        config.ssl_ca_cert = cluster["certificate-authority"]
    return config


def ca_file(data_b64: str) -> Path:
    """The CA bundle as a file (the client only takes a path), one file per distinct CA.

    Named by the content's hash, so building many clients reuses one file instead of leaving a
    temporary file behind per client; written to a temporary name and renamed, so a concurrent
    reader never sees half a certificate.
    """
    import base64
    import hashlib
    import tempfile

    pem = base64.b64decode(data_b64)
    path = Path(tempfile.gettempdir()) / f"caldera-ca-{hashlib.sha256(pem).hexdigest()[:32]}.crt"
    if not path.exists() or path.read_bytes() != pem:
        fd, tmp = tempfile.mkstemp(suffix=".crt", dir=path.parent)
        with os.fdopen(fd, "wb") as handle:
            handle.write(pem)
        os.replace(tmp, path)
    return path


def api_client_from_dict(kubeconfig: dict[str, Any], user_agent: str = "caldera") -> k8s.ApiClient:
    """An ApiClient whose User-Agent names Caldera: the API server records this program name as the
    field manager of its writes (managedFields), as kube does for clients that send no fieldManager."""
    api = k8s.ApiClient(configuration=configuration_from_dict(kubeconfig))
    api.user_agent = f"{user_agent}/kubernetes-asyncio"
    return api


def load_kubeconfig(path: Path | str) -> dict[str, Any]:
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"kubeconfig {path} not found: start `caldera serve` or pass --kubeconfig")
    data: dict[str, Any] = yaml.safe_load(path.read_text())
    return data


def load_client(path: Path | str | None = None) -> k8s.ApiClient:
    return api_client_from_dict(load_kubeconfig(default_kubeconfig_path(str(path) if path else None)))


def collection_path(info: KindInfo, namespace: str | None = None) -> str:
    """``/apis/g/v[/namespaces/ns]/plural`` (``/api/v1`` for the core group)."""
    root = f"/apis/{info.group}/{info.version}" if info.group else "/api/v1"
    if info.namespaced and namespace:
        return f"{root}/namespaces/{namespace}/{info.plural}"
    return f"{root}/{info.plural}"


def object_path(info: KindInfo, name: str, namespace: str | None = None, subresource: str = "") -> str:
    path = f"{collection_path(info, namespace or None if info.namespaced else None)}/{name}"
    return f"{path}/{subresource}" if subresource else path


class ResourceClient:
    """Dict-in, dict-out calls for any kind of :data:`policies.kinds.KINDS` (core ones included).

    ``list`` takes kubernetes-asyncio's watch keywords, so ``watch.Watch().stream(rc.list, info, ns)``
    yields dict events like CustomObjectsApi does.
    """

    def __init__(self, api: k8s.ApiClient, timeout: float = 30.0) -> None:
        self.api = api
        self.timeout = timeout

    async def _call(self, method: str, path: str, body: Any = None, query: list[tuple[str, Any]] | None = None,
                    content_type: str = "application/json", **kwargs: Any) -> Any:
        kwargs.setdefault("_request_timeout", self.timeout)
        return await self.api.call_api(
            path, method, {}, query or [], {"Accept": "application/json", "Content-Type": content_type},
            body=body, response_types_map={200: "object", 201: "object", 202: "object"},
            auth_settings=["BearerToken"], _return_http_data_only=True, **kwargs)

    async def get(self, info: KindInfo, name: str, namespace: str | None = None, subresource: str = "") -> Any:
        return await self._call("GET", object_path(info, name, namespace, subresource))

    async def list(self, info: KindInfo, namespace: str | None = None, *, label_selector: str | None = None,
                   field_selector: str | None = None, limit: int | None = None, _continue: str | None = None,
                   watch: bool | None = None, resource_version: str | None = None,
                   timeout_seconds: int | None = None, allow_watch_bookmarks: bool | None = None,
                   **kwargs: Any) -> Any:
        """:return: object"""
        query: list[tuple[str, Any]] = []
        for key, value in (("labelSelector", label_selector), ("fieldSelector", field_selector),
                           ("limit", limit), ("continue", _continue), ("watch", watch),
                           ("resourceVersion", resource_version), ("timeoutSeconds", timeout_seconds),
                           ("allowWatchBookmarks", allow_watch_bookmarks)):
            if value is not None:
                query.append((key, value))
        if watch:
            kwargs.setdefault("_request_timeout", None if timeout_seconds is None else timeout_seconds + 30)
        return await self._call("GET", collection_path(info, namespace), query=query, **kwargs)

    async def create(self, info: KindInfo, body: dict[str, Any], namespace: str | None = None) -> Any:
        ns = namespace or (body.get("metadata") or {}).get("namespace") if info.namespaced else None
        return await self._call("POST", collection_path(info, ns), body)

    async def replace(self, info: KindInfo, body: dict[str, Any], subresource: str = "") -> Any:
        meta = body.get("metadata") or {}
        return await self._call("PUT", object_path(info, meta["name"], meta.get("namespace"), subresource), body)

    async def patch(self, info: KindInfo, name: str, patch: Any, namespace: str | None = None,
                    subresource: str = "", content_type: str = MERGE_PATCH) -> Any:
        return await self._call("PATCH", object_path(info, name, namespace, subresource), patch,
                                content_type=content_type)

    async def delete(self, info: KindInfo, name: str, namespace: str | None = None,
                     propagation_policy: str | None = None) -> Any:
        body = {"kind": "DeleteOptions", "apiVersion": "v1"}
        if propagation_policy:
            body["propagationPolicy"] = propagation_policy
        return await self._call("DELETE", object_path(info, name, namespace), body)


__all__ = ["MERGE_PATCH", "KubeConfigLoader", "ResourceClient", "api_client_from_dict", "collection_path",
           "configuration_from_dict", "default_kubeconfig_path", "load_client", "load_kubeconfig", "object_path"]
