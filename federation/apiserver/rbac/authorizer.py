"""The API server's authorizer: system:masters, then RBAC over the stored policy, then the agent
restriction; refusals as kube-apiserver words them.

The policy snapshot (:class:`~federation.apiserver.rbac.evaluator.Policy`) is rebuilt only after
an RBAC object changes (a store listener drops it), so a request costs one pass over the bindings.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from federation.apiserver import status as st
from federation.apiserver.rbac import agents
from federation.apiserver.rbac.evaluator import Attributes, Decision, Policy, authorize, rules_for

if TYPE_CHECKING:
    from federation.apiserver.auth import User
    from federation.apiserver.store import Store

RBAC = "rbac.authorization.k8s.io"
MASTERS = "system:masters"
#: Historical hint kept for Caldera's read-only tokens (the reason kube appends after ": ").
VIEWER_HINT = "viewers may only get, list and watch"
#: The user of the request being served (escalation checks run deep inside the registry).
CURRENT_USER: ContextVar["User | None"] = ContextVar("caldera_current_user", default=None)
#: (allowed, reason) of the request's last authorization, for the audit log's annotations.
DECISION: ContextVar["tuple[bool, str] | None"] = ContextVar("caldera_authz_decision", default=None)


def forbidden_message(attrs: Attributes) -> str:
    """kube's ``forbiddenMessage``: what the user cannot do, word for word."""
    if not attrs.resource_request:
        return f'User "{attrs.user}" cannot {attrs.verb} path "{attrs.path}"'
    resource = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
    where = f'in the namespace "{attrs.namespace}"' if attrs.namespace else "at the cluster scope"
    return f'User "{attrs.user}" cannot {attrs.verb} resource "{resource}" in API group "{attrs.api_group}" {where}'


def forbidden(attrs: Attributes, reason: str = "") -> st.ApiError:
    """A 403 Status as kube's ``NewForbidden(groupResource, name, message: reason)``."""
    message = forbidden_message(attrs) + (f": {reason}" if reason else "")
    return forbidden_error(attrs.api_group, attrs.resource if attrs.resource_request else "", attrs.name, message)


def forbidden_error(group: str, resource: str, name: str, message: str) -> st.ApiError:
    if not resource:
        return st.ApiError(403, "Forbidden", f"forbidden: {message}")
    qualified = f"{resource}.{group}" if group else resource
    details: dict[str, Any] = {"group": group, "kind": resource}
    if name:
        details["name"] = name
        return st.ApiError(403, "Forbidden", f'{qualified} "{name}" is forbidden: {message}', details)
    return st.ApiError(403, "Forbidden", f"{qualified} is forbidden: {message}", details)


class Authorizer:
    def __init__(self, store: "Store") -> None:
        self.store = store
        self._policy: Policy | None = None
        store.add_listener(self._changed)
        store.add_rollback_listener(lambda _rv, _changes: setattr(self, "_policy", None))

    def _changed(self, _type: str, resource: str, _obj: Any, _previous: Any) -> None:
        if resource.startswith(RBAC + "/"):
            self._policy = None

    def policy(self) -> Policy:
        if self._policy is None:
            def objects(plural: str) -> list[dict[str, Any]]:
                return self.store.list(f"{RBAC}/{plural}", None)

            self._policy = Policy.from_objects(objects("roles"), objects("clusterroles"), objects("rolebindings"),
                                               objects("clusterrolebindings"))
        return self._policy

    def decide(self, attrs: Attributes) -> Decision:
        if MASTERS in attrs.groups:  # kube's privileged-group authorizer: no RBAC object can lock it out
            return Decision(True)
        return authorize(self.policy(), attrs)

    def allowed(self, attrs: Attributes) -> bool:
        return self.decide(attrs).allowed

    def check(self, attrs: Attributes, object_name: str = "") -> None:
        """Raise the 403 kube would give, or return when ``attrs`` is allowed."""
        decision = self.decide(attrs)
        DECISION.set((decision.allowed, decision.reason))
        if not decision.allowed:
            reason = decision.reason
            if not reason and "caldera:viewer" in attrs.groups and attrs.verb not in ("get", "list", "watch"):
                reason = VIEWER_HINT
            raise forbidden(attrs, reason)
        if MASTERS in attrs.groups:
            return
        why = agents.restrict(attrs, object_name or attrs.name)
        if why is not None:
            named = object_name or attrs.name
            raise forbidden_error(attrs.api_group, attrs.resource, named, why)

    def rules(self, user: "User", namespace: str) -> tuple[list[Any], list[str]]:
        if MASTERS in user.groups:
            from federation.apiserver.rbac.evaluator import Rule

            return [Rule(("*",), ("*",), ("*",)), Rule(("*",), non_resource_urls=("*",))], []
        return rules_for(self.policy(), user.name, user.groups, namespace)


def attributes(user: "User", verb: str, group: str = "", resource: str = "", namespace: str = "", name: str = "",
               subresource: str = "", path: str = "") -> Attributes:
    return Attributes(user.name, tuple(user.groups), verb, namespace, group, resource, subresource, name, path)
