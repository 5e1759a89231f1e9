"""etcd's messages are generated in the repository (federation/apiserver/etcdpb): the modules must
be what the protobuf compiler makes of the .proto files next to them, and keep etcd's numbering."""

from __future__ import annotations

from pathlib import Path

import pytest
from google.protobuf import descriptor_pb2

from federation.apiserver.etcdpb import kv_pb2, rpc_pb2

ROOT = Path(__file__).resolve().parents[2]
PROTOS = ["federation/apiserver/etcdpb/kv.proto", "federation/apiserver/etcdpb/rpc.proto"]


def test_generated_modules_match_the_proto_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    protoc = pytest.importorskip("grpc_tools.protoc", reason="grpcio-tools (the test extra) compiles the .proto files")
    out = tmp_path / "etcd.pb"
    monkeypatch.chdir(ROOT)
    assert protoc.main(["protoc", "-I.", f"--descriptor_set_out={out}", *PROTOS]) == 0
    compiled = {f.name: _without_json_names(f) for f in descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes()).file}
    for module in (kv_pb2, rpc_pb2):
        generated = descriptor_pb2.FileDescriptorProto()
        module.DESCRIPTOR.CopyToProto(generated)
        assert _without_json_names(generated) == compiled[generated.name], \
            f"{module.__name__} is stale: regenerate it (etcdpb/__init__.py)"


def _without_json_names(file: descriptor_pb2.FileDescriptorProto) -> descriptor_pb2.FileDescriptorProto:
    """The descriptor without the derived ``json_name``s (protoc's set has them, a module's copy not)."""
    def strip(message: descriptor_pb2.DescriptorProto) -> None:
        for field in message.field:
            field.ClearField("json_name")
        for nested in message.nested_type:
            strip(nested)

    for message in file.message_type:
        strip(message)
    return file


# etcd's own numbering (api/etcdserverpb/rpc.proto, api/mvccpb/kv.proto): what goes on the wire
ETCD_FIELDS = [
    (rpc_pb2.RangeRequest, {"key": 1, "range_end": 2, "revision": 4, "count_only": 9}),
    (rpc_pb2.RangeResponse, {"header": 1, "kvs": 2, "more": 3, "count": 4}),
    (rpc_pb2.Compare, {"result": 1, "target": 2, "key": 3, "version": 4, "create_revision": 5, "mod_revision": 6}),
    (rpc_pb2.RequestOp, {"request_range": 1, "request_put": 2, "request_delete_range": 3}),
    (rpc_pb2.TxnRequest, {"compare": 1, "success": 2, "failure": 3}),
    (rpc_pb2.TxnResponse, {"header": 1, "succeeded": 2, "responses": 3}),
    (rpc_pb2.WatchRequest, {"create_request": 1, "progress_request": 3}),
    (rpc_pb2.WatchCreateRequest, {"key": 1, "range_end": 2, "start_revision": 3, "prev_kv": 6}),
    (rpc_pb2.WatchResponse, {"header": 1, "watch_id": 2, "created": 3, "canceled": 4, "compact_revision": 5,
                             "events": 11}),
    (kv_pb2.KeyValue, {"key": 1, "create_revision": 2, "mod_revision": 3, "version": 4, "value": 5}),
    (kv_pb2.Event, {"type": 1, "kv": 2, "prev_kv": 3}),
]


@pytest.mark.parametrize(("message", "numbers"), ETCD_FIELDS, ids=[m.DESCRIPTOR.full_name for m, _ in ETCD_FIELDS])
def test_messages_keep_etcds_field_numbers(message: type, numbers: dict[str, int]) -> None:
    fields = message.DESCRIPTOR.fields_by_name
    assert {name: fields[name].number for name in numbers} == numbers
    assert message.DESCRIPTOR.file.package in ("etcdserverpb", "mvccpb")
