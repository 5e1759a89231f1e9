"""``?fieldValidation=``: what a write does with fields the kind's schema does not declare.

As kube-apiserver (1.27+) decides it for every create, update and patch:

* ``Strict``: 400 BadRequest ``<Kind> in version "<v>" cannot be handled as a <Kind>: strict decoding
  error: unknown field "spec.x", unknown field "spec.y"``; nothing is stored;
* ``Warn`` (the default when the parameter is absent): the fields are dropped and each is named in a
  ``Warning: 299 - "unknown field \\"spec.x\\""`` response header (kubectl prints ``Warning: ...``);
* ``Ignore``: the fields are dropped silently (kube's CRD pruning);
* any other value: 422 Invalid ``CreateOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported
  value`` (``UpdateOptions``, ``PatchOptions``).

kubectl's ``--validate=strict|true`` sends ``Strict``, ``--validate=warn`` ``Warn`` and
``--validate=false`` ``Ignore``. The mode and the warnings travel in context variables, set per
request by the REST handlers, so the registry and admission keep their signatures.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterable
from typing import Any

from pydantic import ValidationError

from federation.apiserver import status as st
from policies.codec_paths import PathPart, format_path
from policies.kinds import KindInfo

STRICT, WARN, IGNORE = "Strict", "Warn", "Ignore"
MODES = ("", IGNORE, STRICT, WARN)  # kube's list, sorted as its message prints it
_OPTIONS_KIND = {"create": "CreateOptions", "update": "UpdateOptions", "patch": "PatchOptions"}

#: the request's mode; empty outside a request (the server's own writes): unknown fields are then
#: schema errors like any other (422), as they were before the parameter was honoured
MODE: contextvars.ContextVar[str] = contextvars.ContextVar("caldera_field_validation", default="")
#: warnings for the response's ``Warning`` headers, or None outside a request
WARNINGS: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar("caldera_warnings", default=None)
#: unknown fields are dropped one pass at a time; a union may reveal more once one is gone
MAX_PASSES = 4


def parse(value: str | None, verb: str) -> str:
    """The mode for a request's ``fieldValidation`` (absent or empty: ``Warn``)."""
    if value is None or value == "":
        return WARN
    if value not in MODES:
        quoted = ", ".join(f'"{m}"' for m in MODES)
        raise st.invalid_options(_OPTIONS_KIND.get(verb, "CreateOptions"), "fieldValidation",
                                 f'Unsupported value: "{value}": supported values: {quoted}')
    return value


def begin(mode: str) -> None:
    MODE.set(mode)
    WARNINGS.set([])


def warn(text: str) -> None:
    collected = WARNINGS.get()
    if collected is not None and text not in collected:
        collected.append(text)


def header_values(texts: Iterable[str]) -> list[str]:
    """RFC 7234 warn-values as kube writes them: ``299 - "text"`` with quotes and backslashes escaped."""
    return ['299 - "' + t.replace("\\", "\\\\").replace('"', '\\"') + '"' for t in texts]


def _real_parts(loc: Any, data: Any) -> list[PathPart] | None:
    """The path of an unknown field inside ``data`` (None when the location is not in the document)."""
    parts: list[PathPart] = []
    current = data
    for part in loc:
        in_dict = isinstance(current, dict) and part in current
        in_list = isinstance(current, list) and isinstance(part, int) and 0 <= part < len(current)
        if in_dict or in_list:  # else a union/validator tag: not part of the document
            parts.append(part)
            current = current[part]
    return parts or None


def unknown_fields(exc: ValidationError, body: Any) -> list[list[PathPart]]:
    found: list[list[PathPart]] = []
    for err in exc.errors():
        if err["type"] != "extra_forbidden":
            continue
        parts = _real_parts(err["loc"], body)
        if parts is not None and parts not in found:
            found.append(parts)
    return found


def _drop(body: Any, parts: list[PathPart]) -> None:
    node = body
    for part in parts[:-1]:
        node = node[part]
    if isinstance(node, dict):
        node.pop(parts[-1], None)


def strict_error(info: KindInfo, paths: list[str]) -> st.ApiError:
    listed = ", ".join(f'unknown field "{p}"' for p in paths)
    return st.bad_request(f'{info.kind} in version "{info.version}" cannot be handled as a {info.kind}: '
                          f"strict decoding error: {listed}")


def validate(info: KindInfo, model: Any, body: Any) -> Any:
    """``model.model_validate(body)`` under the request's mode; unknown fields are removed from
    ``body`` in place (Warn, Ignore) or refused (Strict). Other errors propagate unchanged."""
    mode = MODE.get()
    if mode not in (STRICT, WARN, IGNORE):
        return model.model_validate(body)
    for _ in range(MAX_PASSES):
        try:
            return model.model_validate(body)
        except ValidationError as exc:
            unknown = unknown_fields(exc, body)
            if not unknown:
                raise
            if mode == STRICT:
                raise strict_error(info, [format_path(p) for p in unknown]) from None
            for parts in sorted(unknown, key=len, reverse=True):
                _drop(body, parts)
                if mode == WARN:
                    warn(f'unknown field "{format_path(parts)}"')
    return model.model_validate(body)
