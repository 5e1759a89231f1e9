"""Typed plugin and action arguments, checked when a session is built.

A plugin or action declares its arguments as :class:`Argument` specs (key, type,
default). :func:`parse_arguments` returns the typed values and raises
:class:`~policies.errors.InvalidConfiguration` naming the owner and the argument when a
value has the wrong type. Keys nobody declared are not errors (Volcano ignores them) but
come back as warnings, which the session logs, so a typo is visible.

Numbers may be written as YAML numbers or as numeric strings (``binpack.cpu: "1"``, as
in Volcano's documentation); booleans as YAML booleans or ``"true"``/``"false"``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from policies.errors import InvalidConfiguration

_TYPE_WORDS = {int: "an integer", float: "a number", bool: "true or false", str: "a string"}


@dataclass(frozen=True)
class Argument:
    key: str
    type: type
    default: Any
    help: str = ""


def _coerce(owner: str, key: str, kind: type, value: Any) -> Any:
    def bad() -> InvalidConfiguration:
        return InvalidConfiguration(
            f"{owner}: argument {key}: expected {_TYPE_WORDS.get(kind, kind.__name__)}, got {value!r}"
        )

    if kind is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true"
        raise bad()
    if kind is int:
        if isinstance(value, bool):
            raise bad()
        if isinstance(value, int):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str):
            try:
                return int(value.strip())
            except ValueError:
                raise bad() from None
        raise bad()
    if kind is float:
        if isinstance(value, bool):
            raise bad()
        if isinstance(value, (int, float)):
            return float(value)
        if isinstance(value, str):
            try:
                return float(value.strip())
            except ValueError:
                raise bad() from None
        raise bad()
    if kind is str:
        if isinstance(value, (str, int, float)) and not isinstance(value, bool):
            return str(value)
        raise bad()
    raise bad()


def parse_arguments(
    owner: str,
    specs: Sequence[Argument],
    raw: Mapping[str, Any] | None,
    prefixes: Mapping[str, type] | None = None,
) -> tuple[dict[str, Any], list[str]]:
    """Typed values for ``specs`` (defaults filled in) and warnings for unknown keys.

    ``prefixes`` declares families of keys such as ``binpack.resources.<name>``; their
    values are checked against the given type and returned under their full key.
    """
    values = {spec.key: spec.default for spec in specs}
    by_key = {spec.key: spec for spec in specs}
    warnings: list[str] = []
    for key, value in (raw or {}).items():
        spec = by_key.get(key)
        if spec is not None:
            values[key] = _coerce(owner, key, spec.type, value)
            continue
        prefix = next((p for p in (prefixes or {}) if key.startswith(p) and len(key) > len(p)), None)
        if prefix is not None:
            values[key] = _coerce(owner, key, (prefixes or {})[prefix], value)
            continue
        known = ", ".join(sorted(by_key) + [f"{p}<name>" for p in prefixes or {}]) or "none"
        warnings.append(f"{owner}: argument {key} is not known and is ignored (known: {known})")
    return values, warnings
