"""``/openapi/v2`` as protobuf: the gnostic ``openapi.v2.Document`` message kubectl asks for.

kubectl (client-go's ``OpenAPISchema``) fetches the v2 document only as
``application/com.github.proto-openapi.spec.v2@v1.0+protobuf``; ``kubectl explain
--output=plaintext-openapiv2`` and tools still on v2 read it that way. This module writes the
subset of gnostic's ``OpenAPIv2.proto`` a Swagger 2.0 schema document needs (field numbers from
that file): the document's ``swagger``, ``info`` and ``definitions``, and per schema ``$ref``,
``format``, ``description``, bounds, ``required``, ``enum``, ``type``, ``items``, ``allOf``,
``properties``, ``additionalProperties`` and the ``x-`` vendor extensions (as gnostic does, each
extension's value is YAML text in ``Any.yaml``; kube-openapi reads
``x-kubernetes-group-version-kind`` from there to find a kind's definition). Paths are left out:
kubectl reads definitions only. A hand-written encoder: the wire format needs only varints,
64-bit doubles and length-delimited fields.
"""

from __future__ import annotations

import struct
from typing import Any

import yaml

#: what the answer says it is: the dotted spelling, since Go's mime parser (client-go reads the answer's
#: Content-Type with it) refuses the ``@`` of the spelling kubectl asks with
MEDIA_TYPE = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
MEDIA_TYPES = ("application/com.github.proto-openapi.spec.v2@v1.0+protobuf", MEDIA_TYPE)
Obj = dict[str, Any]

_VARINT, _FIXED64, _BYTES = 0, 1, 2
#: Schema's scalar fields: JSON key -> (field number, kind)
_SCALARS: dict[str, tuple[int, str]] = {
    "$ref": (1, "string"), "format": (2, "string"), "title": (3, "string"), "description": (4, "string"),
    "multipleOf": (6, "double"), "maximum": (7, "double"), "exclusiveMaximum": (8, "bool"),
    "minimum": (9, "double"), "exclusiveMinimum": (10, "bool"), "maxLength": (11, "int"),
    "minLength": (12, "int"), "pattern": (13, "string"), "maxItems": (14, "int"), "minItems": (15, "int"),
    "uniqueItems": (16, "bool"), "maxProperties": (17, "int"), "minProperties": (18, "int"),
    "readOnly": (27, "bool"),
}


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # negative int64s as two's complement, ten bytes
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _key(number: int, wire: int) -> bytes:
    return _varint(number << 3 | wire)


def _bytes(number: int, payload: bytes) -> bytes:
    return _key(number, _BYTES) + _varint(len(payload)) + payload


def _string(number: int, text: str) -> bytes:
    return _bytes(number, text.encode())


def _scalar(number: int, kind: str, value: Any) -> bytes:
    if kind == "string":
        return _string(number, str(value))
    if kind == "double":
        return _key(number, _FIXED64) + struct.pack("<d", float(value))
    return _key(number, _VARINT) + _varint(int(value))  # int64 and bool


def _yaml_any(number: int, value: Any) -> bytes:
    """An ``Any`` holding ``value`` as YAML text (its field 2)."""
    return _bytes(number, _string(2, yaml.safe_dump(value, default_flow_style=False, sort_keys=False)))


def _named(number: int, name: str, payload: bytes) -> bytes:
    return _bytes(number, _string(1, name) + _bytes(2, payload))


def schema(node: Obj) -> bytes:
    """One ``openapi.v2.Schema`` message."""
    out = bytearray()
    for key, value in node.items():
        if key in _SCALARS:
            number, kind = _SCALARS[key]
            out += _scalar(number, kind, value)
        elif key == "required":
            out += b"".join(_string(19, name) for name in value)
        elif key == "enum":
            out += b"".join(_yaml_any(20, item) for item in value)
        elif key == "additionalProperties":
            inner = _bytes(1, schema(value)) if isinstance(value, dict) else _scalar(2, "bool", bool(value))
            out += _bytes(21, inner)
        elif key == "type":
            out += _bytes(22, b"".join(_string(1, t) for t in ([value] if isinstance(value, str) else value)))
        elif key == "items":
            out += _bytes(23, b"".join(_bytes(1, schema(i)) for i in ([value] if isinstance(value, dict) else value)))
        elif key == "allOf":
            out += b"".join(_bytes(24, schema(part)) for part in value)
        elif key == "properties":
            out += _bytes(25, b"".join(_named(1, name, schema(prop)) for name, prop in value.items()))
        elif key.startswith("x-"):
            out += _bytes(31, _string(1, key) + _yaml_any(2, value))
    return bytes(out)


def document(doc: Obj) -> bytes:
    """An ``openapi.v2.Document`` from a Swagger 2.0 document: swagger, info and definitions."""
    info = doc.get("info") or {}
    out = _string(1, str(doc.get("swagger", "2.0")))
    out += _bytes(2, _string(1, str(info.get("title", ""))) + _string(2, str(info.get("version", ""))))
    out += _bytes(8, b"")  # paths: kubectl reads definitions only
    out += _bytes(9, b"".join(_named(1, name, schema(s)) for name, s in (doc.get("definitions") or {}).items()))
    return out
