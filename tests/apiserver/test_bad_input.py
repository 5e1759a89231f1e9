"""Bad requests answer with the right code and a Status naming the problem; the store is unchanged."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from federation.apiserver.server import ApiServer
from tests.apiserver.helpers import request

QUEUES = "/apis/scheduling.volcano.sh/v1beta1/queues"
JOBS = "/apis/batch.volcano.sh/v1alpha1/namespaces/default/jobs"
GOOD_QUEUE = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "q"},
              "spec": {"weight": 1}}
BAD_JOB = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": "bad"},
           "spec": {"minAvailable": 3, "queue": "default",
                    "tasks": [{"name": "w", "replicas": -1, "template": {"spec": {"containers": [{"name": "c"}]}}}]}}

CASES: list[dict[str, Any]] = [
    {"id": "malformed-json", "path": QUEUES, "body": b'{"apiVersion": "scheduling', "code": 400,
     "reason": "BadRequest", "says": "not valid JSON"},
    {"id": "malformed-yaml", "path": QUEUES, "body": b"a: [1, 2\nb: {", "type": "application/yaml", "code": 400,
     "reason": "BadRequest", "says": "not valid YAML"},
    {"id": "protobuf", "path": QUEUES, "body": b"\x00\x01", "type": "application/vnd.kubernetes.protobuf",
     "code": 415, "reason": "UnsupportedMediaType", "says": "application/vnd.kubernetes.protobuf"},
    {"id": "unknown-kind", "path": "/apis/batch.volcano.sh/v1alpha1/namespaces/default/widgets",
     "body": b"{}", "code": 404, "reason": "NotFound", "says": "could not find the requested resource"},
    {"id": "unknown-group", "path": "/apis/example.com/v1", "method": "GET", "code": 404, "reason": "NotFound",
     "says": "could not find"},
    {"id": "kind-mismatch", "path": QUEUES, "body": orjson.dumps(dict(GOOD_QUEUE, kind="Job")), "code": 400,
     "reason": "BadRequest", "says": "does not match the expected kind"},
    # kube's default fieldValidation (Warn) drops an unknown field; Strict refuses it (issue 42)
    {"id": "unknown-field", "path": QUEUES + "?fieldValidation=Strict",
     "body": orjson.dumps(dict(GOOD_QUEUE, spec={"wieght": 2})), "code": 400, "reason": "BadRequest",
     "says": 'strict decoding error: unknown field "spec.wieght"'},
    {"id": "invalid-spec", "path": JOBS, "body": orjson.dumps(BAD_JOB), "code": 422, "reason": "Invalid",
     "field": "spec.tasks[0].replicas"},
    {"id": "bad-name", "path": QUEUES, "body": orjson.dumps(dict(GOOD_QUEUE, metadata={"name": "Not_OK"})),
     "code": 422, "reason": "Invalid", "field": "metadata.name"},
    {"id": "oversized", "path": QUEUES, "body": b'{"x": "' + b"a" * (3 * 1024 * 1024 + 10) + b'"}', "code": 413,
     "reason": "RequestEntityTooLarge", "says": "larger than the limit"},
    {"id": "patch-content-type", "path": QUEUES + "/default", "method": "PATCH", "body": b"{}",
     "type": "application/json", "code": 415, "reason": "UnsupportedMediaType", "says": "merge-patch"},
    {"id": "bad-selector", "path": QUEUES + "?labelSelector=a%20in%20", "method": "GET", "code": 400,
     "reason": "BadRequest", "says": "label selector"},
    {"id": "no-token", "path": QUEUES, "method": "GET", "token": "", "code": 401, "reason": "Unauthorized"},
    {"id": "wrong-token", "path": QUEUES, "method": "GET", "token": "nope", "code": 401, "reason": "Unauthorized"},
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c["id"])
async def test_bad_request(server: ApiServer, case: dict[str, Any]) -> None:
    before = server.store.rv
    status, body = await request(server, case.get("method", "POST"), case["path"], body=case.get("body"),
                                 content_type=case.get("type", "application/json"), token=case.get("token"))
    assert status == case["code"], body
    assert body["kind"] == "Status" and body["code"] == case["code"] and body["reason"] == case["reason"]
    if "says" in case:
        assert case["says"] in body["message"]
    if "field" in case:
        assert case["field"] in [c["field"] for c in body["details"]["causes"]]
        assert case["field"] in body["message"]
    assert server.store.rv == before, "a rejected request must not change the store"


async def test_invalid_update_changes_nothing(server: ApiServer) -> None:
    status, created = await request(server, "POST", QUEUES, body=orjson.dumps(GOOD_QUEUE))
    assert status == 201
    rv = server.store.rv
    status, body = await request(server, "PATCH", QUEUES + "/q", body=b'{"spec": {"weight": 70000}}',
                                 content_type="application/merge-patch+json")
    assert status == 422 and "spec.weight" in body["message"]
    status, now = await request(server, "GET", QUEUES + "/q")
    assert now == created and server.store.rv == rv


WEIGHT_ZERO_UPDATES = [
    ("merge-patch", "PATCH", "application/merge-patch+json", b'{"spec": {"weight": 0}}'),
    ("json-patch", "PATCH", "application/json-patch+json", b'[{"op": "replace", "path": "/spec/weight", "value": 0}]'),
    ("put", "PUT", "application/json", orjson.dumps(dict(GOOD_QUEUE, spec={"weight": 0}))),
]


@pytest.mark.parametrize("how,method,content_type,patch", WEIGHT_ZERO_UPDATES, ids=lambda v: str(v)[:12])
async def test_update_to_weight_zero_is_rejected_not_defaulted(server: ApiServer, how: str, method: str,
                                                             content_type: str, patch: bytes) -> None:
    """Volcano defaults weight 0 to 1 on CREATE only; an UPDATE to 0 breaks the 1..65535 rule."""
    status, created = await request(server, "POST", QUEUES, body=orjson.dumps(
        dict(GOOD_QUEUE, spec={"weight": 3})))
    assert status == 201
    rv = server.store.rv
    status, body = await request(server, method, QUEUES + "/q", body=patch, content_type=content_type)
    assert status == 422, (how, body)
    assert body["reason"] == "Invalid"
    assert [c["field"] for c in body["details"]["causes"]] == ["spec.weight"]
    assert "weight 0 must be between 1 and 65535" in body["message"] and 'Queue' in body["message"]
    status, now = await request(server, "GET", QUEUES + "/q")
    assert now == created and now["spec"]["weight"] == 3 and server.store.rv == rv


async def test_create_defaults_weight_zero_and_update_fills_only_absent_fields(server: ApiServer) -> None:
    status, created = await request(server, "POST", QUEUES, body=orjson.dumps(dict(GOOD_QUEUE, spec={"weight": 0})))
    assert status == 201 and created["spec"] == {"weight": 1, "reclaimable": True}
    # an update that leaves reclaimable out gets the default again instead of dropping it
    status, updated = await request(server, "PUT", QUEUES + "/q", body=orjson.dumps(
        dict(GOOD_QUEUE, spec={"weight": 5})))
    assert status == 200, updated
    assert updated["spec"] == {"weight": 5, "reclaimable": True}


async def test_default_queue_cannot_be_deleted(server: ApiServer) -> None:
    status, body = await request(server, "DELETE", QUEUES + "/default", body=None)
    assert status == 422 and "can not be deleted" in body["message"]
    status, _ = await request(server, "GET", QUEUES + "/default")
    assert status == 200
