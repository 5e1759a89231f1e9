"""The bootstrap policy: kube's default ClusterRoles and bindings, extended to Caldera's kinds.

* ``cluster-admin`` (everything), bound to the group ``system:masters`` (which the authorizer
  also lets through without looking at RBAC, as kube-apiserver does);
* ``admin``, ``edit``, ``view``: kube's user-facing roles over the served core kinds plus the
  Volcano, Kubeflow and Karmada kinds (what those projects' Helm charts aggregate into them);
* ``system:discovery``, ``system:basic-user``, ``system:public-info-viewer`` for every
  authenticated user: discovery, OpenAPI, version, health and the self-subject reviews;
* Caldera's three historical token roles as bindings: group ``caldera:admin`` -> ``cluster-admin``,
  ``caldera:viewer`` -> ``caldera:viewer`` (read everything), ``caldera:agents`` -> ``caldera:agent``
  (read everything; write Clusters, Leases, Work status and Events, each narrowed to the agent's
  own cluster by :mod:`federation.apiserver.rbac.agents`, as kube's NodeRestriction narrows kubelets);
* ``caldera:controller-manager``: ``cluster-admin`` for the user ``caldera:controller-manager`` and
  the group ``caldera:controllers`` (the identity the controller manager's kubeconfig carries).

Objects carry ``rbac.authorization.kubernetes.io/autoupdate: "true"``: at every start-up they are
put back as written here unless an operator set that annotation to ``"false"``.
"""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]
RBAC = "rbac.authorization.k8s.io"
READ = ["get", "list", "watch"]
WRITE = ["create", "delete", "deletecollection", "patch", "update"]

#: API group -> namespaced resources users create (edit/admin write them, view reads them).
WORKLOADS: dict[str, list[str]] = {
    "": ["pods", "configmaps", "serviceaccounts"],
    "batch.volcano.sh": ["jobs", "vcjobs"],
    "scheduling.volcano.sh": ["podgroups"],
    "flow.volcano.sh": ["jobflows", "jobtemplates"],
    "kubeflow.org": ["pytorchjobs", "tfjobs", "mpijobs"],
    "policy.karmada.io": ["propagationpolicies", "overridepolicies"],
}
#: read-only for view/edit/admin (status of the above, what controllers write).
READ_ONLY: dict[str, list[str]] = {
    "": ["pods/status", "pods/log", "events", "namespaces", "namespaces/status"],
    "batch.volcano.sh": ["jobs/status"],
    "scheduling.volcano.sh": ["podgroups/status", "queues", "queues/status"],
    "flow.volcano.sh": ["jobflows/status", "jobtemplates/status"],
    "kubeflow.org": ["pytorchjobs/status", "tfjobs/status", "mpijobs/status"],
    "work.karmada.io": ["resourcebindings", "resourcebindings/status", "works", "works/status"],
}


def _rule(verbs: list[str], groups: list[str], resources: list[str], names: list[str] | None = None) -> Obj:
    rule: Obj = {"verbs": verbs, "apiGroups": groups, "resources": resources}
    if names:
        rule["resourceNames"] = names
    return rule


def _urls(verbs: list[str], urls: list[str]) -> Obj:
    return {"verbs": verbs, "nonResourceURLs": urls}


def _meta(name: str) -> Obj:
    return {"name": name, "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"},
            "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"}}


def cluster_role(name: str, rules: list[Obj]) -> Obj:
    return {"apiVersion": f"{RBAC}/v1", "kind": "ClusterRole", "metadata": _meta(name), "rules": rules}


def cluster_role_binding(name: str, role: str, subjects: list[tuple[str, str]]) -> Obj:
    return {"apiVersion": f"{RBAC}/v1", "kind": "ClusterRoleBinding", "metadata": _meta(name),
            "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": role},
            "subjects": [{"kind": kind, "apiGroup": RBAC, "name": who} for kind, who in subjects]}


def _view_rules() -> list[Obj]:
    groups = sorted({*WORKLOADS, *READ_ONLY})
    return [_rule(READ, [group], WORKLOADS.get(group, []) + READ_ONLY.get(group, [])) for group in groups]


def _edit_rules() -> list[Obj]:
    writes = [_rule(WRITE, [group], resources) for group, resources in sorted(WORKLOADS.items())]
    writes.append(_rule(["create"], [""], ["serviceaccounts/token"]))
    writes.append(_rule(["create"], [""], ["pods/eviction"]))
    return _view_rules() + writes


def _admin_rules() -> list[Obj]:
    return _edit_rules() + [
        _rule(READ + WRITE, [RBAC], ["roles", "rolebindings"]),
        _rule(["create"], ["authorization.k8s.io"], ["localsubjectaccessreviews"]),
    ]


def _agent_rules() -> list[Obj]:
    return [
        _rule(READ, ["*"], ["*"]),
        _urls(["get"], ["*"]),
        _rule(["create", "update", "patch"], [""], ["events"]),
        _rule(["create", "update", "patch"], ["cluster.karmada.io"], ["clusters", "clusters/status"]),
        _rule(["create", "update", "patch"], ["coordination.k8s.io"], ["leases"]),
        _rule(["update", "patch"], ["work.karmada.io"], ["works/status"]),
        # its pods and PodGroups, reported into karmada-es-<cluster> (docs/protocol.md "Member pods")
        _rule(["create", "update", "patch", "delete"], [""], ["pods", "pods/status"]),
        _rule(["create", "update", "patch", "delete"], ["scheduling.volcano.sh"], ["podgroups", "podgroups/status"]),
        _urls(["post"], ["/caldera/v1/clusters/*"]),  # its answers to log requests (member_logs.py)
    ]


def cluster_roles() -> list[Obj]:
    discovery = ["/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/readyz", "/version", "/version/",
                 "/openapi", "/openapi/*"]
    return [
        cluster_role("cluster-admin", [_rule(["*"], ["*"], ["*"]), _urls(["*"], ["*"])]),
        cluster_role("admin", _admin_rules()),
        cluster_role("edit", _edit_rules()),
        cluster_role("view", _view_rules()),
        cluster_role("system:discovery", [_urls(["get"], discovery)]),
        cluster_role("system:public-info-viewer", [_urls(["get"], ["/healthz", "/livez", "/readyz", "/version",
                                                                   "/version/"])]),
        cluster_role("system:basic-user", [
            _rule(["create"], ["authorization.k8s.io"], ["selfsubjectaccessreviews", "selfsubjectrulesreviews"]),
            _rule(["create"], ["authentication.k8s.io"], ["selfsubjectreviews"]),
        ]),
        cluster_role("caldera:viewer", [_rule(READ, ["*"], ["*"]), _urls(["get"], ["*"])]),
        cluster_role("caldera:agent", _agent_rules()),
    ]


def cluster_role_bindings() -> list[Obj]:
    authenticated = [("Group", "system:authenticated")]
    return [
        cluster_role_binding("cluster-admin", "cluster-admin", [("Group", "system:masters")]),
        cluster_role_binding("system:discovery", "system:discovery", authenticated),
        cluster_role_binding("system:basic-user", "system:basic-user", authenticated),
        cluster_role_binding("system:public-info-viewer", "system:public-info-viewer",
                             authenticated + [("Group", "system:unauthenticated")]),
        cluster_role_binding("caldera:admins", "cluster-admin", [("Group", "caldera:admin")]),
        cluster_role_binding("caldera:viewers", "caldera:viewer", [("Group", "caldera:viewer")]),
        cluster_role_binding("caldera:agents", "caldera:agent", [("Group", "caldera:agents")]),
        cluster_role_binding("caldera:controller-manager", "cluster-admin",
                             [("User", "caldera:controller-manager"), ("Group", "caldera:controllers")]),
    ]


def bootstrap_objects() -> list[Obj]:
    return cluster_roles() + cluster_role_bindings()
