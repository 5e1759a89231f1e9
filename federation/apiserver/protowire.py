"""Just enough of kube's protobuf to read the request kinds kubectl's typed client always sends
as ``application/vnd.kubernetes.protobuf``: the auth reviews (``kubectl auth can-i``/``whoami``)
and TokenRequest (``kubectl create token``). Answers stay JSON (kubectl accepts both).

The wire format is the ``k8s\\x00`` magic, then a ``runtime.Unknown`` (typeMeta = 1, raw = 2)
whose ``raw`` is the object's message. Field numbers are those of the Kubernetes API's
``generated.proto``. General protobuf for every built-in kind (issue 19 item 1) plugs into the
same :data:`federation.apiserver.routes.BODY_DECODERS` entry and may replace this module.
"""

from __future__ import annotations

from typing import Any

from federation.apiserver import status as st

PROTOBUF = "application/vnd.kubernetes.protobuf"
MAGIC = b"k8s\x00"
JSON_AND_YAML = ["application/json", "application/yaml"]

#: message schema: field number -> (JSON name, type, nested schema); type "s" string, "i" int,
#: "b" bool, "m" message, "S" repeated string.
Schema = dict[int, tuple[str, str, Any]]
OBJECT_META: Schema = {1: ("name", "s", None), 2: ("generateName", "s", None), 3: ("namespace", "s", None)}
RESOURCE_ATTRIBUTES: Schema = {1: ("namespace", "s", None), 2: ("verb", "s", None), 3: ("group", "s", None),
                               4: ("version", "s", None), 5: ("resource", "s", None),
                               6: ("subresource", "s", None), 7: ("name", "s", None)}
NON_RESOURCE_ATTRIBUTES: Schema = {1: ("path", "s", None), 2: ("verb", "s", None)}
ACCESS_SPEC: Schema = {1: ("resourceAttributes", "m", RESOURCE_ATTRIBUTES),
                       2: ("nonResourceAttributes", "m", NON_RESOURCE_ATTRIBUTES),
                       3: ("user", "s", None), 4: ("groups", "S", None), 6: ("uid", "s", None)}
BOUND_OBJECT: Schema = {1: ("kind", "s", None), 2: ("apiVersion", "s", None), 3: ("name", "s", None),
                        4: ("uid", "s", None)}
TOKEN_REQUEST_SPEC: Schema = {1: ("audiences", "S", None), 3: ("boundObjectRef", "m", BOUND_OBJECT),
                              4: ("expirationSeconds", "i", None)}
MESSAGES: dict[tuple[str, str], Schema] = {
    ("authorization.k8s.io/v1", "SelfSubjectAccessReview"): {1: ("metadata", "m", OBJECT_META),
                                                             2: ("spec", "m", ACCESS_SPEC)},
    ("authorization.k8s.io/v1", "SubjectAccessReview"): {1: ("metadata", "m", OBJECT_META),
                                                         2: ("spec", "m", ACCESS_SPEC)},
    ("authorization.k8s.io/v1", "LocalSubjectAccessReview"): {1: ("metadata", "m", OBJECT_META),
                                                              2: ("spec", "m", ACCESS_SPEC)},
    ("authorization.k8s.io/v1", "SelfSubjectRulesReview"): {1: ("metadata", "m", OBJECT_META),
                                                            2: ("spec", "m", {1: ("namespace", "s", None)})},
    ("authentication.k8s.io/v1", "SelfSubjectReview"): {1: ("metadata", "m", OBJECT_META)},
    ("authentication.k8s.io/v1", "TokenRequest"): {1: ("metadata", "m", OBJECT_META),
                                                   2: ("spec", "m", TOKEN_REQUEST_SPEC)},
}
_UNKNOWN: Schema = {1: ("typeMeta", "m", {1: ("apiVersion", "s", None), 2: ("kind", "s", None)}),
                    2: ("raw", "raw", None)}


class WireError(ValueError):
    pass


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise WireError("truncated varint")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7


def _fields(data: bytes) -> list[tuple[int, int | bytes]]:
    out: list[tuple[int, int | bytes]] = []
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire_type = key >> 3, key & 7
        if wire_type == 0:
            value, pos = _varint(data, pos)
            out.append((number, value))
        elif wire_type == 2:
            length, pos = _varint(data, pos)
            if pos + length > len(data):
                raise WireError(f"field {number}: length {length} runs past the end")
            out.append((number, data[pos:pos + length]))
            pos += length
        elif wire_type in (1, 5):
            pos += 8 if wire_type == 1 else 4
        else:
            raise WireError(f"field {number}: unsupported wire type {wire_type}")
    if pos != len(data):
        raise WireError("truncated message")
    return out


def decode_message(data: bytes, schema: Schema) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for number, value in _fields(data):
        if number not in schema:
            continue  # a field this reader does not need (status, labels...)
        name, kind, nested = schema[number]
        if kind == "i" and isinstance(value, int):
            obj[name] = value
        elif kind == "b" and isinstance(value, int):
            obj[name] = bool(value)
        elif isinstance(value, bytes):
            if kind == "m":
                obj[name] = decode_message(value, nested)
            elif kind == "raw":
                obj[name] = value
            elif kind in ("s", "S"):
                text = value.decode("utf-8")
                if kind == "S":
                    obj.setdefault(name, []).append(text)
                else:
                    obj[name] = text
        else:
            raise WireError(f"field {number} ({name}): wrong wire type")
    return obj


def decode_body(raw: bytes) -> dict[str, Any]:
    """A kube protobuf body as the JSON object it stands for; 415/400 Status otherwise."""
    if not raw.startswith(MAGIC):  # not a kube protobuf object this server reads
        raise st.unsupported_media(PROTOBUF, JSON_AND_YAML)
    try:
        unknown = decode_message(raw[len(MAGIC):], _UNKNOWN)
        type_meta = unknown.get("typeMeta") or {}
        api_version, kind = type_meta.get("apiVersion", ""), type_meta.get("kind", "")
        schema = MESSAGES.get((api_version, kind))
        if schema is None:
            raise st.unsupported_media(PROTOBUF, JSON_AND_YAML)
        obj = decode_message(unknown.get("raw", b""), schema)
    except (WireError, UnicodeDecodeError) as exc:
        raise st.bad_request(f"the request body is not valid protobuf: {exc}") from None
    return {"apiVersion": api_version, "kind": kind, **obj}


def encode_for_test(api_version: str, kind: str, message: bytes) -> bytes:
    """The envelope around an already encoded message (tests build bodies with it)."""
    type_meta = _string(1, api_version) + _string(2, kind)
    return MAGIC + _bytes(1, type_meta) + _bytes(2, message)


def _key(number: int, wire_type: int) -> bytes:
    return _encode_varint(number << 3 | wire_type)


def _encode_varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _bytes(number: int, value: bytes) -> bytes:
    return _key(number, 2) + _encode_varint(len(value)) + value


def _string(number: int, value: str) -> bytes:
    return _bytes(number, value.encode())
