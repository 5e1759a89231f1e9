"""Escalation prevention, as kube's RBAC storage does it.

Writing a Role or ClusterRole is allowed when the user may ``escalate`` it, or already holds
every permission it grants (in the Role's namespace; cluster-wide for a ClusterRole); a ClusterRole
that sets an ``aggregationRule`` also needs ``*`` on everything (kube's "must have cluster-admin
privileges to use the aggregationRule") unless the user may ``escalate``. Writing a
RoleBinding or ClusterRoleBinding is allowed when the user may ``bind`` the referenced role, or
holds every permission of that role where the binding applies. ``system:masters`` (and writes
made by the server itself, with no request user) pass. Refusals are kube's 403 text::

    roles.rbac.authorization.k8s.io "r" is forbidden: user "alice" (groups=["system:authenticated"])
    is attempting to grant RBAC permissions not currently held:
    {APIGroups:["batch.volcano.sh"], Resources:["jobs"], Verbs:["delete"]}
"""

from __future__ import annotations

from typing import Any

from federation.apiserver import status as st
from federation.apiserver.rbac.authorizer import (
    CURRENT_USER,
    MASTERS,
    RBAC,
    Authorizer,
    attributes,
    forbidden_error,
)
from federation.apiserver.rbac.evaluator import Policy, Rule, uncovered
from policies.kinds import KindInfo

ROLE_KINDS = {"Role": "roles", "ClusterRole": "clusterroles"}
BINDING_KINDS = {"RoleBinding": "rolebindings", "ClusterRoleBinding": "clusterrolebindings"}


def _go_quoted(values: Any) -> str:
    return "[" + " ".join(f'"{v}"' for v in values) + "]"


#: kube's fullAuthority: every verb on every resource and every non-resource URL
FULL_AUTHORITY = [Rule.from_dict({"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}),
                  Rule.from_dict({"nonResourceURLs": ["*"], "verbs": ["*"]})]


def _new_aggregation(new: dict[str, Any], old: dict[str, Any] | None) -> bool:
    """A ClusterRole write that sets or changes an aggregationRule (an unchanged one passes)."""
    rule = new.get("aggregationRule")
    return bool(rule) and (old is None or old.get("aggregationRule") != rule)


def _role_rules(policy: Policy, ref: dict[str, Any], namespace: str) -> tuple[Rule, ...] | None:
    if ref.get("kind") == "ClusterRole":
        return policy.cluster_roles.get(str(ref.get("name") or ""))
    return policy.roles.get((namespace, str(ref.get("name") or "")))


class EscalationCheck:
    """A registry write check (``Registry.write_checks``) for the four RBAC kinds."""

    def __init__(self, authorizer: Authorizer) -> None:
        self.authorizer = authorizer

    def __call__(self, info: KindInfo, new: dict[str, Any], old: dict[str, Any] | None) -> None:
        if info.group != RBAC:
            return
        user = CURRENT_USER.get()
        if user is None or MASTERS in user.groups:
            return
        meta = new.get("metadata") or {}
        namespace = str(meta.get("namespace") or "") if info.namespaced else ""
        name = str(meta.get("name") or "")
        if info.kind in ROLE_KINDS:
            if self.authorizer.allowed(attributes(user, "escalate", RBAC, info.plural, namespace, name)):
                return
            wanted = [Rule.from_dict(r) for r in new.get("rules") or ()]
        elif info.kind in BINDING_KINDS:
            ref = new.get("roleRef") or {}
            role_plural = ROLE_KINDS.get(str(ref.get("kind")), "")
            if self.authorizer.allowed(attributes(user, "bind", RBAC, role_plural, namespace,
                                                  str(ref.get("name") or ""))):
                return
            found = _role_rules(self.authorizer.policy(), ref, namespace)
            if found is None:
                kind = str(ref.get("kind") or "").lower()
                raise forbidden_error(RBAC, info.plural, name,
                                      f'{kind}.{RBAC} "{ref.get("name")}" not found')
            wanted = list(found)
        else:
            return
        held, _errors = self.authorizer.rules(user, namespace)
        missing = uncovered(held, wanted)
        if missing:
            raise self._refusal(info, name, user, missing)
        if info.kind == "ClusterRole" and _new_aggregation(new, old) and uncovered(held, FULL_AUTHORITY):
            # an aggregationRule can gather any rule there is, so kube asks for * on everything
            raise forbidden_error(RBAC, info.plural, name, "must have cluster-admin privileges to use the "
                                                           "aggregationRule")

    def _refusal(self, info: KindInfo, name: str, user: Any, missing: list[Rule]) -> st.ApiError:
        rules = "\n".join(r.compact() for r in missing)
        message = (f'user "{user.name}" (groups={_go_quoted(user.groups)}) is attempting to grant RBAC permissions '
                   f"not currently held:\n{rules}")
        return forbidden_error(RBAC, info.plural, name, message)
