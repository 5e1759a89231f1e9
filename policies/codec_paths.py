"""Kubernetes field paths for decode errors, and the line each path starts on.

pydantic reports an error location as a tuple of wire names, list indices and, for unions
and validators, internal tags. :func:`pydantic_field_errors` keeps only the parts that are
really in the document (so tags never leak into paths), formats them the way Kubernetes
does (``spec.tasks[0].template.spec.containers[1].resources.limits.cpu``; a map key that is
not a plain word goes in brackets: ``limits[nvidia.com/gpu]``), and rewrites pydantic's
messages into rules a user can act on (an unknown field suggests the nearest known one).
"""

from __future__ import annotations

import difflib
import re
import types
import typing
from typing import Any, Optional, Sequence, Union

import yaml
from pydantic import BaseModel, ValidationError

from policies.errors import FieldError

_PLAIN_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")

PathPart = Union[str, int]


def format_path(parts: Sequence[PathPart]) -> str:
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _PLAIN_KEY.match(part):
            out += f".{part}" if out else part
        else:
            out += f"[{part}]"
    return out


def line_map(node: Optional[yaml.Node], offset: int) -> dict[str, int]:
    """Field path -> 1-based line, for every mapping key and list item under ``node``."""
    lines: dict[str, int] = {}

    def walk(current: yaml.Node, parts: list[PathPart]) -> None:
        if isinstance(current, yaml.MappingNode):
            for key_node, value_node in current.value:
                key = key_node.value if isinstance(key_node, yaml.ScalarNode) else str(key_node)
                child = [*parts, key]
                lines.setdefault(format_path(child), offset + key_node.start_mark.line + 1)
                walk(value_node, child)
        elif isinstance(current, yaml.SequenceNode):
            for number, item in enumerate(current.value):
                child = [*parts, number]
                lines.setdefault(format_path(child), offset + item.start_mark.line + 1)
                walk(item, child)

    if node is not None:
        walk(node, [])
    return lines


def _real_parts(loc: Sequence[PathPart], data: Any) -> list[PathPart]:
    """The parts of ``loc`` that name something in ``data`` (the last one may be missing)."""
    parts: list[PathPart] = []
    current = data
    for position, part in enumerate(loc):
        last = position == len(loc) - 1
        in_dict = isinstance(current, dict) and part in current
        in_list = isinstance(current, list) and isinstance(part, int) and 0 <= part < len(current)
        if in_dict or in_list:
            parts.append(part)
            current = current[part]
        elif last and isinstance(part, str) and not _is_tag(part):
            parts.append(part)  # a missing field, named by its wire name
        # otherwise a union/validator tag: not part of the document
    return parts


def _is_tag(part: str) -> bool:
    return "[" in part or part in {"str", "int", "float", "bool", "list", "dict", "none"}


def _unwrap(annotation: Any) -> list[Any]:
    """The candidate types inside Optional/Union/Annotated."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _unwrap(typing.get_args(annotation)[0])
    if origin is Union or origin is types.UnionType:
        out: list[Any] = []
        for arg in typing.get_args(annotation):
            if arg is not type(None):
                out.extend(_unwrap(arg))
        return out
    return [annotation]


def _step(annotation: Any, part: PathPart) -> Any:
    for candidate in _unwrap(annotation):
        origin = typing.get_origin(candidate)
        if isinstance(part, int) and origin in (list, tuple, set):
            return typing.get_args(candidate)[0]
        if isinstance(part, str):
            if origin is dict:
                return typing.get_args(candidate)[1]
            if isinstance(candidate, type) and issubclass(candidate, BaseModel):
                for name, info in candidate.model_fields.items():
                    if part in (info.alias, name):
                        return info.annotation
    return None


def known_fields(model: type[BaseModel], parts: Sequence[PathPart]) -> list[str]:
    """Wire names of the fields of the model found at ``parts`` (empty if not a model)."""
    annotation: Any = model
    for part in parts:
        annotation = _step(annotation, part)
        if annotation is None:
            return []
    for candidate in _unwrap(annotation):
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            return [info.alias or name for name, info in candidate.model_fields.items()]
    return []


def _message(err: Any, parts: list[PathPart], model: type[BaseModel]) -> str:
    kind = err["type"]
    if kind == "extra_forbidden":
        fields = known_fields(model, parts[:-1])
        name = str(parts[-1]) if parts else ""
        close = difflib.get_close_matches(name, fields, n=1, cutoff=0.6)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        listed = f" Known fields here: {', '.join(fields)}." if fields and not close else ""
        return f"unknown field {name!r}{hint}{listed}"
    if kind == "missing":
        return "required field is missing"
    msg = str(err["msg"])
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, "):]
    elif msg.startswith("Assertion failed, "):
        msg = msg[len("Assertion failed, "):]
    value = err.get("input")
    if kind != "value_error" and isinstance(value, (str, int, float, bool)) and not isinstance(value, dict):
        msg = f"{msg}, got {value!r}"
    return msg


def pydantic_field_errors(exc: ValidationError, data: Any, model: type[BaseModel]) -> list[FieldError]:
    """Every error of ``exc`` as a FieldError with a Kubernetes path (duplicates merged)."""
    out: list[FieldError] = []
    seen: set[tuple[str, str]] = set()
    for err in exc.errors():
        parts = _real_parts(list(err["loc"]), data)
        path = format_path(parts)
        message = _message(err, parts, model)
        if (path, message) not in seen:
            seen.add((path, message))
            out.append(FieldError(path, message))
    return out
