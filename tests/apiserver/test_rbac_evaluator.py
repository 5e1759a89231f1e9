"""The pure RBAC evaluator against kube's rules, case by case (no server)."""

from __future__ import annotations

from typing import Any

import pytest

from federation.apiserver.rbac import agents
from federation.apiserver.rbac.bootstrap import cluster_role_bindings, cluster_roles
from federation.apiserver.rbac.evaluator import Attributes, Policy, Rule, authorize, rules_for, uncovered

RBAC = "rbac.authorization.k8s.io"


def _role(name: str, rules: list[dict[str, Any]], namespace: str = "") -> dict[str, Any]:
    meta = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {"metadata": meta, "rules": rules}


def _binding(name: str, kind: str, role: str, subjects: list[dict[str, Any]], namespace: str = "") -> dict[str, Any]:
    meta = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {"metadata": meta, "roleRef": {"apiGroup": RBAC, "kind": kind, "name": role}, "subjects": subjects}


USER = {"kind": "User", "apiGroup": RBAC}
ROLES = [
    _role("job-reader", [{"verbs": ["get"], "apiGroups": ["batch.volcano.sh"], "resources": ["jobs"],
                          "resourceNames": ["only-this"]}], "team-a"),
    _role("status-writer", [{"verbs": ["patch"], "apiGroups": ["*"], "resources": ["*/status"]}], "team-a"),
]
CLUSTER_ROLES = [*cluster_roles(),
                 _role("urls", [{"verbs": ["get"], "nonResourceURLs": ["/logs/*", "/metrics"]}]),
                 _role("aggregate", []) | {"aggregationRule": {"clusterRoleSelectors": [
                     {"matchLabels": {"agg": "yes"}}]}},
                 # issue 42: stored before admission refused it, an unknown operator aggregates nothing
                 # (it used to be skipped, so this role aggregated every ClusterRole, cluster-admin too)
                 _role("bogus-agg", []) | {"aggregationRule": {"clusterRoleSelectors": [
                     {"matchExpressions": [{"key": "agg", "operator": "Bogus", "values": ["no"]}]}]}},
                 _role("piece", [{"verbs": ["list"], "apiGroups": [""], "resources": ["nodes"]}])
                 | {"metadata": {"name": "piece", "labels": {"agg": "yes"}}}]
ROLE_BINDINGS = [
    _binding("alice-edit", "ClusterRole", "edit", [USER | {"name": "alice"}], "team-a"),
    _binding("readers", "Role", "job-reader", [{"kind": "Group", "apiGroup": RBAC, "name": "readers"}], "team-a"),
    _binding("bot", "Role", "status-writer", [{"kind": "ServiceAccount", "name": "bot"}], "team-a"),
    _binding("dangling", "Role", "no-such-role", [USER | {"name": "dave"}], "team-a"),
]
CLUSTER_BINDINGS = [*cluster_role_bindings(),
                    _binding("carol-urls", "ClusterRole", "urls", [USER | {"name": "carol"}]),
                    _binding("erin-agg", "ClusterRole", "aggregate", [USER | {"name": "erin"}]),
                    _binding("frank-bogus", "ClusterRole", "bogus-agg", [USER | {"name": "frank"}]),
                    _binding("sa-view", "ClusterRole", "view",
                             [{"kind": "ServiceAccount", "name": "ci", "namespace": "tools"}])]
POLICY = Policy.from_objects(ROLES, CLUSTER_ROLES, ROLE_BINDINGS, CLUSTER_BINDINGS)
AUTH = ("system:authenticated",)

# (who, groups, verb, group, resource, subresource, namespace, name, path, allowed)
CASES: list[tuple[str, tuple[str, ...], str, str, str, str, str, str, str, bool]] = [
    ("alice", AUTH, "create", "batch.volcano.sh", "jobs", "", "team-a", "", "", True),
    ("alice", AUTH, "delete", "batch.volcano.sh", "jobs", "", "team-a", "j", "", True),
    ("alice", AUTH, "create", "batch.volcano.sh", "jobs", "", "team-b", "", "", False),
    ("alice", AUTH, "list", "batch.volcano.sh", "jobs", "", "", "", "", False),  # all namespaces
    ("alice", AUTH, "patch", "batch.volcano.sh", "jobs", "status", "team-a", "j", "", False),  # edit reads status
    ("alice", AUTH, "get", "batch.volcano.sh", "jobs", "status", "team-a", "j", "", True),
    ("alice", AUTH, "create", RBAC, "rolebindings", "", "team-a", "", "", False),  # edit: no RBAC
    ("alice", AUTH, "get", "scheduling.volcano.sh", "queues", "", "", "default", "", False),  # cluster-scoped
    ("alice", AUTH, "create", "", "serviceaccounts", "token", "team-a", "sa", "", True),
    ("bob", ("readers", *AUTH), "get", "batch.volcano.sh", "jobs", "", "team-a", "only-this", "", True),
    ("bob", ("readers", *AUTH), "get", "batch.volcano.sh", "jobs", "", "team-a", "other", "", False),
    ("bob", ("readers", *AUTH), "list", "batch.volcano.sh", "jobs", "", "team-a", "", "", False),  # names: no list
    ("system:serviceaccount:team-a:bot", AUTH, "patch", "batch.volcano.sh", "jobs", "status", "team-a", "j", "",
     True),
    ("system:serviceaccount:team-a:bot", AUTH, "patch", "batch.volcano.sh", "jobs", "", "team-a", "j", "", False),
    ("system:serviceaccount:team-b:bot", AUTH, "patch", "batch.volcano.sh", "jobs", "status", "team-a", "j", "",
     False),
    ("system:serviceaccount:tools:ci", AUTH, "list", "batch.volcano.sh", "jobs", "", "", "", "", True),
    ("dave", AUTH, "get", "", "configmaps", "", "team-a", "x", "", False),
    ("carol", AUTH, "get", "", "", "", "", "", "/logs/kube.log", True),
    ("carol", AUTH, "get", "", "", "", "", "", "/metrics", True),
    ("carol", AUTH, "get", "", "", "", "", "", "/metricsx", False),
    ("carol", AUTH, "post", "", "", "", "", "", "/metrics", False),
    ("anyone", AUTH, "get", "", "", "", "", "", "/apis/batch.volcano.sh", True),  # system:discovery
    ("anyone", AUTH, "get", "", "", "", "", "", "/status", False),
    ("anyone", AUTH, "create", "authorization.k8s.io", "selfsubjectaccessreviews", "", "", "", "", True),
    ("anyone", AUTH, "get", "", "pods", "", "default", "p", "", False),
    ("root", ("system:masters",), "delete", "", "namespaces", "", "", "x", "", True),
    ("admin", ("caldera:admin", *AUTH), "delete", "", "namespaces", "", "", "x", "", True),
    ("viewer", ("caldera:viewer", *AUTH), "list", "cluster.karmada.io", "clusters", "", "", "", "", True),
    ("viewer", ("caldera:viewer", *AUTH), "get", "", "", "", "", "", "/status", True),
    ("viewer", ("caldera:viewer", *AUTH), "delete", "", "pods", "", "default", "p", "", False),
    ("erin", AUTH, "list", "", "nodes", "", "", "", "", True),  # aggregated from a labelled ClusterRole
    ("frank", AUTH, "list", "", "nodes", "", "", "", "", False),  # an unknown operator selects nothing
    ("frank", AUTH, "delete", RBAC, "clusterroles", "", "", "x", "", False),
    ("erin", AUTH, "get", "", "nodes", "", "", "n", "", False),
    ("agent", ("caldera:agent:c1", "caldera:agents"), "patch", "work.karmada.io", "works", "status", "x", "w", "",
     True),
    ("agent", ("caldera:agent:c1", "caldera:agents"), "patch", "work.karmada.io", "works", "", "x", "w", "", False),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}-{c[2]}-{c[4] or c[8]}-{c[6] or 'cluster'}")
def test_authorize(case: tuple[Any, ...]) -> None:
    user, groups, verb, group, resource, sub, namespace, name, path, allowed = case
    decision = authorize(POLICY, Attributes(user, groups, verb, namespace, group, resource, sub, name, path))
    assert decision.allowed is allowed


def test_binding_to_a_missing_role_grants_nothing_and_says_why() -> None:
    decision = authorize(POLICY, Attributes("dave", AUTH, "get", "team-a", "", "configmaps", "", "x"))
    assert not decision.allowed
    assert decision.reason == 'RBAC: role.rbac.authorization.k8s.io "no-such-role" not found'


def test_rules_for_lists_namespace_and_cluster_rules() -> None:
    rules, errors = rules_for(POLICY, "bob", ("readers", *AUTH), "team-a")
    assert Rule(("get",), ("batch.volcano.sh",), ("jobs",), ("only-this",)) in rules
    assert any("selfsubjectaccessreviews" in r.resources for r in rules) and errors == []
    outside, _ = rules_for(POLICY, "bob", ("readers", *AUTH), "team-b")
    assert not any("jobs" in r.resources for r in outside)


# (owner rules, wanted rules, what stays uncovered)
COVERS: list[tuple[list[Rule], list[Rule], list[Rule]]] = [
    ([Rule(("*",), ("*",), ("*",))], [Rule(("delete",), ("",), ("pods", "pods/status"))], []),
    ([Rule(("get", "list"), ("",), ("pods",))], [Rule(("get", "delete"), ("",), ("pods",))],
     [Rule(("delete",), ("",), ("pods",))]),
    ([Rule(("get",), ("",), ("*/status",))], [Rule(("get",), ("",), ("pods/status",))], []),
    ([Rule(("get",), ("",), ("pods",), ("a",))], [Rule(("get",), ("",), ("pods",))],
     [Rule(("get",), ("",), ("pods",))]),
    ([Rule(("get",), ("",), ("pods",))], [Rule(("get",), ("",), ("pods",), ("a", "b"))], []),
    ([Rule(("get",), non_resource_urls=("/logs/*",))], [Rule(("get",), non_resource_urls=("/logs/x", "/y"))],
     [Rule(("get",), non_resource_urls=("/y",))]),
]


@pytest.mark.parametrize("owner,wanted,missing", COVERS)
def test_uncovered(owner: list[Rule], wanted: list[Rule], missing: list[Rule]) -> None:
    assert uncovered(owner, wanted) == missing


# (groups, verb, resource, namespace, object name, refused)
AGENT_CASES = [
    (("caldera:agent:c1",), "create", "clusters", "", "c1", False),
    (("caldera:agent:c1",), "patch", "clusters", "", "c2", True),
    (("caldera:agent:c1",), "create", "leases", "karmada-cluster", "c1", False),
    (("caldera:agent:c1",), "create", "leases", "kube-system", "c1", True),
    (("caldera:agent:c1",), "update", "leases", "caldera-system", "caldera-agent-c1", False),  # its replicas' election
    (("caldera:agent:c1",), "update", "leases", "caldera-system", "caldera-agent-c2", True),
    (("caldera:agent:c1",), "update", "leases", "caldera-system", "caldera-controllers", True),
    (("caldera:agent:c1",), "create", "leases", "karmada-es-c1", "caldera-agent-c1", True),
    (("caldera:agent:c1",), "patch", "works", "karmada-es-c1", "w", False),
    (("caldera:agent:c1",), "patch", "works", "karmada-es-c2", "w", True),
    (("caldera:viewer",), "patch", "clusters", "", "c2", False),  # not an agent: RBAC alone decides
]
GROUPS = {"clusters": "cluster.karmada.io", "leases": "coordination.k8s.io", "works": "work.karmada.io"}


@pytest.mark.parametrize("case", AGENT_CASES)
def test_agent_restriction(case: tuple[Any, ...]) -> None:
    groups, verb, resource, namespace, name, refused = case
    attrs = Attributes("a", groups, verb, namespace, GROUPS[resource], resource, "", "" if verb == "create" else name)
    assert (agents.restrict(attrs, name) is not None) is refused
