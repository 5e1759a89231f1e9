"""The kube gateway against ``caldera serve --member-mode`` (in-process): the member-cluster API
surface the agent needs — list/watch nodes and pods, create pods, bind through the Binding
subresource, evict through delete, annotate, events — with the real kubernetes-asyncio client."""

from __future__ import annotations

import asyncio
import logging

import pytest
from kubernetes_asyncio import client as k8s
from live_support import eventually, small_cluster, write_kubeconfig

from federation.apiserver.server import ApiServer, ServerConfig
from member_agent.cluster.cache import ClusterCache
from member_agent.cluster.clock import RealClock
from member_agent.cluster.gateway import AlreadyExists, BindConflict, NotFound, pod_node
from member_agent.cluster.kube import KubeGateway

pytestmark = pytest.mark.slow


def pod(name: str, namespace: str = "team", scheduler: str = "volcano") -> dict:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "labels": {"app": "x"},
                         "ownerReferences": [{"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": "j",
                                              "uid": "u1", "controller": True}]},
            "spec": {"schedulerName": scheduler, "containers": [
                {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}}


@pytest.fixture
async def member(tmp_path):
    async with (ApiServer(ServerConfig(data_dir=tmp_path / "member", member_mode=True)) as server,
                server.api_client() as admin):
        core = k8s.CoreV1Api(admin)
        for node in small_cluster():
            await core.create_node(node)
        gateway = await KubeGateway.from_kubeconfig(write_kubeconfig(server, "admin", tmp_path / "m.kubeconfig"))
        try:
            yield gateway, core
        finally:
            await gateway.close()


async def test_lists_nodes_and_pods_with_wire_dicts(member) -> None:
    gateway, core = member
    nodes = await gateway.list_nodes()
    assert sorted(n["metadata"]["name"] for n in nodes.items) == ["a100-0", "a100-1"]
    node = nodes.items[0]
    assert node["kind"] == "Node" and node["status"]["allocatable"]["nvidia.com/gpu"] == "8"
    assert "caldera.io/topology" in node["metadata"]["annotations"]
    assert nodes.resource_version
    created = await gateway.create_pod(pod("p0"))  # namespace "team" is created on demand
    assert created["metadata"]["uid"]
    listing = await gateway.list_pods()
    assert [p["metadata"]["name"] for p in listing.items] == ["p0"]
    assert listing.items[0]["kind"] == "Pod"


async def test_create_bind_conflict_and_delete(member) -> None:
    gateway, core = member
    await gateway.create_pod(pod("p1"))
    with pytest.raises(AlreadyExists):
        await gateway.create_pod(pod("p1"))
    await gateway.bind_pod("team", "p1", "a100-0")
    await gateway.bind_pod("team", "p1", "a100-0")  # the same node again is a success
    with pytest.raises(BindConflict):
        await gateway.bind_pod("team", "p1", "a100-1")
    with pytest.raises(NotFound):
        await gateway.bind_pod("team", "nope", "a100-0")
    bound = await gateway.get_pod("team", "p1")
    assert pod_node(bound) == "a100-0"
    # the local Job lives in the agent only: no owner reference the member's GC could act on
    assert not bound["metadata"].get("ownerReferences")
    await gateway.annotate_pod("team", "p1", {"volcano.sh/numa": "0"})
    assert (await gateway.get_pod("team", "p1"))["metadata"]["annotations"]["volcano.sh/numa"] == "0"
    await gateway.evict_pod("team", "p1", "preempted by team/high", grace_period_seconds=0)
    with pytest.raises(NotFound):
        await gateway.get_pod("team", "p1")
    await gateway.evict_pod("team", "p1", "again")  # idempotent
    await gateway.delete_pod("team", "p1")  # idempotent
    await gateway.record_event(pod("p1"), "Normal", "Scheduled", "Successfully assigned team/p1 to a100-0")


async def test_cache_follows_watches_and_relists(member) -> None:
    gateway, core = member
    cache = ClusterCache(gateway, RealClock())
    task = asyncio.ensure_future(cache.run())
    try:
        await eventually(lambda: cache.synced.is_set(), what="cache synced")
        assert set(cache.nodes) == {"a100-0", "a100-1"}
        await gateway.create_pod(pod("w1"))
        await eventually(lambda: "team/w1" in cache.pods, what="ADDED seen")
        await gateway.bind_pod("team", "w1", "a100-1")
        await eventually(lambda: pod_node(cache.pods.get("team/w1") or {}) == "a100-1", what="binding seen")
        await core.patch_node("a100-0", {"spec": {"unschedulable": True}})
        await eventually(lambda: cache.nodes["a100-0"]["spec"].get("unschedulable"), what="node change seen")
        await gateway.delete_pod("team", "w1", 0)
        await eventually(lambda: "team/w1" not in cache.pods, what="DELETED seen")
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_plugin_objects_are_created_updated_and_deleted(member) -> None:
    gateway, core = member
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "j-svc", "namespace": "team"},
              "data": {"VC_WORKER_NUM": "2"}}
    await gateway.apply_object(config)  # namespace "team" is created on demand
    await gateway.apply_object(dict(config, data={"VC_WORKER_NUM": "3"}))  # exists: updated in place
    assert (await core.read_namespaced_config_map("j-svc", "team")).data == {"VC_WORKER_NUM": "3"}
    await gateway.delete_object("ConfigMap", "team", "j-svc")
    await gateway.delete_object("ConfigMap", "team", "j-svc")  # idempotent
    with pytest.raises(k8s.ApiException):
        await core.read_namespaced_config_map("j-svc", "team")


async def test_nomination_is_set_and_cleared_through_pod_status(member) -> None:
    gateway, core = member
    await gateway.create_pod(pod("pre"))
    await gateway.nominate_pod("team", "pre", "a100-1")
    current = await gateway.get_pod("team", "pre")
    assert current["status"]["nominatedNodeName"] == "a100-1"
    assert not pod_node(current)  # a nomination is not a binding
    # the decisions the agent patches before binding survive the bind
    await gateway.annotate_pod("team", "pre", {"volcano.sh/gpu-index": "2,3"})
    await gateway.bind_pod("team", "pre", "a100-1")
    bound = await gateway.get_pod("team", "pre")
    assert bound["metadata"]["annotations"]["volcano.sh/gpu-index"] == "2,3" and pod_node(bound) == "a100-1"
    await gateway.nominate_pod("team", "pre", None)
    assert "nominatedNodeName" not in (await gateway.get_pod("team", "pre"))["status"]
    with pytest.raises(NotFound):
        await gateway.nominate_pod("team", "nope", "a100-0")


async def test_hypernodes_served_by_member_mode_and_listed_by_the_gateway(member) -> None:
    gateway, core = member
    assert await gateway.list_hyper_nodes() == []
    custom = k8s.CustomObjectsApi(core.api_client)
    leaf = {"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode", "metadata": {"name": "leaf0"},
            "spec": {"tier": 1, "members": [{"type": "Node", "selector": {"regexMatch": {"pattern": "^a100-"}}}]}}
    await custom.create_cluster_custom_object("topology.volcano.sh", "v1alpha1", "hypernodes", leaf)
    bad = {**leaf, "metadata": {"name": "leaf1"}, "spec": {"tier": 1, "members": []}}
    with pytest.raises(k8s.ApiException) as refused:
        await custom.create_cluster_custom_object("topology.volcano.sh", "v1alpha1", "hypernodes", bad)
    assert refused.value.status == 422 and "spec.members" in refused.value.body
    listed = await gateway.list_hyper_nodes()
    assert [(h["kind"], h["metadata"]["name"], h["spec"]["tier"]) for h in listed] == [("HyperNode", "leaf0", 1)]


async def test_fence_record_round_trips_through_a_member_configmap(member, caplog) -> None:
    from member_agent.fence_store import ConfigMapFenceStore

    caplog.set_level(logging.INFO, logger="caldera.agent.fence")
    gateway, _core = member
    store = ConfigMapFenceStore(gateway.core, gateway, "cluster-a")
    assert await store.load() is None  # first start: nothing to resume from
    assert "no fence record" in caplog.text
    record = {"lastRenewal": "2026-12-05T22:00:00Z", "lastRenewalUnix": 1796508000.0,
              "timing": {"lease": 10.0, "failover": 10.0, "termination": 3.0}}
    await store.save(record)  # creates caldera-system/caldera-agent-fence-cluster-a (and the namespace)
    assert await store.load() == record
    await store.save(dict(record, lastRenewalUnix=1796508010.0))  # later renewals patch it
    assert (await store.load() or {})["lastRenewalUnix"] == 1796508010.0
    assert "writing it whole" not in caplog.text, "the later save was one patch"


async def test_hypernode_status_written_when_it_changes_and_shown_by_kubectl_get(member) -> None:
    """The agent's HyperNode loop against a member-mode server: each served HyperNode gets
    status.nodeCount (through its member HyperNodes) and a condition by a PATCH of its status
    subresource, once per change; ``kubectl get hn`` shows Volcano's printer columns."""
    from member_agent.agent import Agent, AgentOptions
    from member_agent.hypernode_discovery import hypernode_loop

    gateway, core = member
    custom = k8s.CustomObjectsApi(core.api_client)

    def hn(name: str, tier: int, kind: str, selector: dict) -> dict:
        return {"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode", "metadata": {"name": name},
                "spec": {"tier": tier, "tierName": f"t{tier}", "members": [{"type": kind, "selector": selector}]}}

    for obj in (hn("leaf0", 1, "Node", {"regexMatch": {"pattern": "^a100-"}}),
                hn("spine0", 2, "HyperNode", {"exactMatch": {"name": "leaf0"}})):
        await custom.create_cluster_custom_object("topology.volcano.sh", "v1alpha1", "hypernodes", obj)
    agent = Agent(AgentOptions("m1"), gateway, RealClock())
    patches: list[str] = []
    lists = [0]
    patch, lister = gateway.patch_hyper_node_status, gateway.list_hyper_nodes

    async def counted_patch(name: str, status: dict) -> None:
        patches.append(name)
        await patch(name, status)

    async def counted_list() -> list:
        lists[0] += 1
        return await lister()

    gateway.patch_hyper_node_status, gateway.list_hyper_nodes = counted_patch, counted_list
    stop = asyncio.Event()
    tasks = [asyncio.create_task(agent.cache.run()),
             asyncio.create_task(hypernode_loop(agent, gateway, [], [], period=0.02, stop=stop))]

    async def statuses() -> dict:
        listed = await custom.list_cluster_custom_object("topology.volcano.sh", "v1alpha1", "hypernodes")
        return {h["metadata"]["name"]: h.get("status") or {} for h in listed["items"]}

    try:
        await eventually(lambda: sorted(patches) == ["leaf0", "spine0"])
        got = await statuses()
        assert got["leaf0"]["nodeCount"] == 2 and got["spine0"]["nodeCount"] == 2  # through leaf0
        condition = got["spine0"]["conditions"][0]
        assert (condition["type"], condition["status"], condition["reason"]) == ("MembersResolved", "True",
                                                                                 "MembersResolved")
        # unchanged: several more periods list the HyperNodes and write nothing
        seen = lists[0]
        await eventually(lambda: lists[0] >= seen + 3)
        assert sorted(patches) == ["leaf0", "spine0"]
        # a node claimed by two tier-1 HyperNodes (a problem naming both): the new one and leaf0 are
        # written (their condition turns False; the counts are what the selectors match), spine0 is not
        await custom.create_cluster_custom_object("topology.volcano.sh", "v1alpha1", "hypernodes",
                                                  hn("leaf-a", 1, "Node", {"exactMatch": {"name": "a100-0"}}))
        await eventually(lambda: sorted(patches) == ["leaf-a", "leaf0", "leaf0", "spine0"])
        got = await statuses()
        assert got["leaf0"]["nodeCount"] == 2 and got["leaf-a"]["nodeCount"] == 1
        problem = got["leaf0"]["conditions"][0]
        assert (problem["status"], problem["reason"]) == ("False", "TopologyProblem")
        assert "a100-0 is claimed by HyperNodes leaf-a and leaf0 of tier 1" in problem["message"]
        # kubectl get hn: Volcano's CRD columns Tier, TierName, NodeCount (then Age)
        table = await core.api_client.call_api(
            "/apis/topology.volcano.sh/v1alpha1/hypernodes", "GET", {}, [],
            {"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}, response_types_map={200: "object"},
            auth_settings=["BearerToken"], _return_http_data_only=True)
        assert [d["name"] for d in table["columnDefinitions"]] == ["Name", "TIER", "TIERNAME", "NODECOUNT", "Age"]
        rows = {r["cells"][0]: r["cells"][1:4] for r in table["rows"]}
        assert rows == {"leaf-a": ["1", "t1", 1], "leaf0": ["1", "t1", 2], "spine0": ["2", "t2", 2]}
    finally:
        stop.set()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
