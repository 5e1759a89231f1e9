"""The official ``kubernetes`` Python client (37.x) against ``caldera serve``.

It sends POST and PUT bodies without a Content-Type (kube reads them as JSON), so before issue 42
every create and replace failed with 415.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

from tests.apiserver.serve_process import ServeProcess

pytestmark = pytest.mark.slow  # one caldera serve per module: its start dominates
NS = "default"
QUEUES = ("scheduling.volcano.sh", "v1beta1", "queues")


@pytest.fixture(scope="module")
def api(kubeconfig: Path) -> Iterator[client.ApiClient]:
    with config.new_client_from_config(config_file=str(kubeconfig)) as api_client:
        yield api_client


def _configmap(name: str, **labels: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": labels},
            "data": {"k": "v"}}


def test_create_get_list_replace_delete(api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    core.create_namespaced_config_map(NS, _configmap("off-a", team="off-a"))
    core.create_namespaced_config_map(NS, _configmap("off-b", team="off-b"))
    assert core.read_namespaced_config_map("off-a", NS).data == {"k": "v"}
    by_label = core.list_namespaced_config_map(NS, label_selector="team=off-a")
    assert [c.metadata.name for c in by_label.items] == ["off-a"]
    by_field = core.list_namespaced_config_map(NS, field_selector="metadata.name=off-b")
    assert [c.metadata.name for c in by_field.items] == ["off-b"]
    current = core.read_namespaced_config_map("off-a", NS)
    current.data = {"k": "replaced"}
    assert core.replace_namespaced_config_map("off-a", NS, current).data == {"k": "replaced"}
    core.delete_namespaced_config_map("off-b", NS)
    with pytest.raises(ApiException) as missing:
        core.read_namespaced_config_map("off-b", NS)
    assert missing.value.status == 404


def test_watch_sees_a_create(api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    rv = core.list_namespaced_config_map(NS).metadata.resource_version
    core.create_namespaced_config_map(NS, _configmap("off-watched"))
    stream = watch.Watch().stream(core.list_namespaced_config_map, NS, resource_version=rv, timeout_seconds=5,
                                  field_selector="metadata.name=off-watched")
    first = next(stream)
    assert (first["type"], first["object"].metadata.name) == ("ADDED", "off-watched")


@pytest.mark.parametrize(("content_type", "patch", "expected"), [
    ("application/merge-patch+json", {"data": {"m": "1"}}, {"k": "v", "m": "1"}),
    ("application/json-patch+json", [{"op": "add", "path": "/data/j", "value": "2"}], {"k": "v", "j": "2"}),
    ("application/strategic-merge-patch+json", {"data": {"s": "3"}}, {"k": "v", "s": "3"}),
])
def test_each_patch_type(api: client.ApiClient, content_type: str, patch: object, expected: dict) -> None:
    core = client.CoreV1Api(api)
    name = "off-patch-" + content_type.split("/")[1].split("-")[0]
    core.create_namespaced_config_map(NS, _configmap(name))
    patched = core.patch_namespaced_config_map(name, NS, patch, _content_type=content_type)
    assert patched.data == expected


def test_server_side_apply_and_custom_objects(api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    applied = core.patch_namespaced_config_map(
        "off-applied", NS, _configmap("off-applied"), field_manager="team-a",
        _content_type="application/apply-patch+yaml")
    assert [m.manager for m in applied.metadata.managed_fields] == ["team-a"]
    custom = client.CustomObjectsApi(api)
    queue = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "off-q"},
             "spec": {"weight": 2}}
    custom.create_cluster_custom_object(*QUEUES, queue)
    patched = custom.patch_cluster_custom_object(*QUEUES, "off-q", {"spec": {"weight": 4}})
    assert patched["spec"]["weight"] == 4
    listed = custom.list_cluster_custom_object(*QUEUES, field_selector="metadata.name=off-q")
    assert [q["metadata"]["name"] for q in listed["items"]] == ["off-q"]
    custom.delete_cluster_custom_object(*QUEUES, "off-q")
    with pytest.raises(ApiException) as missing:
        custom.get_cluster_custom_object(*QUEUES, "off-q")
    assert missing.value.status == 404


def test_crds_and_token_review(api: client.ApiClient, serve: ServeProcess) -> None:
    crds = client.ApiextensionsV1Api(api).list_custom_resource_definition()
    assert "queues.scheduling.volcano.sh" in {c.metadata.name for c in crds.items}
    token = serve.kubeconfig_dict()["users"][0]["user"]["token"]  # type: ignore[index]
    review = client.AuthenticationV1Api(api).create_token_review(
        client.V1TokenReview(spec=client.V1TokenReviewSpec(token=token)))
    assert review.status.authenticated and review.status.user.username
