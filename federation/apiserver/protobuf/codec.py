"""Kubernetes' protobuf wire format: ``k8s\\x00`` + ``runtime.Unknown`` around the object's message.

The messages are built at import time from :mod:`.schema` into a private descriptor pool (the
``protobuf`` package does the wire encoding); this module maps them to and from the JSON form
the rest of the API server works with:

- Go's protobuf encoder writes every non-pointer field, empty or not, so on decode an empty
  string, list, map or message means "not set" and is dropped, as JSON's ``omitempty`` would.
  Numbers and booleans are kept: a pointer field set to 0 or false is meaningful.
  Pointer fields where an empty message is meaningful (``emptyDir: {}``) are listed in
  :data:`.schema_workloads.KEEP_EMPTY` and decoded as ``{}``.
- A field number this server does not model is skipped, as every protobuf decoder skips unknown
  fields: a newer client's field must not fail the request or end a watch.
- A Go embedded struct (json name ``*x`` in the schema) is one nested message on the wire and
  inline fields in JSON (:data:`INLINE`).
- An object that cannot be written as its message (a field the schema lacks) makes
  :func:`encode` return ``None``, so the caller answers in JSON, which every client accepts too.
"""

from __future__ import annotations

import base64
from datetime import UTC, datetime
from typing import Any

import orjson
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import DecodeError, Message

from federation.apiserver.protobuf.schema import KINDS, MESSAGES, UNLISTED, VALUE_TYPES, Field
from federation.apiserver.protobuf.schema_workloads import KEEP_EMPTY, NODE_MESSAGES, POD_MESSAGES

MAGIC = b"k8s\x00"
MEDIA_TYPE = "application/vnd.kubernetes.protobuf"
WATCH_MEDIA_TYPE = "application/vnd.kubernetes.protobuf;stream=watch"
_PACKAGE = "k8s"
_SCALARS = {
    "string": descriptor_pb2.FieldDescriptorProto.TYPE_STRING,
    "bytes": descriptor_pb2.FieldDescriptorProto.TYPE_BYTES,
    "bool": descriptor_pb2.FieldDescriptorProto.TYPE_BOOL,
    "int32": descriptor_pb2.FieldDescriptorProto.TYPE_INT32,
    "int64": descriptor_pb2.FieldDescriptorProto.TYPE_INT64,
}


class ProtobufError(ValueError):
    """A protobuf body this server cannot read; the message says why, for a 400 answer."""


class NotRepresentable(ValueError):
    """An object with a field its protobuf message does not have."""


def _list_messages() -> dict[str, list[Field]]:
    return {f"{message}List": [("metadata", 1, "meta.ListMeta"), ("items", 2, f"[{message}]")]
            for (_, kind), message in KINDS.items() if kind not in UNLISTED}


ALL_MESSAGES: dict[str, list[Field]] = {**MESSAGES, **POD_MESSAGES, **NODE_MESSAGES, **_list_messages(),
                                        **VALUE_TYPES}
#: message -> field name -> type (an embedded struct's name without its ``*``)
FIELD_TYPES: dict[str, dict[str, str]] = {name: {f[0].lstrip("*"): f[2] for f in fields}
                                          for name, fields in ALL_MESSAGES.items()}
#: message -> its Go embedded structs, whose fields are inline in the JSON form
INLINE: dict[str, dict[str, str]] = {name: {f[0][1:]: f[2] for f in fields if f[0].startswith("*")}
                                     for name, fields in ALL_MESSAGES.items()}


def _proto_name(message: str) -> str:
    return message.replace(".", "_")


def _add_field(parent: descriptor_pb2.DescriptorProto, name: str, number: int, type_: str) -> None:
    name = name.lstrip("*")
    field = parent.field.add(name=name, number=number, json_name=name)
    label = descriptor_pb2.FieldDescriptorProto
    if type_.startswith("{"):
        entry = parent.nested_type.add(name=f"{name[0].upper()}{name[1:]}Entry")
        entry.options.map_entry = True
        _add_field(entry, "key", 1, "string")
        _add_field(entry, "value", 2, type_[1:-1])
        field.label, field.type = label.LABEL_REPEATED, label.TYPE_MESSAGE
        field.type_name = f".{_PACKAGE}.{_proto_name(parent.name)}.{entry.name}"
        return
    if type_.startswith("["):
        field.label, type_ = label.LABEL_REPEATED, type_[1:-1]
    else:
        field.label = label.LABEL_OPTIONAL
    if type_ in _SCALARS:
        field.type = _SCALARS[type_]
    else:
        field.type, field.type_name = label.TYPE_MESSAGE, f".{_PACKAGE}.{_proto_name(type_)}"


def _build_classes() -> dict[str, type[Message]]:
    file = descriptor_pb2.FileDescriptorProto(name="caldera/k8s.proto", package=_PACKAGE, syntax="proto2")
    for name, fields in ALL_MESSAGES.items():
        message = file.message_type.add(name=_proto_name(name))
        for field_name, number, type_ in fields:
            _add_field(message, field_name, number, type_)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return {name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{_PACKAGE}.{_proto_name(name)}"))
            for name in ALL_MESSAGES}


CLASSES = _build_classes()

# --------------------------------------------------------------------------- message -> JSON


def _format_time(msg: Any, micro: bool) -> str | None:
    if not msg.seconds and not msg.nanos:
        return None
    stamp = datetime.fromtimestamp(msg.seconds + msg.nanos / 1e9, UTC)
    return stamp.strftime("%Y-%m-%dT%H:%M:%S.%fZ" if micro else "%Y-%m-%dT%H:%M:%SZ")


def _value_to_json(value: Any, type_: str) -> Any:
    if type_.startswith("["):
        return [_value_to_json(v, type_[1:-1]) for v in value]
    if type_.startswith("{"):
        return {k: _value_to_json(v, type_[1:-1]) for k, v in value.items()}
    if type_ == "bytes":
        return base64.b64encode(value).decode()
    if type_ in _SCALARS:
        return value
    if type_ in ("time", "microtime"):
        return _format_time(value, type_ == "microtime")
    if type_ == "quantity":
        return value.string
    if type_ == "intorstring":
        return value.strVal if value.type == 1 else value.intVal
    if type_ in ("rawextension", "fieldsv1"):
        raw = value.raw if type_ == "rawextension" else value.Raw
        return orjson.loads(raw) if raw else None
    if type_ == "extravalue":
        return list(value.items)
    return message_to_json(value, type_)


def _is_empty(value: Any) -> bool:
    return value is None or (isinstance(value, str | list | dict) and not value)


def message_to_json(msg: Message, message: str) -> dict[str, Any]:
    types, inline = FIELD_TYPES[message], INLINE[message]
    out: dict[str, Any] = {}
    for descriptor, value in msg.ListFields():
        converted = _value_to_json(value, types[descriptor.name])
        if descriptor.name in inline:
            out.update(converted)
        elif not _is_empty(converted) or (converted == {} and (message, descriptor.name) in KEEP_EMPTY):
            out[descriptor.name] = converted
    if message == "meta.ObjectMeta" and out.get("generation") == 0:
        del out["generation"]  # server-owned; Go writes its zero value on every request
    return out


# --------------------------------------------------------------------------- JSON -> message


def _parse_time(text: str) -> tuple[int, int]:
    stamp = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=UTC)
    return int(stamp.replace(microsecond=0).timestamp()), stamp.microsecond * 1000


def _fill_value(target: Any, value: Any, type_: str, path: str) -> None:
    """Write a JSON value into the wrapper or message ``target``."""
    if type_ in ("time", "microtime"):
        target.seconds, target.nanos = _parse_time(str(value))
    elif type_ == "quantity":
        target.string = str(value)
    elif type_ == "intorstring":
        if isinstance(value, int) and not isinstance(value, bool):
            target.type, target.intVal = 0, value
        else:
            target.type, target.strVal = 1, str(value)
    elif type_ == "rawextension":
        target.raw = orjson.dumps(value)
    elif type_ == "fieldsv1":
        target.Raw = orjson.dumps(value)
    elif type_ == "extravalue":
        target.items.extend(str(v) for v in value)
    elif isinstance(value, dict):
        json_to_message(value, type_, target, path)
    else:
        raise NotRepresentable(f"{path}: expected an object")
    target.SetInParent()


_PYTHON_TYPES: dict[str, type] = {"string": str, "bool": bool, "int32": int, "int64": int}


def _scalar(value: Any, type_: str, path: str) -> Any:
    if type_ == "bytes":
        return base64.b64decode(value)
    expected = _PYTHON_TYPES[type_]
    if type(value) is not expected and (not isinstance(value, expected) or isinstance(value, bool)):
        raise NotRepresentable(f"{path}: expected {type_}")
    return value


def _inline_owner(message: str, key: str) -> str | None:
    """The embedded struct of ``message`` whose JSON fields include ``key`` (searched depth-first)."""
    for name, type_ in INLINE[message].items():
        if key in FIELD_TYPES[type_] and key not in INLINE[type_] or _inline_owner(type_, key):
            return name
    return None


def json_to_message(obj: dict[str, Any], message: str, msg: Message, path: str = "") -> Message:
    types, inline = FIELD_TYPES[message], INLINE[message]
    for key, value in obj.items():
        if value is None:
            continue
        type_ = types.get(key)
        here = f"{path}.{key}" if path else key
        if type_ is None or key in inline:
            owner = _inline_owner(message, key)
            if owner is None:
                raise NotRepresentable(f"{here}: not a field of {message}")
            embedded = getattr(msg, owner)
            json_to_message({key: value}, inline[owner], embedded, path)
            embedded.SetInParent()
            continue
        try:
            _fill_field(msg, key, value, type_, here)
        except (TypeError, ValueError, AttributeError) as exc:
            if isinstance(exc, NotRepresentable):
                raise
            raise NotRepresentable(f"{here}: {exc}") from None
    return msg


def _fill_field(msg: Message, key: str, value: Any, type_: str, here: str) -> None:
    if type_ in _SCALARS:
        setattr(msg, key, _scalar(value, type_, here))
        return
    field = getattr(msg, key)
    kind, inner = type_[0], type_[1:-1]
    if kind == "{":
        for k, v in value.items():
            if inner in _SCALARS:
                field[k] = _scalar(v, inner, f"{here}.{k}")
            else:
                _fill_value(field[k], v, inner, f"{here}.{k}")
    elif kind == "[":
        if inner in _SCALARS:
            field.extend([_scalar(v, inner, f"{here}[{i}]") for i, v in enumerate(value)])
        else:
            for i, v in enumerate(value):
                _fill_value(field.add(), v, inner, f"{here}[{i}]")
    else:
        _fill_value(field, value, type_, here)


# --------------------------------------------------------------------------- envelope


def message_for(api_version: str, kind: str) -> str | None:
    if kind.endswith("List"):
        item = KINDS.get((api_version, kind[:-4]))
        return f"{item}List" if item and kind[:-4] not in UNLISTED else None
    return KINDS.get((api_version, kind))


def _strip_type(obj: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k not in ("apiVersion", "kind")}


def encode(obj: dict[str, Any]) -> bytes | None:
    """The wire form of a built-in object or list, or ``None`` when it has none."""
    api_version, kind = str(obj.get("apiVersion", "")), str(obj.get("kind", ""))
    message = message_for(api_version, kind)
    if message is None:
        return None
    body = _strip_type(obj)
    if "items" in body:
        body["items"] = [_strip_type(item) for item in body["items"] or []]
    try:
        payload = json_to_message(body, message, CLASSES[message]()).SerializeToString(deterministic=True)
    except NotRepresentable:
        return None
    return envelope(api_version, kind, payload)


def envelope(api_version: str, kind: str, payload: bytes) -> bytes:
    unknown = CLASSES["runtime.Unknown"]()
    unknown.typeMeta.apiVersion, unknown.typeMeta.kind = api_version, kind
    unknown.raw = payload
    return MAGIC + unknown.SerializeToString()


def decode(raw: bytes) -> dict[str, Any]:
    """A request body in the protobuf form -> the object as JSON would have given it."""
    if not raw.startswith(MAGIC):
        raise ProtobufError("the protobuf body does not start with the 'k8s\\x00' prefix")
    try:
        unknown = CLASSES["runtime.Unknown"].FromString(raw[len(MAGIC):])
    except DecodeError as exc:
        raise ProtobufError(f"the protobuf envelope is malformed: {exc}") from None
    api_version, kind = unknown.typeMeta.apiVersion, unknown.typeMeta.kind
    if unknown.contentEncoding:
        raise ProtobufError(f"content encoding {unknown.contentEncoding!r} is not supported")
    message = message_for(api_version, kind)
    if message is None:
        raise ProtobufError(f"{kind or '(no kind)'} in {api_version or '(no apiVersion)'} has no protobuf form "
                            "on this server; send it as application/json")
    try:
        msg = CLASSES[message].FromString(unknown.raw)
    except DecodeError as exc:
        raise ProtobufError(f"the {kind} message is malformed: {exc}") from None
    return {"apiVersion": api_version, "kind": kind, **message_to_json(msg, message)}


def watch_frame(type_: str, obj: dict[str, Any]) -> bytes | None:
    """One length-prefixed frame of a protobuf watch stream (``WatchEvent`` around the object)."""
    inner = encode(obj)
    if inner is None:
        return None
    event = CLASSES["meta.WatchEvent"]()
    event.type = type_
    event.object.raw = inner
    frame = envelope("v1", "WatchEvent", event.SerializeToString())
    return len(frame).to_bytes(4, "big") + frame
