"""Roles: admin writes anything, viewers read, an agent writes only its own cluster's objects."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from federation.apiserver.auth import parse_token_file
from federation.apiserver.server import ApiServer
from tests.apiserver.helpers import request

CLUSTERS = "/apis/cluster.karmada.io/v1alpha1/clusters"
LEASES = "/apis/coordination.k8s.io/v1/namespaces/karmada-cluster/leases"
WORKS_A = "/apis/work.karmada.io/v1alpha1/namespaces/karmada-es-cluster-a/works"
WORKS_B = "/apis/work.karmada.io/v1alpha1/namespaces/karmada-es-cluster-b/works"
QUEUES = "/apis/scheduling.volcano.sh/v1beta1/queues"


def _cluster(name: str) -> bytes:
    return orjson.dumps({"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster", "metadata": {"name": name},
                         "spec": {"syncMode": "Pull"}})


def _lease(name: str) -> bytes:
    return orjson.dumps({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": name},
                         "spec": {"holderIdentity": name, "leaseDurationSeconds": 40}})


def _work(name: str) -> bytes:
    return orjson.dumps({"apiVersion": "work.karmada.io/v1alpha1", "kind": "Work", "metadata": {"name": name},
                         "spec": {"workload": {"manifests": [{"apiVersion": "v1", "kind": "ConfigMap",
                                                              "metadata": {"name": "x", "namespace": "default"}}]}}})


@pytest.fixture
async def seeded(server: ApiServer) -> ApiServer:
    for ns in ("karmada-es-cluster-a", "karmada-es-cluster-b"):
        status, _ = await request(server, "POST", "/api/v1/namespaces",
                                  body=orjson.dumps({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}))
        assert status == 201
    for path, body in ((CLUSTERS, _cluster("cluster-b")), (WORKS_A, _work("w")), (WORKS_B, _work("w"))):
        status, _ = await request(server, "POST", path, body=body)
        assert status == 201
    return server


MERGE = "application/merge-patch+json"
STATUS_PATCH = b'{"status": {"conditions": [{"type": "Applied", "status": "True"}]}}'

# (what, method, path, body, content type, expected code)
AGENT_CASES: list[tuple[str, str, str, Any, str, int]] = [
    ("register own cluster", "POST", CLUSTERS, _cluster("cluster-a"), "application/json", 201),
    ("own cluster status", "PATCH", CLUSTERS + "/cluster-a/status", b'{"status": {"kubernetesVersion": "v1.30"}}',
     MERGE, 200),
    ("own lease", "POST", LEASES, _lease("cluster-a"), "application/json", 201),
    ("own works' status", "PATCH", WORKS_A + "/w/status", STATUS_PATCH, MERGE, 200),
    ("read anything", "GET", QUEUES, None, "", 200),
    ("another cluster", "PATCH", CLUSTERS + "/cluster-b/status", b'{"status": {}}', MERGE, 403),
    ("another cluster's lease", "POST", LEASES, _lease("cluster-b"), "application/json", 403),
    ("another cluster's works", "PATCH", WORKS_B + "/w/status", STATUS_PATCH, MERGE, 403),
    ("own works' spec", "PATCH", WORKS_A + "/w", b'{"spec": {"workload": {"manifests": []}}}', MERGE, 403),
    ("a queue", "POST", QUEUES, orjson.dumps({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                                              "metadata": {"name": "x"}}), "application/json", 403),
    ("delete own cluster", "DELETE", CLUSTERS + "/cluster-a", None, "", 403),
]


async def test_agent_writes_only_its_own_objects(seeded: ApiServer) -> None:
    token = seeded.mint_token("agent:cluster-a")
    for what, method, path, body, content_type, code in AGENT_CASES:
        before = seeded.store.rv
        status, answer = await request(seeded, method, path, body=body, content_type=content_type or None, token=token)
        assert status == code, (what, answer)
        if code == 403:
            assert answer["reason"] == "Forbidden" and "cluster-a" in answer["message"], what
            assert seeded.store.rv == before, what


async def test_viewer_reads_but_cannot_write(server: ApiServer) -> None:
    token = server.mint_token("viewer")
    status, _ = await request(server, "GET", QUEUES, token=token)
    assert status == 200
    status, answer = await request(server, "DELETE", QUEUES + "/default", token=token)
    assert status == 403 and "viewers may only" in answer["message"]


async def test_tokens_minted_while_running_work_at_once(server: ApiServer) -> None:
    from federation.apiserver.auth import TokenAuthenticator

    token = TokenAuthenticator(server.data_dir / "tokens.csv").mint("late", "viewer")  # another process's write
    status, _ = await request(server, "GET", QUEUES, token=token)
    assert status == 200


def test_token_file_format() -> None:
    users = parse_token_file('t1,alice,1,"caldera:admin"\n# comment\nt2,agent-a,2,"x,caldera:agent:cluster-a"\nt3,bob,3\n')
    assert {t: u.role for t, u in users.items()} == {"t1": "admin", "t2": "agent:cluster-a", "t3": "viewer"}


async def test_health_and_metrics_need_no_token(server: ApiServer) -> None:
    await request(server, "GET", QUEUES)
    for path in ("/healthz", "/readyz", "/livez"):
        status, body = await request(server, "GET", path, token="")
        assert status == 200 and body == "ok"
    status, text = await request(server, "GET", "/metrics", token="")
    assert status == 200 and 'apiserver_request_total{code="200",resource="queues",verb="list"}' in text
    status, version = await request(server, "GET", "/version", token="")
    assert status == 200 and version["major"] == "1"
