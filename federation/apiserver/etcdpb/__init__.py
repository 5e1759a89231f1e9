"""etcd's v3 API messages, generated in the repository from etcd's .proto files (the subset Caldera uses).

``kv.proto`` (package ``mvccpb``) and ``rpc.proto`` (package ``etcdserverpb``) keep etcd's package,
message and field names and numbers, so the wire format is etcd's; ``kv_pb2.py``/``rpc_pb2.py`` (and
their ``.pyi``) are generated from them by the protobuf compiler, from the repository root:

    pip install grpcio-tools
    python -m grpc_tools.protoc -I. --python_out=. --pyi_out=. \\
        federation/apiserver/etcdpb/kv.proto federation/apiserver/etcdpb/rpc.proto

Only messages are generated (no gRPC stubs): :mod:`federation.apiserver.etcd_client` calls the
methods by their gRPC paths. The generated code checks the protobuf runtime's version (7.35.1 or
newer, pyproject.toml); ``tests/apiserver/test_etcd_messages.py`` checks the modules match the
.proto files.
"""
