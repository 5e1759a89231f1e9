"""Requests for member Pods and PodGroups at the federation (docs/protocol.md "Member pods").

* Reads outside the execution namespaces (``GET /api/v1/pods``, ``.../namespaces/team/pods``,
  ``.../pods/NAME``, watches, the PodGroups the same way) are served from the
  :class:`~federation.apiserver.member_view.MemberView`: every copy the agents report, translated
  back to its member namespace and name.
* Writes there answer 405 naming the member cluster: users change pods in the member cluster.
* ``GET .../pods/NAME/log`` asks the pod's agent for the log (federation/apiserver/member_logs.py).
* In ``karmada-es-<cluster>`` the raw copies are ordinary objects; only agents write them (the
  agent restriction then allows only ``karmada-es-<its cluster>``); anyone else gets 405 too.
In ``--member-mode`` none of this applies: pods and PodGroups are the writable kinds they were.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from federation.apiserver import keys, paths
from federation.apiserver.auth import User
from federation.apiserver.bodies import json_response
from federation.apiserver.member_logs import serve_log
from federation.apiserver.member_view import (
    PODS,
    cluster_of,
    is_execution_namespace,
    is_member_kind,
    read_only,
    view_key,
)
from federation.apiserver.rbac.agents import agent_cluster
from federation.apiserver.rbac.authorizer import attributes
from federation.apiserver.state import ApiServerState
from federation.apiserver.status import not_found, path_not_found

Obj = dict[str, Any]
READS = ("get", "list", "watch")


def covers(state: ApiServerState, target: paths.Target, verb: str, user: User) -> bool:
    """Whether a request is the view's, or a refused write of a raw copy by a non-agent."""
    if state.members is None:
        return False
    if target.special == "bindings":
        return not is_execution_namespace(target.namespace)
    if not is_member_kind(target.info):
        return False
    if is_execution_namespace(target.namespace):
        return verb not in READS and agent_cluster(user.groups) is None
    return True


async def serve(handlers: Any, request: web.Request, verb: str, target: paths.Target) -> web.StreamResponse:
    state = handlers.state
    view = state.members
    assert view is not None
    info = target.info
    if target.special == "bindings" or info is None:
        raise read_only(PODS, target.namespace, "", view, "create")
    if is_execution_namespace(target.namespace):
        raise read_only(info, None, target.name, view, verb)
    if target.subresource == "log" and verb == "get":
        return await serve_log(state, request, view.get(info, target.namespace or "", target.name))
    if verb not in READS or target.subresource:
        raise read_only(info, target.namespace, target.name, view, verb)
    ns = target.namespace
    if verb == "get":
        return handlers._object(request, info, view.get(info, ns or "", target.name))
    if verb == "list":
        return await handlers._list(request, info, ns, view=view)
    return await handlers._watch(request, info, ns, lister=view.list, resource=view_key(info))


#: karmada-search's proxy: the same objects under this prefix (``kubectl --server URL+PREFIX`` works too)
KARMADA_PROXY = "/apis/search.karmada.io/v1alpha1/proxying/karmada/proxy"


def add_karmada_proxy(app: web.Application, handlers: Any) -> None:
    """``PREFIX/api/...`` and ``PREFIX/apis/...`` answer as ``/api/...`` and ``/apis/...`` do: the
    member pods and PodGroups (and, as karmada-search forwards what it does not cache, the rest)."""

    async def proxy(request: web.Request) -> web.StreamResponse:
        parts = [p for p in request.match_info.get("tail", "").split("/") if p]
        if parts[:1] == ["api"]:
            return await handlers.core_path(request, parts[1:])
        if parts[:1] == ["apis"]:
            return await handlers.groups_path(request, parts[1:])
        raise path_not_found(request.path)

    app.router.add_route("*", KARMADA_PROXY + "/{tail:.*}", proxy)


#: Karmada's cluster access proxy, for the pods of one member cluster (``karmadactl get/logs -C``)
CLUSTER_PROXY = "/apis/cluster.karmada.io/v1alpha1/clusters/{cluster}/proxy/api/v1"


def add_cluster_proxy(app: web.Application, handlers: Any) -> None:
    """``GET .../clusters/C/proxy/api/v1/[namespaces/NS/]pods[/NAME[/log]]``: the copies cluster ``C``
    reports (during a failover, the other cluster's copy of a name too). Needs ``get clusters/proxy``
    on ``C`` (as Karmada) and ``get``/``list`` on the pods (or ``pods/log``) where they are."""

    async def proxy(request: web.Request) -> web.StreamResponse:
        cluster = request.match_info["cluster"]
        state = handlers.state
        view = state.members
        user = request[keys.USER]
        parts = [p for p in request.match_info.get("tail", "").split("/") if p]
        target = paths.parse("", "v1", parts, request.path)
        if view is None or target.info is None or target.info.kind != "Pod" or target.subresource not in ("", "log"):
            raise path_not_found(request.path)  # only pods (and their logs) are cached from the members
        state.authorizer.check(attributes(user, "get", "cluster.karmada.io", "clusters", "", cluster, "proxy"))
        verb = "get" if target.name else "list"
        state.authorizer.check(attributes(user, verb, "", "pods", target.namespace or "", target.name,
                                          target.subresource))
        if not target.name:
            items = [p for p in view.list(PODS, target.namespace, None) if cluster_of(p) == cluster]
            return json_response({"kind": "PodList", "apiVersion": "v1",
                                  "metadata": {"resourceVersion": str(state.store.rv)}, "items": items})
        copy = view.copies(PODS, target.namespace or "", target.name).get(cluster)
        if copy is None:
            raise not_found(PODS, target.name)
        if target.subresource == "log":
            return await serve_log(state, request, copy)
        return json_response(copy)

    app.router.add_get(CLUSTER_PROXY + "/{tail:.*}", proxy)
