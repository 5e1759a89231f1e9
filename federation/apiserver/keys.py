"""Typed keys for what middlewares and handlers share on a request (aiohttp RequestKey)."""

from __future__ import annotations

from aiohttp import web

from federation.apiserver.auth import User

USER: web.RequestKey[User] = web.RequestKey("caldera_user", User)
VERB: web.RequestKey[str] = web.RequestKey("caldera_verb", str)
RESOURCE: web.RequestKey[str] = web.RequestKey("caldera_resource", str)
