"""lightkube against ``caldera serve``: typed core objects, generic resources loaded from the
read-only CRDs (``apiextensions.k8s.io/v1``), every patch type and server-side apply."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from lightkube import ApiError, Client, KubeConfig
from lightkube.generic_resource import get_generic_resource, load_in_cluster_generic_resources
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import ConfigMap
from lightkube.types import PatchType

pytestmark = pytest.mark.slow  # one caldera serve per module: its start dominates
NS = "default"


@pytest.fixture(scope="module")
def kube(kubeconfig: Path) -> Iterator[Client]:
    client = Client(KubeConfig.from_file(str(kubeconfig)), namespace=NS, field_manager="lightkube-test")
    yield client
    client.close()


def _configmap(name: str, **labels: str) -> ConfigMap:
    return ConfigMap(metadata=ObjectMeta(name=name, labels=labels), data={"k": "v"})


def test_create_get_list_watch_delete(kube: Client) -> None:
    kube.create(_configmap("lk-a", team="lk-a"))
    kube.create(_configmap("lk-b", team="lk-b"))
    assert kube.get(ConfigMap, "lk-a").data == {"k": "v"}
    assert [c.metadata.name for c in kube.list(ConfigMap, labels={"team": "lk-b"})] == ["lk-b"]
    assert [c.metadata.name for c in kube.list(ConfigMap, fields={"metadata.name": "lk-a"})] == ["lk-a"]
    for op, obj in kube.watch(ConfigMap, fields={"metadata.name": "lk-b"}, resource_version="0"):
        assert (op, obj.metadata.name) == ("ADDED", "lk-b")
        break
    kube.delete(ConfigMap, "lk-b")
    with pytest.raises(ApiError) as missing:
        kube.get(ConfigMap, "lk-b")
    assert missing.value.status.code == 404


@pytest.mark.parametrize(("patch_type", "patch", "expected"), [
    (PatchType.MERGE, {"data": {"m": "1"}}, {"k": "v", "m": "1"}),
    (PatchType.JSON, [{"op": "add", "path": "/data/j", "value": "2"}], {"k": "v", "j": "2"}),
    (PatchType.STRATEGIC, {"data": {"s": "3"}}, {"k": "v", "s": "3"}),
])
def test_each_patch_type(kube: Client, patch_type: PatchType, patch: object, expected: dict) -> None:
    name = f"lk-{patch_type.name.lower()}"
    kube.create(_configmap(name))
    assert kube.patch(ConfigMap, name, patch, patch_type=patch_type).data == expected


def test_server_side_apply(kube: Client) -> None:
    applied = kube.apply(ConfigMap(metadata=ObjectMeta(name="lk-apply"), data={"a": "1"}))
    assert applied.data == {"a": "1"}
    assert [m.manager for m in applied.metadata.managedFields] == ["lightkube-test"]


def test_generic_resources_from_crds(kube: Client) -> None:
    load_in_cluster_generic_resources(kube)
    queue_kind = get_generic_resource("scheduling.volcano.sh/v1beta1", "Queue")
    assert queue_kind is not None
    kube.create(queue_kind(metadata=ObjectMeta(name="lk-q"), spec={"weight": 2}))
    patched = kube.patch(queue_kind, "lk-q", {"spec": {"weight": 3}}, patch_type=PatchType.MERGE)
    assert patched["spec"]["weight"] == 3
    with pytest.raises(ApiError) as refused:  # kube refuses strategic merge patches of custom resources
        kube.patch(queue_kind, "lk-q", {"spec": {"weight": 4}}, patch_type=PatchType.STRATEGIC)
    assert refused.value.status.code == 415
    kube.delete(queue_kind, "lk-q")
