"""Authorization and authentication reviews, answered from the same authorizer requests meet.

* ``authorization.k8s.io/v1`` SelfSubjectAccessReview (``kubectl auth can-i``),
  SelfSubjectRulesReview (``kubectl auth can-i --list``), SubjectAccessReview and
  LocalSubjectAccessReview (for whoever may create them: cluster-admin, and namespace
  admins for the local one);
* ``authentication.k8s.io/v1`` SelfSubjectReview (``kubectl auth whoami``) and TokenReview (who a
  bearer token is: kube's webhook token authentication, kr8s ``whoami``).

Each is a create-only resource: the answer is the request with ``status`` filled in (201),
nothing is stored. kubectl sends them as protobuf (:mod:`federation.apiserver.protobuf`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aiohttp import web

from federation.apiserver import discovery, keys
from federation.apiserver import status as st
from federation.apiserver.auth import User, with_default_groups
from federation.apiserver.bodies import json_response, read_body
from federation.apiserver.rbac.authorizer import attributes
from federation.apiserver.rbac.evaluator import Attributes
from policies.kinds import KindInfo

if TYPE_CHECKING:
    from federation.apiserver.state import ApiServerState

Obj = dict[str, Any]
AUTHZ, AUTHN = "authorization.k8s.io", "authentication.k8s.io"
#: (group, plural) -> (kind, namespaced)
REVIEWS: dict[tuple[str, str], tuple[str, bool]] = {
    (AUTHZ, "selfsubjectaccessreviews"): ("SelfSubjectAccessReview", False),
    (AUTHZ, "selfsubjectrulesreviews"): ("SelfSubjectRulesReview", False),
    (AUTHZ, "subjectaccessreviews"): ("SubjectAccessReview", False),
    (AUTHZ, "localsubjectaccessreviews"): ("LocalSubjectAccessReview", True),
    (AUTHN, "selfsubjectreviews"): ("SelfSubjectReview", False),
    (AUTHN, "tokenreviews"): ("TokenReview", False),
}
SERVED = {(AUTHZ, "v1"), (AUTHN, "v1")}

#: KindInfo stand-ins, so that read_body takes the reviews' protobuf bodies (kubectl sends them so)
REVIEW_INFO = {kind: KindInfo(group, "v1", kind, plural, namespaced, "", has_status=False)
               for (group, plural), (kind, namespaced) in REVIEWS.items()}

for (_group, _plural), (_kind, _namespaced) in REVIEWS.items():
    discovery.register(_group, "v1", [{"name": _plural, "singularName": _kind.lower(), "namespaced": _namespaced,
                                       "kind": _kind, "verbs": ["create"]}])


def _review_attributes(user: str, groups: tuple[str, ...], spec: Obj, kind: str) -> Attributes:
    resource = spec.get("resourceAttributes")
    non_resource = spec.get("nonResourceAttributes")
    if isinstance(resource, dict):
        return Attributes(user, groups, str(resource.get("verb") or ""), str(resource.get("namespace") or ""),
                          str(resource.get("group") or ""), str(resource.get("resource") or ""),
                          str(resource.get("subresource") or ""), str(resource.get("name") or ""))
    if isinstance(non_resource, dict):
        return Attributes(user, groups, str(non_resource.get("verb") or ""), path=str(non_resource.get("path") or "/"))
    raise st.ApiError(422, "Invalid", f'{kind}.{AUTHZ} "" is invalid: spec.resourceAttributes: Invalid value: '
                                      '"null": exactly one of nonResourceAttributes or resourceAttributes must be '
                                      'specified', {"kind": kind, "group": AUTHZ})


def _answer(body: Obj, status: Obj) -> web.Response:
    meta = dict(body.get("metadata") or {})
    meta.setdefault("creationTimestamp", None)
    return json_response(dict(body, metadata=meta, status=status), 201)


def access_status(state: "ApiServerState", attrs: Attributes) -> Obj:
    decision = state.authorizer.decide(attrs)
    status: Obj = {"allowed": decision.allowed}
    if decision.reason:
        status["reason"] = decision.reason
    return status


def rules_status(state: "ApiServerState", user: User, namespace: str) -> Obj:
    rules, errors = state.authorizer.rules(user, namespace)
    status: Obj = {
        "resourceRules": [{k: v for k, v in r.to_dict().items() if k != "nonResourceURLs"}
                          for r in rules if not r.non_resource_urls],
        "nonResourceRules": [{"verbs": list(r.verbs), "nonResourceURLs": list(r.non_resource_urls)}
                             for r in rules if r.non_resource_urls],
        "incomplete": bool(errors),
    }
    if errors:
        status["evaluationError"] = "; ".join(errors)
    return status


def token_status(state: "ApiServerState", spec: Any) -> Obj:
    """Who a bearer token (static token file or ServiceAccount JWT) authenticates as, if anyone."""
    token = str(spec.get("token") or "").strip() if isinstance(spec, dict) else ""
    if not token:
        raise st.ApiError(422, "Invalid", f'TokenReview.{AUTHN} "" is invalid: spec.token: Required value',
                          {"kind": "TokenReview", "group": AUTHN})
    user = state.auth.authenticate(token)
    if user is None and state.sa_tokens is not None:
        user = state.sa_tokens.authenticate(token)
    if user is None:
        return {"authenticated": False, "user": {}, "error": "invalid bearer token"}
    user = with_default_groups(user)
    audiences = spec.get("audiences") if isinstance(spec.get("audiences"), list) else []
    return {"authenticated": True, "user": {"username": user.name, "uid": user.uid, "groups": list(user.groups)},
            "audiences": [str(a) for a in audiences]}


async def serve(request: web.Request, state: "ApiServerState", group: str, rest: list[str]) -> web.StreamResponse:
    namespace = ""
    if len(rest) == 3 and rest[0] == "namespaces":
        namespace, rest = rest[1], rest[2:]
    entry = REVIEWS.get((group, rest[0])) if len(rest) == 1 else None
    if entry is None or entry[1] != bool(namespace):
        raise st.path_not_found(request.path)
    kind, _ = entry
    request[keys.VERB], request[keys.RESOURCE] = "create", rest[0]
    if request.method != "POST":
        raise st.method_not_allowed(request.method, request.path)
    user: User = request[keys.USER]
    state.authorizer.check(attributes(user, "create", group, rest[0], namespace))
    body = await read_body(request, info=REVIEW_INFO[kind])
    if not isinstance(body, dict):
        raise st.bad_request(f"the request body must be a JSON object describing a {kind}")
    body = dict(body, apiVersion=f"{group}/v1", kind=kind)
    spec = body.get("spec") or {}
    groups = tuple(user.groups)
    if kind == "SelfSubjectReview":
        info: Obj = {"username": user.name, "uid": user.uid, "groups": list(groups)}
        return _answer(body, {"userInfo": info})
    if kind == "TokenReview":
        return _answer(body, token_status(state, spec))
    if kind == "SelfSubjectRulesReview":
        return _answer(body, rules_status(state, user, str(spec.get("namespace") or "")))
    if kind == "SelfSubjectAccessReview":
        return _answer(body, access_status(state, _review_attributes(user.name, groups, spec, kind)))
    who, their_groups = str(spec.get("user") or ""), tuple(str(g) for g in spec.get("groups") or ())
    if not who and not their_groups:
        raise st.ApiError(422, "Invalid", f'{kind}.{AUTHZ} "" is invalid: spec.user: Invalid value: "": at least '
                                          'one of user or group must be specified', {"kind": kind, "group": AUTHZ})
    attrs = _review_attributes(who, their_groups, spec, kind)
    if kind == "LocalSubjectAccessReview" and attrs.resource_request and attrs.namespace != namespace:
        raise st.ApiError(422, "Invalid", f'{kind}.{AUTHZ} "" is invalid: spec.resourceAttributes.namespace: '
                                          f'Invalid value: "{attrs.namespace}": must match metadata.namespace',
                          {"kind": kind, "group": AUTHZ})
    return _answer(body, access_status(state, attrs))
