"""Where the etcd store keeps an object, and how the object is written there.

Keys are ``PREFIX/RESOURCE/NAMESPACE/NAME`` (NAMESPACE empty for cluster-scoped objects); the
value is the object's JSON without ``metadata.resourceVersion``, which is the key's mod revision
(so a value never disagrees with the revision etcd gives it).
"""

from __future__ import annotations

import orjson

from federation.apiserver.storage import Obj, ObjKey


def encode(obj: Obj) -> bytes:
    meta = obj["metadata"]
    if "resourceVersion" not in meta:
        return orjson.dumps(obj)
    return orjson.dumps(dict(obj, metadata={k: v for k, v in meta.items() if k != "resourceVersion"}))


def decode(value: bytes, revision: int) -> Obj:
    obj: Obj = orjson.loads(value)
    obj.setdefault("metadata", {})["resourceVersion"] = str(revision)
    return obj


def deleted_at(previous: Obj, revision: int) -> Obj:
    """What a DELETED event carries: the last object, at the revision of its deletion."""
    return dict(previous, metadata=dict(previous["metadata"], resourceVersion=str(revision)))


class KeyLayout:
    """The keys of one ``--etcd-prefix``."""

    __slots__ = ("prefix",)

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix.rstrip("/").encode() + b"/"

    def resource_prefix(self, resource: str, namespace: str | None) -> bytes:
        base = self.prefix + resource.encode() + b"/"
        return base if namespace is None else base + namespace.encode() + b"/"

    def key(self, resource: str, obj: Obj) -> bytes:
        meta = obj["metadata"]
        return self.resource_prefix(resource, meta.get("namespace") or "") + meta["name"].encode()

    def parse(self, key: bytes) -> tuple[str, ObjKey] | None:
        """The resource and (namespace, name) of an object's key; None for other keys under the
        prefix (the last-write key, the compactor's bookkeeping)."""
        if not key.startswith(self.prefix):
            return None
        parts = key[len(self.prefix):].decode().rsplit("/", 2)
        if len(parts) != 3:
            return None
        return parts[0], (parts[1], parts[2])
