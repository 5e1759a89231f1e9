"""REST handlers for every kind: get, list, watch, create, update, patch, delete, subresources.

One catch-all handler per API root parses the path (:mod:`paths`), checks the caller's
role (:mod:`auth`), and calls the registry. Bodies may be JSON or YAML; patches may be
merge, JSON or strategic-merge patches. Every error is a ``Status`` (:mod:`status`).
"""

from __future__ import annotations

from typing import Any

import orjson
from aiohttp import web

from federation.apiserver import (
    crds,
    discovery,
    field_labels,
    field_validation,
    keys,
    member_routes,
    params,
    paths,
    reviews,
    table,
    watch_stream,
)
from federation.apiserver import status as st
from federation.apiserver.apply import FIELD_MANAGER, FORCE, manager_for
from federation.apiserver.auth import User
from federation.apiserver.bodies import json_response, negotiated_response, read_body
from federation.apiserver.patch import APPLY
from federation.apiserver.protobuf.media import preference
from federation.apiserver.rbac.authorizer import CURRENT_USER, attributes
from federation.apiserver.registry import PODS, resource_key
from federation.apiserver.selectors import combine, parse_field_selector, parse_label_selector
from federation.apiserver.state import ApiServerState
from federation.apiserver.storage import Expired, StorageUnavailable, StoreFailed
from policies.kinds import KindInfo

Obj = dict[str, Any]


def _flag(value: str | None) -> bool:
    return (value or "").lower() in ("true", "1")


def _verb(request: web.Request, target: paths.Target) -> str:
    method = request.method
    if method == "GET":
        if target.name:
            return "get"
        return "watch" if _flag(request.query.get("watch")) else "list"
    if method == "POST":
        return "create"
    if method == "PUT":
        return "update"
    if method == "PATCH":
        return "patch"
    if method == "DELETE":
        return "delete" if target.name else "deletecollection"
    raise st.method_not_allowed(method, request.path)


def _body_name(body: Any) -> str:
    """``metadata.name`` of a body for authorization (the body is checked properly later)."""
    meta = body.get("metadata") if isinstance(body, dict) else None
    return str(meta.get("name") or "") if isinstance(meta, dict) else ""


class Handlers:
    def __init__(self, state: ApiServerState) -> None:
        self.state = state

    async def core(self, request: web.Request) -> web.StreamResponse:
        return await self.core_path(request, [p for p in request.match_info.get("tail", "").split("/") if p])

    async def core_path(self, request: web.Request, rest: list[str]) -> web.StreamResponse:
        if not rest:
            return json_response(discovery.api_versions(self.state.address))
        if rest[0] != "v1":
            raise st.path_not_found(request.path)
        if len(rest) == 1:
            return json_response(discovery.resource_list("", "v1"))
        return await self._serve(request, paths.parse("", "v1", rest[1:], request.path))

    async def groups(self, request: web.Request) -> web.StreamResponse:
        return await self.groups_path(request, [p for p in request.match_info.get("tail", "").split("/") if p])

    async def groups_path(self, request: web.Request, rest: list[str]) -> web.StreamResponse:
        if not rest:
            return json_response(discovery.group_list())
        if len(rest) == 1:
            doc = discovery.group(rest[0])
            if doc is None:
                raise st.path_not_found(request.path)
            return json_response(doc)
        if len(rest) == 2:
            doc = discovery.resource_list(rest[0], rest[1])
            if doc is None:
                raise st.path_not_found(request.path)
            return json_response(doc)
        if (rest[0], rest[1]) == (crds.GROUP, crds.VERSION):  # read-only CRDs of the custom kinds
            return await crds.serve(request, self.state, rest[2:])
        if (rest[0], rest[1]) in reviews.SERVED:
            return await reviews.serve(request, self.state, rest[0], rest[2:])
        return await self._serve(request, paths.parse(rest[0], rest[1], rest[2:], request.path))

    # -- dispatch ------------------------------------------------------------------------

    async def _serve(self, request: web.Request, target: paths.Target) -> web.StreamResponse:
        field_validation.begin("")
        response = await self._handle(request, target)
        warnings = field_validation.WARNINGS.get()
        if warnings and not response.prepared:
            for value in field_validation.header_values(warnings):
                response.headers.add("Warning", value)
        if not response.prepared:  # (a watch streams, gating each chunk itself)
            # Group commit: the write (or the state a read reveals) must be on disk before anyone
            # hears of it. Nothing ran between the registry call and here (no await), so the
            # store's resourceVersion is exactly what this answer reveals.
            try:
                await self.state.store.wait_durable(self.state.store.rv)
            except StoreFailed:
                if request.method != "GET":
                    raise  # the write was undone: 500 with the cause
                # a read that saw changes a failed commit undid: answer it again from what is durable
                response = await self._handle(request, target)
                await self.state.store.wait_durable(self.state.store.rv)
        return response

    async def _handle(self, request: web.Request, target: paths.Target) -> web.StreamResponse:
        verb = _verb(request, target)
        request[keys.VERB], request[keys.RESOURCE] = verb, target.resource_label
        user: User = request[keys.USER]
        if verb in ("create", "update", "patch"):
            field_validation.begin(field_validation.parse(request.query.get("fieldValidation"), verb))
        body: Any = None
        if request.method in ("POST", "PUT", "PATCH") or (request.method == "DELETE" and request.can_read_body):
            body = await read_body(request, patch=request.method == "PATCH",
                                   info=None if target.special == "bindings" else target.info)
        name = target.name
        if verb == "create" and not target.subresource:
            name = _body_name(body)
        info = target.info
        if target.special == "bindings":
            info = PODS
            name = _body_name(body)
        self._authorize(user, verb, target, name)
        CURRENT_USER.set(user)
        # Start from a cache at least as new as the backend (another replica may have written).
        try:
            await self.state.store.consistent()
        except StorageUnavailable as exc:
            if verb in ("get", "list", "watch"):
                raise
            raise StorageUnavailable(f"{exc}; the {verb} was not attempted: nothing changed") from None
        if member_routes.covers(self.state, target, verb, user):  # agents' pods and PodGroups (docs/protocol.md)
            return await member_routes.serve(self, request, verb, target)
        self._field_manager(request, verb, target)
        registry = self.state.registry
        dry_run = verb in ("create", "update", "patch") and params.dry_run(request.query.getall("dryRun", []), verb)
        if target.special == "bindings":
            await registry.bind(target.namespace or "", name, body)
            return json_response({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                                  "code": 201}, 201)
        assert info is not None
        ns = target.namespace if info.namespaced else ""
        if verb == "get":
            if target.subresource == "log":  # only the federation's member view has logs (its agents')
                raise st.ApiError(404, "NotFound", f'pods "{target.name}": this server keeps no container logs')
            return self._object(request, info, registry.get(info, ns or "", target.name))
        if verb == "list":
            return await self._list(request, info, ns)
        if verb == "watch":
            return await self._watch(request, info, ns)
        if verb == "create":
            if target.subresource == "binding":
                await registry.bind(ns or "", target.name, body)
                return json_response({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                                      "code": 201}, 201)
            if target.subresource == "token" and self.state.sa_tokens is not None:
                return json_response(self.state.sa_tokens.request(ns or "", target.name, body), 201)
            if target.subresource == "eviction":
                await registry.evict(ns or "", target.name, body)
                return json_response({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                                      "code": 201}, 201)
            if target.name or ns is None:
                raise st.method_not_allowed(request.method, request.path)
            return self._object(request, info, await registry.create(info, ns, body, dry_run), 201)
        if ns is None and verb != "deletecollection":
            raise st.method_not_allowed(request.method, request.path)
        if verb == "update":
            return self._object(request, info, await registry.update(info, ns or "", target.name, body,
                                                                     target.subresource, dry_run))
        if verb == "patch":
            content_type = request.headers.get("Content-Type", "")
            creates = (content_type.split(";")[0].strip().lower() == APPLY and not target.subresource
                       and self.state.store.get(resource_key(info), ns or "", target.name) is None)
            return self._object(request, info, await registry.patch(info, ns or "", target.name, content_type,
                                                                    body, target.subresource, dry_run),
                                201 if creates else 200)
        if verb in ("delete", "deletecollection"):
            options, dry_run = params.delete_options(body, request.query.get("propagationPolicy"),
                                                     request.query.getall("dryRun", []))
        if verb == "delete":
            return self._object(request, info, await registry.delete(info, ns or "", target.name, options,
                                                                     dry_run))
        if verb == "deletecollection":
            predicate = self._predicate(request, info)
            deleted = []
            for obj in list(registry.list(info, ns, predicate)):
                meta = obj["metadata"]
                try:
                    deleted.append(await registry.delete(info, meta.get("namespace") or "", meta["name"], options,
                                                         dry_run))
                except st.ApiError:
                    continue
            return json_response(self._list_doc(info, deleted, {}))
        raise st.method_not_allowed(request.method, request.path)

    def _field_manager(self, request: web.Request, verb: str, target: paths.Target) -> None:
        """Who owns what this write sets (managedFields): ``?fieldManager=`` or the client program."""
        query = request.query
        is_apply = request.headers.get("Content-Type", "").split(";")[0].strip().lower() == APPLY
        if _flag(query.get("force")) and not is_apply:
            raise st.ApiError(422, "Invalid", 'PatchOptions.meta.k8s.io "" is invalid: force: Forbidden: may not be '
                                              "specified for non-apply patch")
        if is_apply and not query.get("fieldManager"):
            FIELD_MANAGER.set(None)
        else:
            FIELD_MANAGER.set(manager_for(query.get("fieldManager"), request.headers.get("User-Agent", ""),
                                          target.subresource))
        FORCE.set(_flag(query.get("force")))

    def _authorize(self, user: User, verb: str, target: paths.Target, object_name: str) -> None:
        """RBAC on kube's request attributes (a create names no object: RBAC cannot restrict it by
        name); the object's name still goes to the agent restriction."""
        if target.special == "bindings":
            attrs = attributes(user, verb, "", "bindings", target.namespace or "")
        else:
            assert target.info is not None
            attrs = attributes(user, verb, target.info.group, target.info.plural, target.namespace or "",
                               target.name, target.subresource)
        self.state.authorizer.check(attrs, object_name)

    # -- responses -----------------------------------------------------------------------

    def _lookup(self, kind: str, namespace: str, name: str) -> Obj | None:
        return self.state.registry.context().get(kind, namespace, name)  # type: ignore[misc]

    def _object(self, request: web.Request, info: KindInfo, obj: Obj, code: int = 200) -> web.Response:
        if table.wants_table(request.headers.get("Accept", "")):
            doc = table.table(info, [obj], self.state.registry.clock(), self._lookup,
                              request.query.get("includeObject", "PartialObjectMetadata"),
                              {"resourceVersion": obj["metadata"].get("resourceVersion", "")})
            return json_response(doc, code)
        return negotiated_response(request, obj, code)

    def _predicate(self, request: web.Request, info: KindInfo) -> Any:
        return combine(parse_label_selector(request.query.get("labelSelector")),
                       parse_field_selector(request.query.get("fieldSelector"), field_labels.supported(info)))

    def _list_doc(self, info: KindInfo, items: list[Obj], meta: Obj) -> Obj:
        return {"kind": info.list_kind, "apiVersion": info.api_version, "metadata": meta, "items": items}

    async def _list(self, request: web.Request, info: KindInfo, ns: str | None, view: Any = None) -> web.Response:
        """``view`` serves a list instead of the store (member pods, member_view.MemberView: ``list``,
        ``list_after`` a continue key, ``page_key``, ``encoded`` JSON of its items)."""
        predicate = self._predicate(request, info)
        at = self.state.store.rv
        limit = params.limit(request.query.get("limit"))
        token = request.query.get("continue")
        if token and view is not None:
            after, at = params.decode_continue(token, 0)
            items = view.list_after(info, ns, predicate, after)
        elif token:
            # Every page of one list is read at the revision of its first page (410 once compacted;
            # a store without history, SQLite, pages through the current state while its hub reaches).
            store = self.state.store
            after, at = params.decode_continue(token, 0 if store.keeps_history else self.state.hub.floor)
            try:
                items = await store.list_at(resource_key(info), ns, at)
            except Expired:
                raise st.ApiError(410, "Expired", "The provided continue parameter is too old to display a "
                                                  "consistent list result. You can start a new list without "
                                                  "the continue parameter.") from None
            if predicate is not None:
                items = [o for o in items if predicate(o)]
            items = [o for o in items if (o["metadata"].get("namespace") or "", o["metadata"]["name"]) > after]
        else:
            items = (view.list if view is not None else self.state.registry.list)(info, ns, predicate)
        rv = str(at)
        meta: Obj = {"resourceVersion": rv}
        if 0 < limit < len(items):
            last = items[limit - 1]["metadata"]
            last_ns, last_name = (last.get("namespace") or "", last["name"]) if view is None else \
                view.page_key(items[limit - 1])
            meta["continue"] = params.encode_continue(at, last_ns, last_name)
            meta["remainingItemCount"] = len(items) - limit
            items = items[:limit]
        if table.wants_table(request.headers.get("Accept", "")):
            return json_response(table.table(info, items, self.state.registry.clock(), self._lookup,
                                             request.query.get("includeObject", "PartialObjectMetadata"), meta))
        if view is not None and not preference(request.headers.get("Accept", "")).protobuf_first:
            # the view keeps its objects' JSON: the list is a join of encoded items
            head = orjson.dumps(self._list_doc(info, [], meta))[:-2]  # ...,"items":[  (drop the "]}")
            body = head + b",".join(view.encoded(items)) + b"]}"
            return web.Response(body=body, content_type="application/json")
        return negotiated_response(request, self._list_doc(info, items, meta))

    async def _watch(self, request: web.Request, info: KindInfo, ns: str | None, lister: Any = None,
                     resource: str | None = None) -> web.StreamResponse:
        """With ``lister`` and ``resource``: a view's watch (its own hub key; no store history)."""
        return await watch_stream.serve(self.state, request, info, ns, self._predicate(request, info),
                                        lister, resource)
