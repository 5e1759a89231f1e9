"""Member pods and PodGroups at the federation (docs/protocol.md "Member pods"), on a real in-process
API server: agents write raw copies into ``karmada-es-<cluster>``; users read them translated
(list, GET, watch, selectors, tables, paging, the karmada-search proxy path) and may not write them."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from federation.apiserver.server import ApiServer, ServerConfig
from tests.member_pods.builders import CACHED_FROM, Client, pod, podgroup, raw

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"
PROXY = "/apis/search.karmada.io/v1alpha1/proxying/karmada/proxy"


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[ApiServer]:
    async with ApiServer(ServerConfig(data_dir=tmp_path / "data")) as srv:
        admin = Client(srv, srv.admin_token)
        for ns in ("karmada-es-a", "karmada-es-b", "team"):
            status, _ = await admin.call("POST", "/api/v1/namespaces", {"metadata": {"name": ns}})
            assert status == 201
        yield srv


async def report_failover_copies(srv: ApiServer) -> tuple[Client, Client]:
    """worker-0 in a (generation 1, the lost cluster) and in b (generation 2); worker-1 in b only."""
    agent_a, agent_b = Client(srv, srv.mint_token("agent:a")), Client(srv, srv.mint_token("agent:b"))
    for agent, cluster, body in ((agent_a, "a", pod("job-worker-0", "a-n1", "Running", 1)),
                                 (agent_b, "b", pod("job-worker-0", "b-n4", "Running", 2)),
                                 (agent_b, "b", pod("job-worker-1", "b-n5", "Pending", 2)),
                                 (agent_b, "b", podgroup("job", 2))):
        status, doc = await agent.create_raw(cluster, body)
        assert status == 201, doc
    return agent_a, agent_b


async def test_the_list_shows_every_copy_and_a_get_the_current_generation(server: ApiServer) -> None:
    await report_failover_copies(server)
    admin = Client(server, server.admin_token)
    _, doc = await admin.call("GET", "/api/v1/pods")
    seen = [(i["metadata"]["namespace"], i["metadata"]["name"], i["metadata"]["annotations"][CACHED_FROM])
            for i in doc["items"]]
    assert seen == [("team", "job-worker-0", "a"), ("team", "job-worker-0", "b"), ("team", "job-worker-1", "b")]
    _, doc = await admin.call("GET", "/api/v1/namespaces/team/pods/job-worker-0")
    assert doc["metadata"]["annotations"][CACHED_FROM] == "b" and doc["spec"]["nodeName"] == "b-n4"
    _, doc = await admin.call("GET", "/api/v1/namespaces/other/pods")
    assert doc["items"] == []
    status, doc = await admin.call("GET", "/api/v1/namespaces/team/pods/job-worker-9")
    assert status == 404 and doc["message"] == 'pods "job-worker-9" not found'
    _, doc = await admin.call("GET", "/apis/scheduling.volcano.sh/v1beta1/podgroups")
    assert [(i["metadata"]["namespace"], i["metadata"]["name"]) for i in doc["items"]] == [("team", "job")]


async def test_a_finished_copy_loses_to_a_live_one_of_the_same_generation(server: ApiServer) -> None:
    agent_a, agent_b = Client(server, server.mint_token("agent:a")), Client(server, server.mint_token("agent:b"))
    await agent_a.create_raw("a", pod("w-0", "a-n1", "Running", 3))
    await agent_b.create_raw("b", pod("w-0", "b-n1", "Failed", 3))
    _, doc = await Client(server, server.admin_token).call("GET", "/api/v1/namespaces/team/pods/w-0")
    assert doc["metadata"]["annotations"][CACHED_FROM] == "a"


SELECTIONS = [  # (query, the copies it selects, as name@cluster)
    ("fieldSelector=spec.nodeName=b-n4", ["job-worker-0@b"]),
    ("fieldSelector=status.phase=Running", ["job-worker-0@a", "job-worker-0@b"]),
    ("fieldSelector=metadata.namespace=team,status.phase!=Running", ["job-worker-1@b"]),
    ("labelSelector=caldera.io/placement-generation=1", ["job-worker-0@a"]),
    ("labelSelector=volcano.sh/task-index in (1)", ["job-worker-1@b"]),
]


async def test_selectors_apply_to_the_member_objects(server: ApiServer) -> None:
    await report_failover_copies(server)  # one server for the table: each case only reads
    admin = Client(server, server.admin_token)
    for query, expected in SELECTIONS:
        _, doc = await admin.call("GET", f"/api/v1/pods?{query}")
        got = [f"{i['metadata']['name']}@{i['metadata']['annotations'][CACHED_FROM]}" for i in doc["items"]]
        assert got == expected, query


async def test_pages_do_not_lose_a_copy_between_two_pages(server: ApiServer) -> None:
    await report_failover_copies(server)
    admin = Client(server, server.admin_token)
    seen, token = [], ""
    while True:
        _, doc = await admin.call("GET", "/api/v1/pods?limit=1" + (f"&continue={token}" if token else ""))
        seen += [f"{i['metadata']['name']}@{i['metadata']['annotations'][CACHED_FROM]}" for i in doc["items"]]
        token = doc["metadata"].get("continue", "")
        if not token:
            break
    assert seen == ["job-worker-0@a", "job-worker-0@b", "job-worker-1@b"]


async def test_wide_table_has_node_and_cluster(server: ApiServer) -> None:
    await report_failover_copies(server)
    _, doc = await Client(server, server.admin_token).call("GET", "/api/v1/pods", accept=TABLE)
    names = [c["name"] for c in doc["columnDefinitions"]]
    wide = {c["name"] for c in doc["columnDefinitions"] if c["priority"] == 1}
    assert {"NODE", "CLUSTER"} <= wide
    rows = [dict(zip(names, r["cells"], strict=True)) for r in doc["rows"]]
    assert [(r["Name"], r["NODE"], r["CLUSTER"]) for r in rows] == [
        ("job-worker-0", "a-n1", "a"), ("job-worker-0", "b-n4", "b"), ("job-worker-1", "b-n5", "b")]


async def test_the_karmada_search_proxy_path_serves_the_same_objects(server: ApiServer) -> None:
    await report_failover_copies(server)
    admin = Client(server, server.admin_token)
    for path in ("/api/v1/pods", "/api/v1/namespaces/team/pods/job-worker-0",
                 "/apis/scheduling.volcano.sh/v1beta1/namespaces/team/podgroups"):
        direct, proxied = await admin.call("GET", path), await admin.call("GET", PROXY + path)
        assert proxied == direct
    status, _ = await admin.call("GET", PROXY + "/nope")
    assert status == 404


async def test_a_watch_sees_translated_events_and_resumes_from_a_resource_version(server: ApiServer) -> None:
    agent_b = Client(server, server.mint_token("agent:b"))
    admin = Client(server, server.admin_token)
    _, listing = await admin.call("GET", "/api/v1/namespaces/team/pods")
    rv = listing["metadata"]["resourceVersion"]
    await agent_b.create_raw("b", pod("w-0", "", "Pending", 1))
    await agent_b.call("PUT", "/api/v1/namespaces/karmada-es-b/pods/team.w-0/status",
                       raw("b", pod("w-0", "", "Running", 1)))
    await agent_b.call("DELETE", "/api/v1/namespaces/karmada-es-b/pods/team.w-0")
    events = await admin.watch(f"/api/v1/namespaces/team/pods?watch=true&resourceVersion={rv}", 3)
    assert [(e["type"], e["object"]["metadata"]["namespace"], e["object"]["metadata"]["name"],
             e["object"]["metadata"]["annotations"][CACHED_FROM]) for e in events] == [
        ("ADDED", "team", "w-0", "b"), ("MODIFIED", "team", "w-0", "b"), ("DELETED", "team", "w-0", "b")]
    assert events[1]["object"]["status"]["phase"] == "Running"
    # a field selector turns a phase change into ADDED / DELETED, as for any kind
    events = await admin.watch(f"/api/v1/pods?watch=true&resourceVersion={rv}&fieldSelector=status.phase=Running", 2)
    assert [e["type"] for e in events] == ["ADDED", "DELETED"]


REFUSED_WRITES = [  # (method, path, body): every one 405, nothing changed
    ("POST", "/api/v1/namespaces/team/pods", {"metadata": {"name": "x"}, "spec": {"containers": [{"name": "c"}]}}),
    ("DELETE", "/api/v1/namespaces/team/pods/job-worker-0", None),
    ("PATCH", "/api/v1/namespaces/team/pods/job-worker-0", {"metadata": {"labels": {"a": "b"}}}),
    ("PUT", "/api/v1/namespaces/team/pods/job-worker-0/status", {"metadata": {"name": "job-worker-0"}}),
    ("POST", "/api/v1/namespaces/team/pods/job-worker-0/eviction", {"metadata": {"name": "job-worker-0"}}),
    ("POST", "/api/v1/namespaces/team/bindings", {"metadata": {"name": "job-worker-0"}, "target": {"name": "n"}}),
    ("DELETE", "/apis/scheduling.volcano.sh/v1beta1/namespaces/team/podgroups/job", None),
    ("DELETE", "/api/v1/namespaces/karmada-es-b/pods/team.job-worker-1", None),  # a raw copy, by a user
    ("DELETE", "/api/v1/namespaces/team/pods", None),  # deletecollection
]


async def test_users_cannot_write_member_objects_at_the_federation(server: ApiServer) -> None:
    await report_failover_copies(server)
    admin = Client(server, server.admin_token)
    _, before = await admin.call("GET", "/api/v1/pods")
    for method, path, body in REFUSED_WRITES:
        status, doc = await admin.call(method, path, body,
                                       content_type="application/merge-patch+json" if method == "PATCH" else None)
        assert status == 405, (method, path, doc)
        assert "read-only here" in doc["message"] and "member cluster" in doc["message"], (method, path)
    _, after = await admin.call("GET", "/api/v1/pods")
    assert after == before  # nothing changed, not even a resourceVersion


async def test_the_405_names_the_clusters_holding_the_pod(server: ApiServer) -> None:
    await report_failover_copies(server)
    _, doc = await Client(server, server.admin_token).call("DELETE", "/api/v1/namespaces/team/pods/job-worker-0")
    assert "cached from member clusters a, b" in doc["message"]


async def test_an_agent_writes_only_its_own_clusters_copies(server: ApiServer) -> None:
    agent_b = Client(server, server.mint_token("agent:b"))
    status, doc = await agent_b.create_raw("a", pod("w-0", "a-n1", "Running", 1))
    assert status == 403 and "may only report pods and PodGroups in karmada-es-b" in doc["message"]
    viewer = Client(server, server.mint_token("viewer"))
    status, _ = await viewer.create_raw("b", pod("w-0", "b-n1", "Running", 1))
    assert status in (403, 405)


async def test_member_mode_keeps_pods_writable(tmp_path: Path) -> None:
    async with ApiServer(ServerConfig(data_dir=tmp_path / "m", member_mode=True)) as srv:
        admin = Client(srv, srv.admin_token)
        status, doc = await admin.call("POST", "/api/v1/namespaces/default/pods",
                                       {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i"}]}})
        assert status == 201, doc
        status, _ = await admin.call("GET", PROXY + "/api/v1/pods")
        assert status == 404  # no karmada-search proxy on a member stand-in


async def test_a_restarted_server_serves_what_agents_reported(tmp_path: Path) -> None:
    config = ServerConfig(data_dir=tmp_path / "data")
    async with ApiServer(config) as srv:
        admin = Client(srv, srv.admin_token)
        await admin.call("POST", "/api/v1/namespaces", {"metadata": {"name": "karmada-es-b"}})
        await Client(srv, srv.mint_token("agent:b")).create_raw("b", pod("w-0", "b-n1", "Running", 1))
    async with ApiServer(config) as srv:
        _, doc = await Client(srv, srv.admin_token).call("GET", "/api/v1/namespaces/team/pods/w-0")
        assert doc["metadata"]["annotations"][CACHED_FROM] == "b"


async def test_logs_are_shipped_by_the_pods_agent_on_request(server: ApiServer) -> None:
    agent_a, agent_b = await report_failover_copies(server)
    viewer = Client(server, server.mint_token("viewer"))
    reader = asyncio.ensure_future(viewer.call("GET", "/api/v1/namespaces/team/pods/job-worker-0/log?tailLines=5",
                                               raw_text=True))
    # the current copy is b's: a's agent gets nothing, b's gets the request
    _, polled_a = await agent_a.call("GET", "/caldera/v1/clusters/a/logrequests?timeoutSeconds=0")
    assert polled_a["items"] == []
    _, polled = await agent_b.call("GET", "/caldera/v1/clusters/b/logrequests?timeoutSeconds=10")
    [item] = polled["items"]
    assert (item["namespace"], item["name"], item["tailLines"], item["follow"]) == ("team", "job-worker-0", 5, False)
    status, doc = await agent_a.call("POST", f"/caldera/v1/clusters/b/logrequests/{item['id']}", b"x")
    assert status == 403, doc  # only b's agent answers for b
    status, _ = await agent_b.call("POST", f"/caldera/v1/clusters/b/logrequests/{item['id']}",
                                   b"start\nrank 0\nexit: code 0\n")
    assert status == 200
    assert await reader == (200, "start\nrank 0\nexit: code 0\n")
    # an agent's refusal reaches the client as a Status
    reader = asyncio.ensure_future(viewer.call("GET", "/api/v1/namespaces/team/pods/job-worker-1/log"))
    _, polled = await agent_b.call("GET", "/caldera/v1/clusters/b/logrequests?timeoutSeconds=10")
    await agent_b.call("POST", f"/caldera/v1/clusters/b/logrequests/{polled['items'][0]['id']}?code=404&message=gone")
    status, doc = await reader
    assert status == 404 and doc["message"] == "gone"


async def test_pods_log_needs_rbac(server: ApiServer) -> None:
    await report_failover_copies(server)
    carol = Client(server, server.state.auth.mint_for("carol", []))  # a user bound to nothing
    status, doc = await carol.call("GET", "/api/v1/namespaces/team/pods/job-worker-0/log")
    assert status == 403 and 'cannot get resource "pods/log"' in doc["message"], doc
    status, doc = await carol.call("GET", "/api/v1/namespaces/team/pods")
    assert status == 403, doc


def test_builders_make_raw_names_the_view_understands() -> None:
    body = raw("b", pod("w-0", "n", "Running", 1))
    assert body["metadata"]["name"] == "team.w-0" and body["metadata"]["namespace"] == "karmada-es-b"
    assert json.loads(json.dumps(body)) == body


@pytest.mark.parametrize("env, expected_rank", [
    ([{"name": "VC_TASK_INDEX", "value": "3"}, {"name": "RANK", "value": "4"}], "4"),  # pytorch plugin's RANK
    ([{"name": "VC_TASK_INDEX", "value": "3"}], "3"),
    ([], "3"),  # the task-index label
])
def test_the_job_pages_rank_rows(env: list[dict[str, str]], expected_rank: str) -> None:
    from federation.ui.data import pod_rows

    body = raw("b", pod("job-worker-3", "b-n1", "Running", 1))
    body["metadata"] = {**body["metadata"], "name": "job-worker-3", "namespace": "team"}
    body["spec"]["containers"][0]["env"] = env
    [row] = pod_rows([body])
    assert row == {"name": "job-worker-3", "namespace": "team", "cluster": "b", "node": "b-n1", "task": "worker",
                   "index": 3, "rank": expected_rank, "phase": "Running",
                   "log": "/api/v1/namespaces/team/pods/job-worker-3/log"}


async def test_a_log_request_no_agent_answers_is_503_naming_the_cluster(server: ApiServer,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from federation.apiserver import member_logs

    monkeypatch.setattr(member_logs, "ANSWER_TIMEOUT", 0.2)
    await report_failover_copies(server)
    viewer = Client(server, server.mint_token("viewer"))
    status, doc = await viewer.call("GET", "/api/v1/namespaces/team/pods/job-worker-1/log")
    assert status == 503 and "the agent of member cluster b did not answer" in doc["message"], doc
    status, doc = await viewer.call("GET", "/api/v1/namespaces/team/pods/job-worker-1/log?tailLines=x")
    assert status == 400 and "tailLines: must be an integer" in doc["message"], doc
    status, doc = await viewer.call("GET", "/api/v1/namespaces/team/pods/nope/log")
    assert status == 404, doc


CLUSTER_PROXY = "/apis/cluster.karmada.io/v1alpha1/clusters/{}/proxy/api/v1"


async def test_the_cluster_proxy_path_serves_one_members_copies(server: ApiServer) -> None:
    agent_a, _ = await report_failover_copies(server)
    admin = Client(server, server.admin_token)
    _, doc = await admin.call("GET", CLUSTER_PROXY.format("b") + "/namespaces/team/pods")
    assert [i["metadata"]["name"] for i in doc["items"]] == ["job-worker-0", "job-worker-1"]
    _, doc = await admin.call("GET", CLUSTER_PROXY.format("a") + "/pods")
    assert [i["metadata"]["name"] for i in doc["items"]] == ["job-worker-0"]
    # the lost cluster's copy of a name (a GET without the cluster answers b's, the current one)
    _, doc = await admin.call("GET", CLUSTER_PROXY.format("a") + "/namespaces/team/pods/job-worker-0")
    assert doc["spec"]["nodeName"] == "a-n1"
    status, _ = await admin.call("GET", CLUSTER_PROXY.format("a") + "/namespaces/team/pods/job-worker-1")
    assert status == 404
    status, _ = await admin.call("GET", CLUSTER_PROXY.format("a") + "/namespaces/team/configmaps")
    assert status == 404
    # its log is asked of that cluster's agent
    reader = asyncio.ensure_future(admin.call("GET", CLUSTER_PROXY.format("a") + "/namespaces/team/pods/job-worker-0/log",
                                              raw_text=True))
    _, polled = await agent_a.call("GET", "/caldera/v1/clusters/a/logrequests?timeoutSeconds=10")
    await agent_a.call("POST", f"/caldera/v1/clusters/a/logrequests/{polled['items'][0]['id']}", b"from a\n")
    assert await reader == (200, "from a\n")
    # Karmada's rule: the proxy needs get on clusters/proxy, besides the pods themselves
    carol = Client(server, server.state.auth.mint_for("carol", []))
    status, doc = await carol.call("GET", CLUSTER_PROXY.format("a") + "/pods")
    assert status == 403 and 'cannot get resource "clusters/proxy"' in doc["message"], doc


async def test_the_view_works_on_etcd_too(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> None:
    """The same view over the etcd store (its watch cache feeds the listener): list, GET, watch."""
    from tests.apiserver.conftest import etcd_config
    from tests.etcd_process import EtcdCluster, require_etcd

    require_etcd()
    cluster = EtcdCluster(tmp_path_factory.mktemp("etcd")).start()
    try:
        async with ApiServer(ServerConfig(data_dir=tmp_path / "data", etcd=etcd_config(cluster))) as srv:
            admin = Client(srv, srv.admin_token)
            for ns in ("karmada-es-a", "karmada-es-b", "team"):
                await admin.call("POST", "/api/v1/namespaces", {"metadata": {"name": ns}})
            _, listing = await admin.call("GET", "/api/v1/pods")
            rv = listing["metadata"]["resourceVersion"]
            await report_failover_copies(srv)
            _, doc = await admin.call("GET", "/api/v1/namespaces/team/pods")
            assert len(doc["items"]) == 3
            _, doc = await admin.call("GET", "/api/v1/namespaces/team/pods/job-worker-0")
            assert doc["metadata"]["annotations"][CACHED_FROM] == "b"
            events = await admin.watch(f"/api/v1/pods?watch=true&resourceVersion={rv}", 3)
            assert [e["object"]["metadata"]["annotations"][CACHED_FROM] for e in events] == ["a", "b", "b"]
    finally:
        cluster.stop()
