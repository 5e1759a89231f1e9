"""kube-apiserver's RBAC authorizer, as a pure function of a policy snapshot and a request.

A request is allowed when some rule of some role bound to the user allows it: every
ClusterRoleBinding counts everywhere, a RoleBinding only for requests in its own namespace.
Rule matching follows ``k8s.io/kubernetes/plugin/pkg/auth/authorizer/rbac``:

* verbs, apiGroups: ``*`` or an exact entry;
* resources: ``*``, the exact ``resource`` or ``resource/subresource``, or ``*/subresource``;
* resourceNames: empty matches every name (and nameless requests such as list or create); else
  the request's name must be listed;
* nonResourceURLs: ``*``, the exact path, or a prefix ending in ``*``.

A binding whose role does not exist grants nothing; the missing role is reported in the
refusal's reason (``RBAC: role.rbac.authorization.k8s.io "x" not found``), as kube does.
Also here: the rules a user holds in a namespace (SelfSubjectRulesReview) and the "covers"
check behind escalation prevention.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from policies.k8s import label_selector

Obj = Mapping[str, Any]
SA_PREFIX = "system:serviceaccount:"


@dataclass(frozen=True)
class Attributes:
    """What is being asked: kube's authorizer.Attributes."""

    user: str
    groups: tuple[str, ...]
    verb: str
    namespace: str = ""
    api_group: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""
    #: a non-resource request (``/healthz``, ``/apis``) when set
    path: str = ""

    @property
    def resource_request(self) -> bool:
        return not self.path


@dataclass(frozen=True)
class Rule:
    verbs: tuple[str, ...]
    api_groups: tuple[str, ...] = ()
    resources: tuple[str, ...] = ()
    resource_names: tuple[str, ...] = ()
    non_resource_urls: tuple[str, ...] = ()

    @classmethod
    def from_dict(cls, rule: Obj) -> "Rule":
        def strings(key: str) -> tuple[str, ...]:
            return tuple(str(v) for v in rule.get(key) or ())

        return cls(strings("verbs"), strings("apiGroups"), strings("resources"), strings("resourceNames"),
                   strings("nonResourceURLs"))

    def to_dict(self) -> dict[str, list[str]]:
        out = {"verbs": list(self.verbs), "apiGroups": list(self.api_groups), "resources": list(self.resources),
               "resourceNames": list(self.resource_names), "nonResourceURLs": list(self.non_resource_urls)}
        return {k: v for k, v in out.items() if v or k == "verbs"}

    def compact(self) -> str:
        """kube's PolicyRule CompactString, used in escalation refusals."""
        parts = []
        for label, values in (("APIGroups", self.api_groups), ("Resources", self.resources),
                              ("ResourceNames", self.resource_names), ("NonResourceURLs", self.non_resource_urls),
                              ("Verbs", self.verbs)):
            if values:
                parts.append(f"{label}:[" + " ".join(f'"{v}"' for v in values) + "]")
        return "{" + ", ".join(parts) + "}"


@dataclass(frozen=True)
class Decision:
    allowed: bool
    reason: str = ""


def _rules(role: Obj | None) -> tuple[Rule, ...]:
    return tuple(Rule.from_dict(r) for r in (role or {}).get("rules") or ())


def _aggregation_selectors(role: Obj) -> list[label_selector.LabelSelector]:
    """A ClusterRole's clusterRoleSelectors; one that is invalid aggregates nothing (admission
    refuses it; an object stored before that rule still never widens a role)."""
    selectors = []
    for raw in (role.get("aggregationRule") or {}).get("clusterRoleSelectors") or ():
        try:
            parsed = label_selector.parse(raw)
        except label_selector.InvalidSelector:
            continue
        if parsed is not None:
            selectors.append(parsed)
    return selectors


@dataclass
class Policy:
    """The RBAC objects at one moment: roles by (namespace, name), cluster roles by name, bindings."""

    roles: dict[tuple[str, str], tuple[Rule, ...]] = field(default_factory=dict)
    cluster_roles: dict[str, tuple[Rule, ...]] = field(default_factory=dict)
    role_bindings: list[Obj] = field(default_factory=list)
    cluster_role_bindings: list[Obj] = field(default_factory=list)

    @classmethod
    def from_objects(cls, roles: Iterable[Obj], cluster_roles: Iterable[Obj], role_bindings: Iterable[Obj],
                     cluster_role_bindings: Iterable[Obj]) -> "Policy":
        by_name = {c["metadata"]["name"]: c for c in cluster_roles}
        cluster: dict[str, tuple[Rule, ...]] = {}
        for name, role in by_name.items():
            rules = list(_rules(role))
            for selector in _aggregation_selectors(role):
                for other_name, other in by_name.items():  # kube's aggregation controller, computed here
                    if other_name != name and selector.matches(other["metadata"].get("labels") or {}):
                        rules += [r for r in _rules(other) if r not in rules]
            cluster[name] = tuple(rules)
        return cls({(r["metadata"].get("namespace") or "", r["metadata"]["name"]): _rules(r) for r in roles},
                   cluster, list(role_bindings), list(cluster_role_bindings))


def _has(values: Sequence[str], wanted: str) -> bool:
    return "*" in values or wanted in values


def _resource_matches(rule: Rule, attrs: Attributes) -> bool:
    combined = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
    for resource in rule.resources:
        if resource in ("*", combined):
            return True
        if attrs.subresource and resource == f"*/{attrs.subresource}":
            return True
    return False


def _url_matches(rule: Rule, path: str) -> bool:
    for url in rule.non_resource_urls:
        if url in ("*", path):
            return True
        if url.endswith("*") and path.startswith(url.rstrip("*")):
            return True
    return False


def rule_allows(rule: Rule, attrs: Attributes) -> bool:
    if not _has(rule.verbs, attrs.verb):
        return False
    if not attrs.resource_request:
        return _url_matches(rule, attrs.path)
    return (_has(rule.api_groups, attrs.api_group) and _resource_matches(rule, attrs)
            and (not rule.resource_names or attrs.name in rule.resource_names))


def applies_to(subject: Obj, user: str, groups: Sequence[str], binding_namespace: str) -> bool:
    kind, name = subject.get("kind"), subject.get("name")
    if kind == "User":
        return bool(user == name)
    if kind == "Group":
        return name in groups
    if kind == "ServiceAccount":
        namespace = subject.get("namespace") or binding_namespace
        return bool(namespace) and user == f"{SA_PREFIX}{namespace}:{name}"
    return False


def _role_rules(policy: Policy, ref: Obj, namespace: str) -> tuple[tuple[Rule, ...], str | None]:
    kind, name = ref.get("kind"), str(ref.get("name") or "")
    if kind == "ClusterRole":
        rules = policy.cluster_roles.get(name)
        return (rules, None) if rules is not None else ((), f'clusterrole.rbac.authorization.k8s.io "{name}" not found')
    if kind == "Role" and namespace:
        rules = policy.roles.get((namespace, name))
        return (rules, None) if rules is not None else ((), f'role.rbac.authorization.k8s.io "{name}" not found')
    return (), f"unsupported roleRef kind {kind!r}"


def _subject(subject: Obj, binding_namespace: str) -> str:
    """kube's describeSubject: ``User "alice"``, ``ServiceAccount "builder/team-a"``."""
    if subject.get("kind") == "ServiceAccount":
        return f'ServiceAccount "{subject.get("name")}/{subject.get("namespace") or binding_namespace}"'
    return f'{subject.get("kind")} "{subject.get("name")}"'


Visit = tuple[tuple[Rule, ...], str | None, str]


def _visit(policy: Policy, user: str, groups: Sequence[str], namespace: str) -> Iterable[Visit]:
    """(rules, error, source) of every role bound to the user that counts in ``namespace``."""
    for binding in policy.cluster_role_bindings:
        subject = next((s for s in binding.get("subjects") or () if applies_to(s, user, groups, "")), None)
        if subject is not None:
            ref = binding.get("roleRef") or {}
            source = (f'ClusterRoleBinding "{binding["metadata"]["name"]}" of {ref.get("kind")} "{ref.get("name")}" '
                      f'to {_subject(subject, "")}')
            yield (*_role_rules(policy, ref, ""), source)
    if not namespace:
        return
    for binding in policy.role_bindings:
        if (binding["metadata"].get("namespace") or "") != namespace:
            continue
        subject = next((s for s in binding.get("subjects") or () if applies_to(s, user, groups, namespace)), None)
        if subject is not None:
            ref = binding.get("roleRef") or {}
            source = (f'RoleBinding "{binding["metadata"]["name"]}/{namespace}" of {ref.get("kind")} '
                      f'"{ref.get("name")}" to {_subject(subject, namespace)}')
            yield (*_role_rules(policy, ref, namespace), source)


def authorize(policy: Policy, attrs: Attributes) -> Decision:
    """Allowed with kube's ``RBAC: allowed by ...`` reason, or refused (with resolution errors)."""
    errors: list[str] = []
    for rules, error, source in _visit(policy, attrs.user, attrs.groups, attrs.namespace):
        if error:
            errors.append(error)
        if any(rule_allows(rule, attrs) for rule in rules):
            return Decision(True, f"RBAC: allowed by {source}")
    if not errors:
        return Decision(False)
    joined = errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"
    return Decision(False, f"RBAC: {joined}")


def rules_for(policy: Policy, user: str, groups: Sequence[str], namespace: str) -> tuple[list[Rule], list[str]]:
    """Every rule the user holds in ``namespace`` ("" = cluster-wide only), and resolution errors."""
    rules: list[Rule] = []
    errors: list[str] = []
    for found, error, _source in _visit(policy, user, groups, namespace):
        if error:
            errors.append(error)
        rules += [r for r in found if r not in rules]
    return rules, errors


# -- escalation: does one set of rules cover another (kube's validation.Covers) ------------


def _atoms(rule: Rule) -> Iterable[Rule]:
    """A rule broken into one verb x group x resource (x name) or one verb x URL."""
    for verb in rule.verbs:
        for url in rule.non_resource_urls:
            yield Rule((verb,), non_resource_urls=(url,))
        for group in rule.api_groups:
            for resource in rule.resources:
                if rule.resource_names:
                    for name in rule.resource_names:
                        yield Rule((verb,), (group,), (resource,), (name,))
                else:
                    yield Rule((verb,), (group,), (resource,))


def _covers_one(owner: Rule, atom: Rule) -> bool:
    if not all(_has(owner.verbs, v) for v in atom.verbs):
        return False
    if atom.non_resource_urls:
        return all(u in owner.non_resource_urls or "*" in owner.non_resource_urls
                   or any(o.endswith("*") and u.startswith(o.rstrip("*")) for o in owner.non_resource_urls)
                   for u in atom.non_resource_urls)
    if not all(_has(owner.api_groups, g) for g in atom.api_groups):
        return False
    for resource in atom.resources:
        if "*" in owner.resources or resource in owner.resources:
            continue
        if "/" in resource and "*/" + resource.split("/", 1)[1] in owner.resources:
            continue
        return False
    if not owner.resource_names:
        return True
    return bool(atom.resource_names) and all(n in owner.resource_names for n in atom.resource_names)


def uncovered(owner_rules: Sequence[Rule], wanted: Sequence[Rule]) -> list[Rule]:
    """The atomic rules of ``wanted`` that no rule of ``owner_rules`` covers (empty: no escalation)."""
    missing: list[Rule] = []
    for rule in wanted:
        for atom in _atoms(rule):
            if not any(_covers_one(owner, atom) for owner in owner_rules) and atom not in missing:
                missing.append(atom)
    return missing
