"""OpenAPI v3 (and v2) documents generated from the pydantic models' JSON schemas.

``/openapi/v3`` lists one document per group-version; each holds the kinds' schemas (tagged
with ``x-kubernetes-group-version-kind`` so ``kubectl explain`` finds them) and their paths,
whose write operations advertise the ``fieldValidation`` parameter. kubectl then relies on
the server's field validation (Strict, Warn or Ignore: :mod:`federation.apiserver.field_validation`)
instead of validating client-side. JSON Schema constructs OpenAPI 3.0 lacks (``null`` in ``anyOf``,
``const``, ``$defs``) are rewritten; open sub-objects stay permissive.
"""

from __future__ import annotations

import hashlib
from functools import cache, lru_cache
from typing import Any

import orjson
from aiohttp import web

from federation.apiserver import openapi_proto
from federation.apiserver.apply.list_types import FieldPath, ListType, lists_of
from policies.api_docs import DescribedSchema
from policies.kinds import KINDS, KindInfo

Obj = dict[str, Any]
_ACTIONS = {"get": "read", "put": "replace", "patch": "patch", "delete": "delete"}
_BOUNDS = {"ge": "minimum", "le": "maximum"}


def _gv_path(info: KindInfo) -> str:
    return f"apis/{info.group}/{info.version}" if info.group else "api/v1"


def _schema_name(info: KindInfo, model: str | None = None) -> str:
    base = f"io.caldera.{info.group or 'core'}.{info.version}.{info.kind}"
    return f"{base}.{model}" if model else base


def _clean(node: Any, ref_prefix: str, defs_prefix: str) -> Any:
    """JSON Schema (pydantic) -> OpenAPI 3.0 / Swagger 2.0 schema."""
    if isinstance(node, list):
        return [_clean(n, ref_prefix, defs_prefix) for n in node]
    if not isinstance(node, dict):
        return node
    out: Obj = {}
    for key, value in node.items():
        if key in ("title", "$defs", "discriminator", "examples"):
            continue
        if key == "$ref":
            out[key] = value.replace("#/$defs/", f"{ref_prefix}{defs_prefix}.")
        elif key == "const":
            out["enum"] = [value]
        elif key in _BOUNDS:  # pydantic's constraint names where it could not write JSON Schema's
            out[_BOUNDS[key]] = value
        elif key == "propertyNames":  # map keys' patterns: not in OpenAPI 3.0; the server checks them
            continue
        elif key in ("anyOf", "oneOf"):
            options = [o for o in value if o != {"type": "null"}]
            if len(options) == 1:
                single = _clean(options[0], ref_prefix, defs_prefix)
                if "$ref" in single:
                    out["allOf"] = [single]
                else:
                    out.update(single)
            else:
                # unions (quantity: int or string) are left open: the server validates them
                out["x-kubernetes-int-or-string"] = True if all(
                    o.get("type") in ("integer", "string") for o in options) else None
                if out["x-kubernetes-int-or-string"] is None:
                    del out["x-kubernetes-int-or-string"]
        elif key in ("properties", "patternProperties"):
            out[key] = {k: _clean(v, ref_prefix, defs_prefix) for k, v in value.items()}
        elif key == "type" and isinstance(value, list):
            types = [t for t in value if t != "null"]
            if len(types) == 1:
                out["type"] = types[0]
        elif key == "default" and value is None:
            continue
        else:
            out[key] = _clean(value, ref_prefix, defs_prefix)
    if "$ref" in out and len(out) > 1:
        ref = out.pop("$ref")
        out["allOf"] = [{"$ref": ref}]
    return out


def _markers(declared: ListType) -> Obj:
    kind, keys = declared
    return {"x-kubernetes-list-type": kind, **({"x-kubernetes-list-map-keys": list(keys)} if keys else {})}


def _mark_lists(node: Any, defs: Obj, lists: dict[FieldPath, ListType], path: FieldPath = (),
                seen: frozenset[str] = frozenset()) -> None:
    """Put server-side apply's list types (:mod:`federation.apiserver.apply.list_types`) on the array
    properties of a kind's JSON schema, following ``$ref``s along each path. A definition is marked
    where its field's path reaches it, as a Go type's field carries one marker wherever it is used."""
    if not isinstance(node, dict):
        return
    ref = node.get("$ref", "")
    if ref.startswith("#/$defs/"):
        name = ref.rsplit("/", 1)[1]
        if name not in seen:  # recursive schemas stop at their first repetition
            _mark_lists(defs.get(name), defs, lists, path, seen | {name})
    for key in ("anyOf", "oneOf", "allOf"):
        for option in node.get(key) or []:
            _mark_lists(option, defs, lists, path, seen)
    if node.get("type") == "array" or "items" in node:
        if path in lists:
            node.update(_markers(lists[path]))
        _mark_lists(node.get("items"), defs, lists, path, seen)
    for prop, schema in (node.get("properties") or {}).items():
        _mark_lists(schema, defs, lists, path + (prop,), seen)


@cache
def _json_schema(info: KindInfo) -> Obj:
    """The kind's JSON schema with descriptions (:mod:`policies.api_docs`) and list markers. Made once per
    kind: pydantic takes seconds for all kinds, and the v3 and v2 documents and the CRDs all need it.
    Callers must not change it (:func:`_clean` builds new objects)."""
    try:
        raw = info.model.model_json_schema(by_alias=True, mode="validation", schema_generator=DescribedSchema)
    except Exception:  # a model still being written, or a schema pydantic cannot express: stay open
        raw = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    _mark_lists(raw, raw.get("$defs", {}), lists_of(info.api_version, info.kind))
    return raw


def kind_schemas(info: KindInfo, ref_prefix: str) -> dict[str, Obj]:
    """Schemas of one kind (its own and its sub-objects'), named under the kind's prefix."""
    name = _schema_name(info)
    raw = _json_schema(info)
    defs = raw.get("$defs", {})
    schemas = {f"{name}.{k}": _clean(v, ref_prefix, name) for k, v in defs.items()}
    top = _clean(raw, ref_prefix, name)
    top["x-kubernetes-group-version-kind"] = [{"group": info.group, "version": info.version, "kind": info.kind}]
    schemas[name] = top
    return schemas


def _parameters(names: list[str], in_: str = "query") -> list[Obj]:
    return [{"name": n, "in": in_, "schema": {"type": "string", "uniqueItems": True}} for n in names]


def _paths(info: KindInfo, schema_ref: str) -> dict[str, Obj]:
    gvk = {"group": info.group, "version": info.version, "kind": info.kind}
    prefix = "/" + _gv_path(info) + ("/namespaces/{namespace}" if info.namespaced else "")
    path_params = [{"name": "name", "in": "path", "required": True, "schema": {"type": "string"}}]
    if info.namespaced:
        path_params.append({"name": "namespace", "in": "path", "required": True, "schema": {"type": "string"}})
    response = {"200": {"description": "OK", "content": {"application/json": {"schema": {"$ref": schema_ref}}}}}
    write_params = _parameters(["dryRun", "fieldManager", "fieldValidation"])

    def op(verb: str, action: str, params: list[Obj]) -> Obj:
        return {"operationId": f"{action}{info.kind}", "tags": [info.group or "core"],
                "parameters": params, "responses": response,
                "x-kubernetes-action": verb, "x-kubernetes-group-version-kind": gvk}

    collection = f"{prefix}/{info.plural}"
    item = f"{collection}/{{name}}"
    body = {"content": {"application/json": {"schema": {"$ref": schema_ref}}}, "required": True}
    paths: dict[str, Obj] = {
        collection: {"get": op("list", "list", _parameters(["labelSelector", "fieldSelector", "limit", "continue",
                                                             "watch", "resourceVersion", "timeoutSeconds"])),
                     "post": dict(op("post", "create", write_params), requestBody=body)},
        item: {"get": op("get", "read", []),
               "put": dict(op("put", "replace", write_params), requestBody=body),
               "patch": dict(op("patch", "patch", write_params + _parameters(["force"])),
                             requestBody={"content": {"application/merge-patch+json": {"schema": {"type": "object"}}}}),
               "delete": op("delete", "delete", _parameters(["propagationPolicy", "gracePeriodSeconds"])),
               "parameters": path_params},
    }
    if info.has_status:
        paths[f"{item}/status"] = {"get": op("get", "readStatus", []),
                                   "put": op("put", "replaceStatus", write_params),
                                   "patch": op("patch", "patchStatus", write_params),
                                   "parameters": path_params}
    return paths


@cache
def v3_document(gv_path: str) -> bytes:
    schemas: dict[str, Obj] = {}
    paths: dict[str, Obj] = {}
    for info in KINDS:
        if _gv_path(info) != gv_path:
            continue
        schemas.update(kind_schemas(info, "#/components/schemas/"))
        paths.update(_paths(info, f"#/components/schemas/{_schema_name(info)}"))
    doc = {"openapi": "3.0.0", "info": {"title": "Caldera", "version": gv_path}, "paths": paths,
           "components": {"schemas": schemas}}
    return orjson.dumps(doc)


def _hash(gv_path: str) -> str:
    return hashlib.sha256(v3_document(gv_path)).hexdigest()[:32].upper()


def v3_index() -> Obj:
    gvs = sorted({_gv_path(info) for info in KINDS})
    return {"paths": {gv: {"serverRelativeURL": f"/openapi/v3/{gv}?hash={_hash(gv)}"} for gv in gvs}}


def _sibling_refs(node: Any) -> Any:
    """Swagger 2.0 as kube-apiserver writes it: a field of a named type is ``$ref`` with its description
    beside it, not ``allOf: [$ref]`` (kube-openapi's v2 reader, behind ``kubectl explain
    --output=plaintext-openapiv2``, follows only a direct ``$ref``)."""
    if isinstance(node, list):
        return [_sibling_refs(n) for n in node]
    if not isinstance(node, dict):
        return node
    out = {k: _sibling_refs(v) for k, v in node.items()}
    parts = out.get("allOf")
    if isinstance(parts, list) and len(parts) == 1 and set(parts[0]) == {"$ref"}:
        del out["allOf"]
        out["$ref"] = parts[0]["$ref"]
    return out


@lru_cache(maxsize=1)
def _v2() -> Obj:
    definitions: dict[str, Obj] = {}
    for info in KINDS:
        definitions.update(kind_schemas(info, "#/definitions/"))
    return {"swagger": "2.0", "info": {"title": "Caldera", "version": "v1"}, "paths": {},
            "definitions": _sibling_refs(definitions)}


@lru_cache(maxsize=1)
def v2_document() -> bytes:
    return orjson.dumps(_v2())


@lru_cache(maxsize=1)
def v2_protobuf() -> bytes:
    return openapi_proto.document(_v2())


def add_routes(app: web.Application) -> None:
    async def v2(request: web.Request) -> web.Response:
        accept = request.headers.get("Accept", "")
        if any(media in accept for media in openapi_proto.MEDIA_TYPES):  # kubectl's only form
            return web.Response(body=v2_protobuf(), headers={"Content-Type": openapi_proto.MEDIA_TYPE})
        if "protobuf" in accept and "json" not in accept:
            return web.Response(status=406, text=f"served as application/json or {openapi_proto.MEDIA_TYPE}")
        return web.Response(body=v2_document(), content_type="application/json")

    async def v3(_request: web.Request) -> web.Response:
        return web.Response(body=orjson.dumps(v3_index()), content_type="application/json")

    async def v3_gv(request: web.Request) -> web.Response:
        gv = request.match_info["gv"].strip("/")
        if gv not in v3_index()["paths"]:
            return web.Response(status=404, text=f"no OpenAPI document for {gv}")
        return web.Response(body=v3_document(gv), content_type="application/json",
                            headers={"Cache-Control": "public, immutable"})

    app.router.add_get("/openapi/v2", v2)
    app.router.add_get("/openapi/v3", v3)
    app.router.add_get("/openapi/v3/{gv:.+}", v3_gv)
