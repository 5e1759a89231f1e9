"""Watch semantics through kubernetes-asyncio's Watch (it sends watch=True)."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes_asyncio import client, watch

from federation.apiserver.server import ApiServer, ServerConfig
from federation.client import ResourceClient, api_client_from_dict
from policies.kinds import lookup

CM = lookup("v1", "ConfigMap")
POD = lookup("v1", "Pod")


def _cm(name: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default", "labels": labels}}


async def _collect(rc: ResourceClient, n: int, **kwargs: Any) -> list[tuple[str, str, str]]:
    """The first ``n`` events as (type, name, resourceVersion)."""
    out: list[tuple[str, str, str]] = []
    async with watch.Watch() as w:
        async for event in w.stream(rc.list, CM, "default", timeout_seconds=5, **kwargs):
            obj = event["object"]
            out.append((event["type"], obj["metadata"]["name"], obj["metadata"]["resourceVersion"]))
            if len(out) >= n:
                break
    return out


async def test_watch_from_resource_version_replays_in_order(api: client.ApiClient) -> None:
    rc = ResourceClient(api)
    first = await rc.create(CM, _cm("a"))
    await rc.patch(CM, "a", {"data": {"x": "1"}}, "default")
    await rc.create(CM, _cm("b"))
    await rc.delete(CM, "a", "default")
    events = await _collect(rc, 3, resource_version=first["metadata"]["resourceVersion"])
    assert [(t, n) for t, n, _ in events] == [("MODIFIED", "a"), ("ADDED", "b"), ("DELETED", "a")]
    rvs = [int(rv) for _, _, rv in events]
    assert rvs == sorted(rvs) and rvs[0] > int(first["metadata"]["resourceVersion"])


async def test_watch_without_resource_version_starts_with_current_state(api: client.ApiClient) -> None:
    rc = ResourceClient(api)
    await rc.create(CM, _cm("old"))
    seen: list[tuple[str, str]] = []
    async with watch.Watch() as w:
        async for event in w.stream(rc.list, CM, "default", timeout_seconds=5):
            seen.append((event["type"], event["object"]["metadata"]["name"]))
            if len(seen) == 1:
                await rc.create(CM, _cm("new"))  # after the initial state arrived: a live event
            if len(seen) == 2:
                break
    assert seen == [("ADDED", "old"), ("ADDED", "new")]


async def test_expired_resource_version_is_410_then_relist_works(server_config: ServerConfig) -> None:
    server_config.watch_history = 5
    async with ApiServer(server_config) as server, api_client_from_dict(server.kubeconfig()) as api:
        rc = ResourceClient(api)
        first = await rc.create(CM, _cm("c0"))
        for i in range(1, 12):
            await rc.create(CM, _cm(f"c{i}"))
        if server_config.etcd is not None:  # etcd keeps history until compacted (as kube-apiserver's does)
            await server.store.conn.compact(server.store.rv)  # type: ignore[attr-defined]
        with pytest.raises(client.ApiException) as expired:
            await _collect(rc, 1, resource_version=first["metadata"]["resourceVersion"])
        assert expired.value.status == 410
        listed = await rc.list(CM, "default")
        assert len(listed["items"]) == 12
        await rc.create(CM, _cm("after"))
        events = await _collect(rc, 1, resource_version=listed["metadata"]["resourceVersion"])
        assert events[0][:2] == ("ADDED", "after")


async def test_label_selector_watch_sees_objects_leave_and_enter(api: client.ApiClient) -> None:
    rc = ResourceClient(api)
    start = await rc.create(CM, _cm("sel", tier="gold"))
    await rc.patch(CM, "sel", {"metadata": {"labels": {"tier": "silver"}}}, "default")
    await rc.create(CM, _cm("other", tier="silver"))
    await rc.patch(CM, "sel", {"metadata": {"labels": {"tier": "gold"}}}, "default")
    events = await _collect(rc, 2, resource_version=start["metadata"]["resourceVersion"], label_selector="tier=gold")
    assert [(t, n) for t, n, _ in events] == [("DELETED", "sel"), ("ADDED", "sel")]


@pytest.mark.member_mode  # pods are written by a member's API server only
async def test_unbound_pod_watch_sees_delete_on_bind(api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    pod = {"metadata": {"name": "p"}, "spec": {"schedulerName": "volcano", "containers": [{"name": "c", "image": "x"}]}}
    created = await core.create_namespaced_pod("default", pod)
    binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p"}, "target": {"kind": "Node", "name": "n1"}}
    resp = await core.create_namespaced_binding("default", binding, _preload_content=False)
    assert resp.status == 201
    again = await core.create_namespaced_pod_binding("p", "default", binding, _preload_content=False)
    assert again.status == 409 and 'already assigned to node \\"n1\\"' in await again.text()
    seen = []
    async with watch.Watch() as w:
        async for event in w.stream(core.list_namespaced_pod, "default", field_selector="spec.nodeName=",
                                    resource_version=created.metadata.resource_version, timeout_seconds=5):
            seen.append((event["type"], event["object"].metadata.name, event["object"].spec.node_name))
            break
    assert seen == [("DELETED", "p", "n1")]


async def test_bookmarks_and_timeout(server_config: ServerConfig) -> None:
    server_config.bookmark_interval = 0.05
    async with ApiServer(server_config) as server, api_client_from_dict(server.kubeconfig()) as api:
        rc = ResourceClient(api)
        made = await rc.create(CM, _cm("bm"))
        kinds = []
        async with watch.Watch() as w:
            async for event in w.stream(rc.list, CM, "default", timeout_seconds=1, allow_watch_bookmarks=True,
                                        resource_version=made["metadata"]["resourceVersion"]):
                kinds.append(event["type"])
                if len(kinds) >= 2:
                    break
        assert kinds == ["BOOKMARK", "BOOKMARK"]
        ended = [e async for e in watch.Watch().stream(rc.list, CM, "default", timeout_seconds=1,
                                                       resource_version=made["metadata"]["resourceVersion"])]
        assert ended == [], "a watch with timeoutSeconds ends quietly when nothing happened"


async def test_pagination_with_limit_and_continue(api: client.ApiClient) -> None:
    rc = ResourceClient(api)
    for i in range(7):
        await rc.create(CM, _cm(f"page-{i}", page="yes"))
    names: list[str] = []
    token = None
    pages = 0
    while True:
        page = await rc.list(CM, "default", limit=3, _continue=token, label_selector="page=yes")
        names += [o["metadata"]["name"] for o in page["items"]]
        pages += 1
        token = page["metadata"].get("continue")
        if not token:
            break
    assert names == [f"page-{i}" for i in range(7)] and pages == 3


@pytest.mark.parametrize(("selector", "expected"), [
    ("env=prod", {"s1"}), ("env==prod", {"s1"}), ("env!=prod", {"s2", "s3"}), ("env in (prod,dev)", {"s1", "s2"}),
    ("env notin (prod)", {"s2", "s3"}), ("env", {"s1", "s2"}), ("!env", {"s3"}), ("env,team=a", {"s1"}),
])
async def test_label_selectors(api: client.ApiClient, selector: str, expected: set[str]) -> None:
    rc = ResourceClient(api)
    await rc.create(CM, _cm("s1", env="prod", team="a"))
    await rc.create(CM, _cm("s2", env="dev"))
    await rc.create(CM, _cm("s3"))
    listed = await rc.list(CM, "default", label_selector=selector)
    assert {o["metadata"]["name"] for o in listed["items"]} == expected


async def test_field_selectors(api: client.ApiClient) -> None:
    rc = ResourceClient(api)
    await rc.create(CM, _cm("f1"))
    await rc.create(CM, _cm("f2"))
    one = await rc.list(CM, "default", field_selector="metadata.name=f1")
    assert [o["metadata"]["name"] for o in one["items"]] == ["f1"]
    others = await rc.list(CM, None, field_selector="metadata.namespace=default,metadata.name!=f1")
    assert [o["metadata"]["name"] for o in others["items"]] == ["f2"]
