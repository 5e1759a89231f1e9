"""RBAC enforced by the API: a team user in its namespace, refusals in kube's words, escalation."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from federation.apiserver.server import ApiServer
from tests.apiserver.helpers import request

RBAC = "/apis/rbac.authorization.k8s.io/v1"


def _jobs(ns: str) -> str:
    return f"/apis/batch.volcano.sh/v1alpha1/namespaces/{ns}/jobs"


def _job(name: str) -> bytes:
    return orjson.dumps({"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": name},
                         "spec": {"minAvailable": 1, "tasks": [{"name": "w", "replicas": 1, "template": {
                             "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}]}})


def _binding(name: str, role_kind: str, role: str, user: str) -> bytes:
    return orjson.dumps({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                         "metadata": {"name": name},
                         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role},
                         "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": user}]})


def _role(name: str, rules: list[dict[str, Any]], kind: str = "Role") -> bytes:
    return orjson.dumps({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind, "metadata": {"name": name},
                         "rules": rules})


@pytest.fixture
async def teams(server: ApiServer) -> ApiServer:
    for ns in ("team-a", "team-b"):
        status, _ = await request(server, "POST", "/api/v1/namespaces", body=orjson.dumps(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}))
        assert status == 201
    for name, role, user in (("alice-edit", "edit", "alice"), ("tom-admin", "admin", "tom")):
        status, body = await request(server, "POST", f"{RBAC}/namespaces/team-a/rolebindings",
                                     body=_binding(name, "ClusterRole", role, user))
        assert status == 201, body
    return server


def _token(server: ApiServer, user: str, *groups: str) -> str:
    assert server.state is not None
    return server.state.auth.mint_for(user, groups)


async def test_team_user_works_in_its_namespace_only(teams: ApiServer) -> None:
    alice = _token(teams, "alice")
    status, body = await request(teams, "POST", _jobs("team-a"), body=_job("train"), token=alice)
    assert status == 201, body
    before = teams.store.rv
    status, body = await request(teams, "POST", _jobs("team-b"), body=_job("train"), token=alice)
    assert status == 403 and body["reason"] == "Forbidden"
    assert body["message"] == ('jobs.batch.volcano.sh is forbidden: User "alice" cannot create resource "jobs" in '
                               'API group "batch.volcano.sh" in the namespace "team-b"')
    assert body["details"] == {"group": "batch.volcano.sh", "kind": "jobs"}
    assert teams.store.rv == before
    status, body = await request(teams, "GET", "/apis/batch.volcano.sh/v1alpha1/jobs", token=alice)
    assert status == 403 and body["message"].endswith(
        'cannot list resource "jobs" in API group "batch.volcano.sh" at the cluster scope')
    status, body = await request(teams, "PATCH", _jobs("team-a") + "/train/status", body=b'{"status": {}}',
                                 content_type="application/merge-patch+json", token=alice)
    assert status == 403 and body["message"] == (
        'jobs.batch.volcano.sh "train" is forbidden: User "alice" cannot patch resource "jobs/status" in API group '
        '"batch.volcano.sh" in the namespace "team-a"')
    status, _ = await request(teams, "DELETE", _jobs("team-a") + "/train", token=alice)
    assert status == 200


async def test_every_user_gets_discovery_and_nothing_more(teams: ApiServer) -> None:
    nobody = _token(teams, "nobody")
    status, _ = await request(teams, "GET", "/apis/batch.volcano.sh/v1alpha1", token=nobody)
    assert status == 200
    status, body = await request(teams, "GET", "/status", token=nobody)
    assert status == 403 and body["message"] == 'forbidden: User "nobody" cannot get path "/status"'
    status, body = await request(teams, "GET", "/api/v1/namespaces/default/configmaps", token=nobody)
    assert status == 403 and body["details"] == {"group": "", "kind": "configmaps"}


async def test_binding_to_a_missing_role_is_stored_and_grants_nothing(teams: ApiServer) -> None:
    status, body = await request(teams, "POST", f"{RBAC}/namespaces/team-b/rolebindings",
                                 body=_binding("ghost", "Role", "no-such-role", "dave"))
    assert status == 201, body
    status, body = await request(teams, "GET", "/api/v1/namespaces/team-b/configmaps", token=_token(teams, "dave"))
    assert status == 403
    assert body["message"].endswith(': RBAC: role.rbac.authorization.k8s.io "no-such-role" not found')


# (what, path, body, expected code)
ESCALATIONS: list[tuple[str, str, bytes, int]] = [
    ("bind edit (held)", "rolebindings", _binding("bob-edit", "ClusterRole", "edit", "bob"), 201),
    ("bind cluster-admin", "rolebindings", _binding("bob-root", "ClusterRole", "cluster-admin", "bob"), 403),
    ("role within admin", "roles", _role("jobs-reader", [{"apiGroups": ["batch.volcano.sh"], "resources": ["jobs"],
                                                           "verbs": ["get", "list"]}]), 201),
    ("role beyond admin", "roles", _role("node-reader", [{"apiGroups": [""], "resources": ["nodes"],
                                                          "verbs": ["get"]}]), 403),
    ("role with every verb", "roles", _role("all", [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]), 403),
    ("bind a missing role", "rolebindings", _binding("bob-ghost", "Role", "ghost", "bob"), 403),
]


async def test_escalation_is_refused(teams: ApiServer) -> None:
    tom = _token(teams, "tom")
    for what, plural, body, code in ESCALATIONS:
        before = teams.store.rv
        status, answer = await request(teams, "POST", f"{RBAC}/namespaces/team-a/{plural}", body=body, token=tom)
        assert status == code, (what, answer)
        if code == 403:
            assert teams.store.rv == before, what
            assert answer["message"].startswith(f'{plural}.rbac.authorization.k8s.io "'), answer
    status, answer = await request(teams, "POST", f"{RBAC}/namespaces/team-a/rolebindings?dryRun=All",
                                   body=_binding("bob-root", "ClusterRole", "cluster-admin", "bob"), token=tom)
    assert status == 403 and answer["message"] == (
        'rolebindings.rbac.authorization.k8s.io "bob-root" is forbidden: user "tom" (groups=["system:authenticated"]) '
        'is attempting to grant RBAC permissions not currently held:\n'
        '{APIGroups:["*"], Resources:["*"], Verbs:["*"]}\n{NonResourceURLs:["*"], Verbs:["*"]}')


async def test_bind_and_escalate_verbs_lift_the_check(teams: ApiServer) -> None:
    rules = [{"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"], "verbs": ["bind"],
              "resourceNames": ["cluster-admin"]},
             {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles"], "verbs": ["escalate"]}]
    status, _ = await request(teams, "POST", f"{RBAC}/clusterroles", body=_role("binder", rules, "ClusterRole"))
    assert status == 201
    status, _ = await request(teams, "POST", f"{RBAC}/namespaces/team-a/rolebindings",
                              body=_binding("tom-binder", "ClusterRole", "binder", "tom"))
    assert status == 201
    tom = _token(teams, "tom")
    status, body = await request(teams, "POST", f"{RBAC}/namespaces/team-a/rolebindings",
                                 body=_binding("bob-root", "ClusterRole", "cluster-admin", "bob"), token=tom)
    assert status == 201, body
    status, body = await request(teams, "POST", f"{RBAC}/namespaces/team-a/roles", token=tom,
                                 body=_role("node-reader", [{"apiGroups": [""], "resources": ["nodes"],
                                                             "verbs": ["get"]}]))
    assert status == 201, body


# (what, path, body, field named in the 422)
BAD: list[tuple[str, str, bytes, str]] = [
    ("roleRef kind", "namespaces/team-a/rolebindings", orjson.dumps(
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "x"},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Queue", "name": "q"}}), "roleRef.kind"),
    ("cluster binding to a Role", "clusterrolebindings", orjson.dumps(
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "x"},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"}}), "roleRef.kind"),
    ("subject kind", "namespaces/team-a/rolebindings", orjson.dumps(
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "x"},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
         "subjects": [{"kind": "Robot", "name": "r"}]}), "subjects[0].kind"),
    ("URL in a Role", "namespaces/team-a/roles", _role("x", [{"nonResourceURLs": ["/x"], "verbs": ["get"]}]),
     "rules[0].nonResourceURLs"),
    ("rule without verbs", "clusterroles", _role("x", [{"apiGroups": [""], "resources": ["pods"], "verbs": []}],
                                                 "ClusterRole"), "rules[0].verbs"),
    ("resource rule without groups", "clusterroles", _role("x", [{"resources": ["pods"], "verbs": ["get"]}],
                                                           "ClusterRole"), "rules[0].apiGroups"),
    ("aggregation selector with an unknown operator (issue 42: never a match)", "clusterroles", orjson.dumps(
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "x"},
         "aggregationRule": {"clusterRoleSelectors": [
             {"matchExpressions": [{"key": "agg", "operator": "Bogus", "values": ["yes"]}]}]}}),
     "aggregationRule.clusterRoleSelectors[0].matchExpressions[0].operator"),
    ("aggregationRule without selectors", "clusterroles", orjson.dumps(
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "x"},
         "aggregationRule": {"clusterRoleSelectors": []}}), "aggregationRule.clusterRoleSelectors"),
]


async def test_bad_rbac_objects_are_invalid(teams: ApiServer) -> None:
    for what, path, body, field in BAD:
        before = teams.store.rv
        status, answer = await request(teams, "POST", f"{RBAC}/{path}", body=body)
        assert status == 422, (what, answer)
        assert field in [c["field"] for c in answer["details"]["causes"]], (what, answer)
        assert teams.store.rv == before


async def test_role_ref_cannot_change(teams: ApiServer) -> None:
    status, body = await request(teams, "PATCH", f"{RBAC}/namespaces/team-a/rolebindings/alice-edit",
                                 body=b'{"roleRef": {"name": "view"}}', content_type="application/merge-patch+json")
    assert status == 422 and "cannot change roleRef" in body["message"]


async def test_system_masters_cannot_be_locked_out(teams: ApiServer) -> None:
    status, _ = await request(teams, "DELETE", f"{RBAC}/clusterrolebindings/cluster-admin")
    assert status == 200
    status, _ = await request(teams, "DELETE", f"{RBAC}/clusterrolebindings/caldera:admins")
    assert status == 200
    status, _ = await request(teams, "GET", _jobs("team-a"))
    assert status == 200


async def test_controller_manager_identity_may_do_everything(teams: ApiServer) -> None:
    token = teams.mint_token("controller-manager", "caldera:controller-manager")
    status, body = await request(teams, "DELETE", "/api/v1/namespaces/team-b", token=token)
    assert status == 200, body
    status, body = await request(teams, "GET", "/status", token=token)
    assert status == 200
