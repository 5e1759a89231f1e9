"""``apiextensions.k8s.io/v1`` CustomResourceDefinitions, read-only: one for every custom kind served.

In kube, Volcano's, Karmada's and Kubeflow's kinds exist because their CRDs were installed, and
tools find them that way (lightkube's generic resources, kopf's resource observation, ``kubectl get
crds``). Caldera serves a fixed table of kinds (``policies/kinds.py``), so it answers get, list and
watch of CRDs generated from that table, each version's ``openAPIV3Schema`` being the schema the API
validates that kind against (the OpenAPI documents' schema with every reference inlined). Creating,
changing or deleting a CRD is out of scope: 405 MethodNotAllowed saying so.
"""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime
from functools import cache
from typing import TYPE_CHECKING, Any

from aiohttp import web

from federation.apiserver import discovery, field_labels, keys, openapi, params
from federation.apiserver import status as st
from federation.apiserver.bodies import json_response
from federation.apiserver.rbac.authorizer import attributes
from federation.apiserver.selectors import combine, parse_field_selector, parse_label_selector
from federation.apiserver.strategic import served as builtin
from policies.kinds import KINDS, KindInfo

if TYPE_CHECKING:
    from federation.apiserver.state import ApiServerState

Obj = dict[str, Any]
GROUP, VERSION, PLURAL = "apiextensions.k8s.io", "v1", "customresourcedefinitions"
API_VERSION = f"{GROUP}/{VERSION}"
OUT_OF_SCOPE = ("CustomResourceDefinitions are read-only on Caldera: it serves a fixed set of kinds "
                "(policies/kinds.py), so creating, changing or deleting CRDs is out of scope")
INFO = KindInfo(GROUP, VERSION, "CustomResourceDefinition", PLURAL, False, "", has_status=False)
_STARTED = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

discovery.register(GROUP, VERSION, [{"name": PLURAL, "singularName": "customresourcedefinition",
                                     "namespaced": False, "kind": "CustomResourceDefinition",
                                     "verbs": ["get", "list", "watch"], "shortNames": ["crd", "crds"]}])


def _inline(node: Any, schemas: dict[str, Obj], seen: frozenset[str] = frozenset()) -> Any:
    """A schema with every ``$ref`` replaced by its definition (a CRD schema has no references).
    A recursive definition stops at its repetition, left open as kube's structural schemas must."""
    if isinstance(node, list):
        return [_inline(n, schemas, seen) for n in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str):
        name = ref.rsplit("/", 1)[-1]
        if name in seen or name not in schemas:
            return {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
        return _inline(schemas[name], schemas, seen | {name})
    out: Obj = {}
    for key, value in node.items():
        if key == "allOf" and isinstance(value, list) and len(value) == 1:
            out.update(_inline(value[0], schemas, seen))
        elif key != "x-kubernetes-group-version-kind":
            out[key] = _inline(value, schemas, seen)
    return out


@cache
def version_schema(info: KindInfo) -> Obj:
    schemas = openapi.kind_schemas(info, "#/components/schemas/")
    top = schemas[openapi._schema_name(info)]
    return {"openAPIV3Schema": _inline(top, schemas)}


def custom_kinds() -> list[KindInfo]:
    return [k for k in KINDS if not builtin(k)]


def _names(info: KindInfo) -> Obj:
    names: Obj = {"plural": info.plural, "singular": info.singular, "kind": info.kind, "listKind": info.list_kind}
    if info.short_names:
        names["shortNames"] = list(info.short_names)
    if discovery.categories(info):
        names["categories"] = discovery.categories(info)
    return names


def definition(name: str) -> Obj | None:
    """The CRD ``<plural>.<group>``, or None for a name no custom kind has."""
    versions = [k for k in custom_kinds() if f"{k.plural}.{k.group}" == name]
    if not versions:
        return None
    first = versions[0]
    served = [{"name": k.version, "served": True, "storage": k is first, "schema": version_schema(k),
               **({"subresources": {"status": {}}} if k.has_status else {})} for k in versions]
    names = _names(first)
    conditions = [{"type": t, "status": "True", "lastTransitionTime": _STARTED, "reason": r, "message": m}
                  for t, r, m in (("NamesAccepted", "NoConflicts", "no conflicts found"),
                                  ("Established", "InitialNamesAccepted", "the initial names have been accepted"))]
    return {"apiVersion": API_VERSION, "kind": "CustomResourceDefinition",
            "metadata": {"name": name, "uid": str(uuid.uuid5(uuid.NAMESPACE_URL, f"caldera/crd/{name}")),
                         "resourceVersion": "1", "generation": 1, "creationTimestamp": _STARTED},
            "spec": {"group": first.group, "names": names, "scope": "Namespaced" if first.namespaced else "Cluster",
                     "versions": served, "conversion": {"strategy": "None"}},
            "status": {"conditions": conditions, "acceptedNames": names,
                       "storedVersions": [first.version]}}


def definitions() -> list[Obj]:
    names = sorted({f"{k.plural}.{k.group}" for k in custom_kinds()})
    return [d for d in (definition(n) for n in names) if d is not None]


async def serve(request: web.Request, state: "ApiServerState", rest: list[str]) -> web.StreamResponse:
    if not rest or rest[0] != PLURAL or len(rest) > 2:
        raise st.path_not_found(request.path)
    name = rest[1] if len(rest) == 2 else ""
    watching = request.method == "GET" and not name and request.query.get("watch") in ("true", "True", "1")
    verb = {"GET": "get" if name else ("watch" if watching else "list"), "POST": "create", "PUT": "update",
            "PATCH": "patch", "DELETE": "delete" if name else "deletecollection"}.get(request.method, "")
    request[keys.VERB], request[keys.RESOURCE] = verb, PLURAL
    state.authorizer.check(attributes(request[keys.USER], verb or "get", GROUP, PLURAL, "", name))
    if verb not in ("get", "list", "watch"):
        raise st.ApiError(405, "MethodNotAllowed", f"{verb or request.method} {PLURAL}.{GROUP}: {OUT_OF_SCOPE}")
    if name:
        found = definition(name)
        if found is None:
            raise st.not_found(INFO, name)
        return json_response(found)
    predicate = combine(parse_label_selector(request.query.get("labelSelector")),
                        parse_field_selector(request.query.get("fieldSelector"), field_labels.META))
    items = [d for d in definitions() if predicate is None or predicate(d)]
    if not watching:
        return json_response({"apiVersion": API_VERSION, "kind": "CustomResourceDefinitionList",
                              "metadata": {"resourceVersion": str(state.store.rv)}, "items": items})
    return await _watch(request, state, items)


async def _watch(request: web.Request, state: "ApiServerState", items: list[Obj]) -> web.StreamResponse:
    """ADDED for each definition (unless watching from a resourceVersion), then nothing changes
    until the watch times out or the server stops."""
    import orjson

    timeout = params.watch_timeout(request.query.get("timeoutSeconds"))
    response = web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
    await response.prepare(request)
    if request.query.get("resourceVersion") in (None, "", "0"):
        await response.write(b"".join(orjson.dumps({"type": "ADDED", "object": d}) + b"\n" for d in items))
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    try:
        while not state.stopping and loop.time() < deadline:
            await asyncio.sleep(min(1.0, max(0.0, deadline - loop.time())))
    except (ConnectionResetError, asyncio.CancelledError):
        pass
    return response
