"""Raw HTTP helpers for the conformance tests (kubernetes-asyncio for the happy paths)."""

from __future__ import annotations

import io
from typing import Any

import aiohttp

from federation.apiserver.server import ApiServer
from policies.kinds import KindInfo


def collection_path(info: KindInfo, namespace: str | None = None) -> str:
    root = f"/apis/{info.group}/{info.version}" if info.group else "/api/v1"
    if info.namespaced and namespace is not None:
        return f"{root}/namespaces/{namespace}/{info.plural}"
    return f"{root}/{info.plural}"


def object_path(info: KindInfo, name: str, namespace: str | None = None) -> str:
    return f"{collection_path(info, namespace)}/{name}"


async def request(server: ApiServer, method: str, path: str, *, token: str | None = None,
                  body: bytes | str | None = None, content_type: str | None = "application/json",
                  headers: dict[str, str] | None = None) -> tuple[int, Any]:
    """(status, decoded JSON body or text)."""
    all_headers = dict(headers or {})
    token = server.admin_token if token is None else token
    if token:
        all_headers["Authorization"] = f"Bearer {token}"
    if content_type and body is not None:
        all_headers["Content-Type"] = content_type
    data: Any = io.BytesIO(body.encode() if isinstance(body, str) else body) if body is not None else None
    async with aiohttp.ClientSession() as session, \
            session.request(method, server.url + path, data=data, headers=all_headers) as resp:
        text = await resp.text()
        try:
            return resp.status, await resp.json(content_type=None)
        except ValueError:
            return resp.status, text
