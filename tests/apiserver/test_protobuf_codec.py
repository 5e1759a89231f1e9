"""The protobuf codec on kubectl's own request bytes, on bad bytes, and on content negotiation."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from federation.apiserver import protobuf
from federation.apiserver.protobuf.codec import CLASSES, MAGIC, envelope
from federation.apiserver.protobuf.media import preference

DATA = Path(__file__).parent / "data" / "protobuf"
GOLDEN: list[dict[str, Any]] = yaml.safe_load((DATA / "expected.yaml").read_text())


@pytest.mark.parametrize("case", GOLDEN, ids=[c["file"] for c in GOLDEN])
def test_kubectl_bodies_decode_to_their_objects(case: dict[str, Any]) -> None:
    assert protobuf.decode((DATA / case["file"]).read_bytes()) == case["object"]


@pytest.mark.parametrize("case", GOLDEN, ids=[c["file"] for c in GOLDEN])
def test_encode_then_decode_gives_the_object_back(case: dict[str, Any]) -> None:
    wire = protobuf.encode(case["object"])
    assert wire is not None and wire.startswith(MAGIC)
    assert protobuf.decode(wire) == case["object"]


SERVER_OBJECTS = [
    {"apiVersion": "v1", "kind": "Namespace",
     "metadata": {"name": "a", "uid": "u-1", "resourceVersion": "7", "generation": 1,
                  "creationTimestamp": "2026-12-03T07:23:47Z", "labels": {"team": "a", "empty": ""},
                  "managedFields": [{"manager": "kubectl", "operation": "Apply", "apiVersion": "v1",
                                     "time": "2026-12-03T07:23:47Z", "fieldsType": "FieldsV1",
                                     "fieldsV1": {"f:metadata": {"f:labels": {"f:team": {}}}}}]},
     "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}},
    {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
     "metadata": {"name": "cluster-a", "namespace": "karmada-cluster"},
     "spec": {"holderIdentity": "agent-1", "leaseDurationSeconds": 40,
              "renewTime": "2026-12-03T07:23:47.123456Z", "leaseTransitions": 0}},
    {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e1", "namespace": "default"},
     "involvedObject": {"kind": "Job", "name": "j", "namespace": "default", "apiVersion": "batch.volcano.sh/v1alpha1"},
     "reason": "Scheduled", "message": "placed", "type": "Normal", "count": 3,
     "firstTimestamp": "2026-12-03T07:00:00Z", "lastTimestamp": "2026-12-03T07:05:00Z",
     "source": {"component": "caldera-placement"}},
    {"apiVersion": "v1", "kind": "NamespaceList", "metadata": {"resourceVersion": "9", "continue": "abc",
                                                              "remainingItemCount": 4},
     "items": [{"metadata": {"name": "a"}}, {"metadata": {"name": "b"}}]},
    {"apiVersion": "v1", "kind": "Status", "metadata": {}, "status": "Failure", "message": "nope",
     "reason": "Invalid", "code": 422,
     "details": {"name": "x", "kind": "ConfigMap", "causes": [{"reason": "FieldValueInvalid", "message": "bad",
                                                              "field": "data"}]}},
]


@pytest.mark.parametrize("obj", SERVER_OBJECTS, ids=[o["kind"] for o in SERVER_OBJECTS])
def test_what_the_server_writes_round_trips(obj: dict[str, Any]) -> None:
    wire = protobuf.encode(obj)
    assert wire is not None
    back = protobuf.decode(wire)
    expected = {k: v for k, v in obj.items() if v != {}}  # an empty message is "not set"
    assert back == expected


def test_custom_kinds_and_unmodelled_fields_have_no_protobuf_form() -> None:
    assert protobuf.encode({"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": "j"}}) is None
    assert protobuf.encode({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
                            "notAField": 1}) is None
    assert protobuf.encode({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": 5}}) is None


def _with_unknown_field(number: int, payload: bytes) -> bytes:
    meta = CLASSES["meta.ObjectMeta"](name="cm")
    body = CLASSES["core.ConfigMap"]()
    body.metadata.CopyFrom(meta)
    raw = body.SerializeToString() + bytes([number << 3 | 2, len(payload)]) + payload
    return envelope("v1", "ConfigMap", raw)


BAD_BODIES = [
    ("no k8s prefix", b'{"kind": "Namespace"}', "does not start with"),
    ("truncated envelope", MAGIC + b"\x0a\x25\x0a", "malformed"),
    ("custom kind", envelope("batch.volcano.sh/v1alpha1", "Job", b""), "send it as application/json"),
    ("no kind", envelope("", "", b""), "no protobuf form"),
    ("truncated object", envelope("v1", "ConfigMap", b"\x0a\x10\x0a"), "ConfigMap message is malformed"),
]


@pytest.mark.parametrize(("case", "body", "says"), BAD_BODIES, ids=[b[0] for b in BAD_BODIES])
def test_bad_protobuf_bodies_are_refused_with_the_reason(case: str, body: bytes, says: str) -> None:
    with pytest.raises(protobuf.ProtobufError, match=says):
        protobuf.decode(body)


@pytest.mark.parametrize("payload", [b"", b"xyz"])
def test_an_unknown_field_number_is_skipped_as_protobuf_does(payload: bytes) -> None:
    # a newer client's field (or one this server does not model) must not fail the request
    decoded = protobuf.decode(_with_unknown_field(9, payload))
    assert decoded == {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}}


NEGOTIATION = [
    ("application/vnd.kubernetes.protobuf,application/json", True, True),
    ("application/json", False, True),
    ("", False, True),
    ("*/*", False, True),
    ("application/vnd.kubernetes.protobuf", True, False),
    ("application/json;q=0.5, application/vnd.kubernetes.protobuf", True, True),
    ("application/vnd.kubernetes.protobuf;q=0.1, application/json", False, True),
    ("application/json;as=Table;v=v1;g=meta.k8s.io,application/json", False, True),
]


@pytest.mark.parametrize(("accept", "protobuf_first", "json_ok"), NEGOTIATION)
def test_accept_header_negotiation(accept: str, protobuf_first: bool, json_ok: bool) -> None:
    wanted = preference(accept)
    assert (wanted.protobuf_first, wanted.json_acceptable) == (protobuf_first, json_ok)
