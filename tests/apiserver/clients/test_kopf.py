"""A kopf operator against ``caldera serve``: its create, update, field and delete handlers fire on a
Volcano Queue, and its annotations and finalizer land on the object.

kopf writes each handler's result into ``status.<handler>``; a Queue's status schema does not declare
those fields, so kube prunes them (fieldValidation Warn) instead of refusing the write, and so does
Caldera since issue 42. The operator runs in a thread with its own event loop, standalone (no
peering objects), and is stopped through its stop flag.
"""

from __future__ import annotations

import asyncio
import base64
import gc
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import kopf
import pytest
from kubernetes import client, config
from kubernetes.client.rest import ApiException

from tests.apiserver.serve_process import ServeProcess

QUEUE = ("scheduling.volcano.sh", "v1beta1", "queues")
DEADLINE = 60.0
FINALIZER = "kopf.zalando.org/KopfFinalizerMarker"
LAST_HANDLED = "kopf.zalando.org/last-handled-configuration"

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::ResourceWarning")]


class Operator:
    """A kopf registry with four handlers that record what they saw."""

    def __init__(self, serve: ServeProcess) -> None:
        self.seen: list[tuple[str, Any]] = []
        self.lock = threading.Lock()
        self.registry = kopf.OperatorRegistry()
        cfg = serve.kubeconfig_dict()
        cluster = cfg["clusters"][0]["cluster"]  # type: ignore[index]
        self.token = cfg["users"][0]["user"]["token"]  # type: ignore[index]
        self.url = cluster["server"]
        self.ca = base64.b64decode(cluster["certificate-authority-data"])
        self._register()

    def _record(self, event: str, value: Any) -> None:
        with self.lock:
            self.seen.append((event, value))

    def events(self) -> list[tuple[str, Any]]:
        with self.lock:
            return list(self.seen)

    def _register(self) -> None:
        reg = self.registry
        resource = ("scheduling.volcano.sh", "v1beta1", "queues")
        only = {"labels": {"kopf-test": "yes"}}  # the other modules' Queues (same server) are not its business

        @kopf.on.login(registry=reg)
        def login(**_: Any) -> kopf.ConnectionInfo:
            return kopf.ConnectionInfo(server=self.url, ca_data=self.ca, token=self.token)

        @kopf.on.create(*resource, registry=reg, **only)
        def created(spec: Any, **_: Any) -> dict[str, Any]:
            self._record("create", spec.get("weight"))
            return {"seen": True}  # written to status.created: pruned, with a warning

        @kopf.on.update(*resource, registry=reg, **only)
        def updated(spec: Any, **_: Any) -> None:
            self._record("update", spec.get("weight"))

        @kopf.on.field(*resource, field="spec.weight", registry=reg, **only)
        def weight(old: Any, new: Any, **_: Any) -> None:
            self._record("field", (old, new))

        @kopf.on.delete(*resource, registry=reg, **only)
        def deleted(name: str, **_: Any) -> None:
            self._record("delete", name)

    def run(self, stop: threading.Event, ready: threading.Event) -> None:
        settings = kopf.OperatorSettings()
        settings.posting.enabled = True
        settings.watching.server_timeout = 10
        asyncio.run(kopf.operator(registry=self.registry, settings=settings, clusterwide=True, standalone=True,
                                  stop_flag=stop, ready_flag=ready))


@pytest.fixture(scope="module")
def operator(serve: ServeProcess) -> Iterator[Operator]:
    op = Operator(serve)
    stop, ready = threading.Event(), threading.Event()
    thread = threading.Thread(target=op.run, args=(stop, ready), daemon=True)
    thread.start()
    assert ready.wait(DEADLINE), "kopf did not become ready"
    yield op
    stop.set()
    thread.join(DEADLINE)
    with warnings.catch_warnings():  # kopf's sessions died with its loop: collect them here, quietly,
        warnings.simplefilter("ignore", ResourceWarning)  # not in the next module's tests
        gc.collect()


def eventually(check: Callable[[], Any], what: str) -> Any:
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline:
        result = check()
        if result:
            return result
        time.sleep(0.1)
    raise AssertionError(f"not within {DEADLINE} s: {what}")


def test_kopf_handlers_fire_and_its_marks_land(operator: Operator, serve: ServeProcess) -> None:
    with config.new_client_from_config(config_file=str(serve.kubeconfig)) as api:
        custom = client.CustomObjectsApi(api)
        custom.create_cluster_custom_object(*QUEUE, {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                                                     "metadata": {"name": "kopf-q", "labels": {"kopf-test": "yes"}},
                                                     "spec": {"weight": 2}})

        def marked() -> dict[str, Any] | None:
            meta = custom.get_cluster_custom_object(*QUEUE, "kopf-q")["metadata"]
            return meta if FINALIZER in (meta.get("finalizers") or []) and LAST_HANDLED in (
                meta.get("annotations") or {}) else None

        def gone() -> bool:
            try:
                custom.get_cluster_custom_object(*QUEUE, "kopf-q")
            except ApiException as exc:
                return exc.status == 404
            return False

        eventually(lambda: ("create", 2) in operator.events(), "the create handler")
        eventually(marked, "kopf's finalizer and last-handled annotation")
        custom.patch_cluster_custom_object(*QUEUE, "kopf-q", {"spec": {"weight": 3}})
        eventually(lambda: ("update", 3) in operator.events(), "the update handler")
        eventually(lambda: ("field", (2, 3)) in operator.events(), "the field handler")
        custom.delete_cluster_custom_object(*QUEUE, "kopf-q")
        eventually(lambda: ("delete", "kopf-q") in operator.events(), "the delete handler")
        eventually(gone, "the finalizer removed and the Queue gone")
