"""kr8s against ``caldera serve``: its ``get(kind, name)`` sends ``fieldSelector=metadata.name=x,`` (an
empty last term, which kube skips) and ``whoami`` posts a TokenReview."""

from __future__ import annotations

import json
from pathlib import Path

import kr8s
import pytest
from kr8s.objects import ConfigMap, new_class

#: kr8s warns that a server newer than the versions it was tested with (1.28-1.35) may differ
pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore:Kubernetes version v1.37:UserWarning")]
NS = "default"
Queue = new_class("Queue", version="scheduling.volcano.sh/v1beta1", namespaced=False)


@pytest.fixture(scope="module")
def api(kubeconfig: Path) -> kr8s.Api:
    return kr8s.api(kubeconfig=str(kubeconfig))


def _configmap(api: kr8s.Api, name: str, **labels: str) -> ConfigMap:
    return ConfigMap({"metadata": {"name": name, "namespace": NS, "labels": labels}, "data": {"k": "v"}}, api=api)


def test_create_get_list_delete(api: kr8s.Api) -> None:
    _configmap(api, "kr-a", team="kr-a").create()
    _configmap(api, "kr-b", team="kr-b").create()
    [found] = api.get("configmaps", "kr-a", namespace=NS)
    assert found.raw["data"] == {"k": "v"}
    assert [c.name for c in api.get("configmaps", namespace=NS, label_selector={"team": "kr-b"})] == ["kr-b"]
    assert [c.name for c in api.get("configmaps", namespace=NS, field_selector="metadata.name=kr-a")] == ["kr-a"]
    found.delete()
    assert not ConfigMap("kr-a", namespace=NS, api=api).exists()


def test_watch_and_patches(api: kr8s.Api) -> None:
    cm = _configmap(api, "kr-w")
    cm.create()
    cm.patch({"data": {"m": "1"}})  # merge patch
    cm.patch([{"op": "add", "path": "/data/j", "value": "2"}], type="json")
    assert cm.raw["data"] == {"k": "v", "m": "1", "j": "2"}
    events = api.watch("configmaps", namespace=NS, field_selector="metadata.name=kr-w", since="0")
    try:
        kind, obj = next(events)
    finally:
        events.close()
    assert kind == "ADDED" and obj.name == "kr-w"


def test_custom_resource_and_whoami(api: kr8s.Api) -> None:
    queue = Queue({"metadata": {"name": "kr-q"}, "spec": {"weight": 2}}, api=api)
    queue.create()
    queue.patch({"spec": {"weight": 5}})
    assert Queue.get("kr-q", api=api).raw["spec"]["weight"] == 5
    queue.delete()
    assert api.whoami()


async def test_strategic_merge_and_server_side_apply(kubeconfig: Path) -> None:
    """kr8s patches by merge or JSON patch; the other two types go through its raw ``call_api``."""
    import kr8s.asyncio

    api = await kr8s.asyncio.api(kubeconfig=str(kubeconfig))
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kr-s"}, "data": {"k": "v"}}
    async with api.call_api("POST", version="v1", url="configmaps", namespace=NS, content=json.dumps(cm)):
        pass
    async with api.call_api("PATCH", version="v1", url="configmaps/kr-s", namespace=NS,
                            content=json.dumps({"data": {"s": "3"}}),
                            headers={"Content-Type": "application/strategic-merge-patch+json"}) as resp:
        assert resp.json()["data"] == {"k": "v", "s": "3"}
    applied = dict(cm, data={"a": "4"})
    async with api.call_api("PATCH", version="v1", url="configmaps/kr-s?fieldManager=kr8s-test&force=true",
                            namespace=NS, content=json.dumps(applied),
                            headers={"Content-Type": "application/apply-patch+yaml"}) as resp:
        assert resp.json()["data"]["a"] == "4"
    session = getattr(api, "_session", None)  # kr8s has no public close; its httpx client would leak
    if session is not None:
        await session.aclose()
