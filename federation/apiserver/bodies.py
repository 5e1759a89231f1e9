"""Request and response bodies of the REST handlers: JSON, YAML or protobuf in (by Content-Type),
JSON or protobuf out (by Accept).

Below :mod:`routes` and :mod:`reviews`, which both read and answer bodies, so neither imports
the other for it.
"""

from __future__ import annotations

from typing import Any

import orjson
from aiohttp import web

from federation.apiserver import protobuf, strategic, yaml_bodies
from federation.apiserver import status as st
from federation.apiserver.patch import APPLY, JSON_PATCH, MERGE, PATCH_TYPES, STRATEGIC
from federation.apiserver.protobuf.media import is_protobuf, preference
from federation.apiserver.state import STATE_KEY
from policies.kinds import KindInfo

JSON_TYPES = {"application/json"}
YAML_TYPES = {"application/yaml", "application/x-yaml", "text/yaml"}
BODY_TYPES = ["application/json", "application/yaml", protobuf.MEDIA_TYPE]


def json_response(obj: Any, status: int = 200) -> web.Response:
    return web.Response(body=orjson.dumps(obj), status=status, content_type="application/json")


def negotiated_response(request: web.Request, obj: Any, status: int = 200) -> web.Response:
    """``obj`` in the first media type the client accepts: protobuf for built-in kinds, else JSON."""
    wanted = preference(request.headers.get("Accept", ""))
    if wanted.protobuf_first or not wanted.json_acceptable:
        body = protobuf.encode(obj)
        if body is not None:
            return web.Response(body=body, status=status, headers={"Content-Type": protobuf.MEDIA_TYPE})
        if not wanted.json_acceptable:
            raise st.ApiError(406, "NotAcceptable", f"{obj.get('kind', 'this object')} has no protobuf form on "
                                                    "this server; accept application/json")
    return json_response(obj, status)


def _protobuf_served(request: web.Request, info: KindInfo | None) -> bool:
    """Built-in kinds take protobuf bodies; custom kinds are JSON/YAML only, as CRDs are in kube."""
    if request.method == "DELETE" or info is None:
        return True  # DeleteOptions, or a review: the envelope names the kind, and decode checks it
    return protobuf.message_for(info.api_version, info.kind) is not None


async def read_body(request: web.Request, patch: bool = False, info: KindInfo | None = None) -> Any:
    content_type = request.headers.get("Content-Type", "")
    base = content_type.split(";")[0].strip().lower()
    if not base and request.method in ("POST", "PUT"):
        base = "application/json"  # kube reads a create/update body without a Content-Type as JSON
    if is_protobuf(base) and not patch and not _protobuf_served(request, info):
        raise st.unsupported_media(content_type, BODY_TYPES[:2])
    if patch:
        if base not in PATCH_TYPES and base != APPLY:
            raise st.unsupported_media(content_type, PATCH_TYPES)
        if base == STRATEGIC and info is not None and not strategic.served(info):
            # a custom resource has no Go struct tags to merge by: kube answers 415 as well
            raise st.unsupported_media(content_type, [JSON_PATCH, MERGE, APPLY])
    elif (base not in JSON_TYPES and base not in YAML_TYPES and not is_protobuf(base)
          and not (request.method == "DELETE" and not base)):
        raise st.unsupported_media(content_type, BODY_TYPES)  # a PATCH without a Content-Type is 415
    try:
        raw = await request.read()
    except web.HTTPRequestEntityTooLarge:
        raise st.too_large(request.app[STATE_KEY].max_body) from None
    if not raw.strip():
        if request.method == "DELETE":
            return None
        raise st.bad_request("the request body is empty")
    if is_protobuf(base):
        try:
            return protobuf.decode(raw)
        except protobuf.ProtobufError as exc:
            raise st.bad_request(f"the request body is not a valid protobuf object: {exc}") from None
    if base in YAML_TYPES or base == APPLY:
        return yaml_bodies.load(raw)  # 400 for excessive aliasing, before anything is expanded
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise st.bad_request(f"the request body is not valid JSON: {exc}") from None
