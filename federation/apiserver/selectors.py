"""``labelSelector`` and ``fieldSelector`` query parameters, parsed once per request.

Label selectors follow Kubernetes' grammar: ``a=b``, ``a==b``, ``a!=b``, ``a in (x,y)``,
``a notin (x)``, ``a`` (exists) and ``!a`` (does not exist), comma-separated (AND).
Field selectors accept ``=``, ``==`` and ``!=`` on any dotted path of the object
(``metadata.name``, ``spec.nodeName``, ``status.phase``, ``involvedObject.uid``); a missing
field compares as the empty string, so ``spec.nodeName=`` selects unbound pods.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from federation.apiserver.status import bad_request
from policies.admission.names import qualified_name_error
from policies.admission.object_meta import label_value_error

Predicate = Callable[[dict[str, Any]], bool]

_SET_RE = re.compile(r"^\s*(!?)\s*([A-Za-z0-9_./-]+)\s*(?:(notin|in)\s*\(([^)]*)\))?\s*$")
_FIELD_PATH_RE = re.compile(r"^[A-Za-z0-9_]+(\.[A-Za-z0-9_]+)*$")
_CMP_RE = re.compile(r"^\s*([A-Za-z0-9_./-]+)\s*(==|!=|=)\s*([A-Za-z0-9_./:-]*)\s*$")


def _split_terms(text: str) -> list[str]:
    """Split on commas that are not inside ``( ... )``."""
    terms: list[str] = []
    current: list[str] = []
    depth = 0
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            terms.append("".join(current))
            current = []
        else:
            current.append(ch)
    terms.append("".join(current))
    if len(terms) > 1 and any(not t.strip() for t in terms):
        # kube's parser: "a=b," is "found '', expected: identifier after ','"
        raise bad_request(f"unable to parse requirement: empty term in selector {text!r}")
    return [t for t in terms if t.strip()]


def _check_label_key(text: str, key: str) -> None:
    problem = qualified_name_error(key)
    if problem:
        raise bad_request(f"unable to parse requirement: invalid label selector {text!r}: key {problem}")


def _check_label_value(text: str, value: str) -> None:
    problem = label_value_error(value)
    if problem:
        raise bad_request(f"unable to parse requirement: invalid label selector {text!r}: "
                          f"values[0]: Invalid value: {value!r}: {problem}")


def parse_label_selector(text: str | None) -> Predicate | None:
    if not text or not text.strip():
        return None
    checks: list[Predicate] = []
    for term in _split_terms(text):
        cmp = _CMP_RE.match(term)
        if cmp:
            key, op, value = cmp.groups()
            _check_label_key(text, key)
            _check_label_value(text, value)
            checks.append(_label_cmp(key, op, value))
            continue
        st = _SET_RE.match(term)
        if not st:
            raise bad_request(f"unable to parse requirement: invalid label selector {text!r} at {term.strip()!r}")
        negate, key, op, values = st.groups()
        _check_label_key(text, key)
        if op:
            if negate:
                raise bad_request(f"unable to parse requirement: '!' cannot be combined with {op} in {term!r}")
            allowed = {v.strip() for v in values.split(",") if v.strip()}
            for value in allowed:
                _check_label_value(text, value)
            checks.append(_label_set(key, op == "in", allowed))
        else:
            checks.append(_label_exists(key, not negate))
    return lambda obj: all(check(obj) for check in checks)


def _labels(obj: dict[str, Any]) -> dict[str, str]:
    return (obj.get("metadata") or {}).get("labels") or {}


def _label_cmp(key: str, op: str, value: str) -> Predicate:
    if op == "!=":
        return lambda obj: _labels(obj).get(key) != value
    return lambda obj: _labels(obj).get(key) == value


def _label_set(key: str, inside: bool, values: set[str]) -> Predicate:
    if inside:
        return lambda obj: _labels(obj).get(key) in values
    return lambda obj: _labels(obj).get(key) not in values


def _label_exists(key: str, present: bool) -> Predicate:
    return lambda obj: (key in _labels(obj)) == present


def field_value(obj: dict[str, Any], path: str) -> str:
    """The string value at a dotted path, or ``""`` when absent."""
    value: Any = obj
    for part in path.split("."):
        if not isinstance(value, dict):
            return ""
        value = value.get(part)
        if value is None:
            return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return value if isinstance(value, str) else str(value)


_FIELD_OPERATORS = ("!=", "==", "=")


def _field_terms(text: str) -> list[str]:
    """Split on commas that are not escaped (``\\,``), as kube's field selector parser does."""
    terms: list[str] = []
    current: list[str] = []
    escaped = False
    for ch in text:
        if escaped:
            current.append(ch)
            escaped = False
        elif ch == "\\":
            current.append(ch)
            escaped = True
        elif ch == ",":
            terms.append("".join(current))
            current = []
        else:
            current.append(ch)
    terms.append("".join(current))
    return terms


def _unescape_field_value(text: str, term: str, value: str) -> str:
    """kube's UnescapeValue: ``\\\\``, ``\\,`` and ``\\=`` stand for themselves; a bare ``,`` or ``=``
    (or any other escape) is refused."""
    out: list[str] = []
    escaped = False
    for ch in value:
        if escaped:
            if ch not in "\\,=":
                raise bad_request(f"invalid field selector {text!r}: invalid escape sequence \\{ch} in {term!r}")
            out.append(ch)
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch in ",=":
            raise bad_request(f"invalid selector: {term!r}; can't understand {value!r} (invalid field selector: "
                              f"unescaped character in value: {ch})")
        else:
            out.append(ch)
    if escaped:
        raise bad_request(f"invalid field selector {text!r}: invalid escape sequence \\ at the end of {term!r}")
    return "".join(out)


def parse_field_selector(text: str | None, supported: frozenset[str] | None = None) -> Predicate | None:
    """``supported``: the kind's field labels (:mod:`field_labels`); None accepts any dotted path.
    Values may escape ``,``, ``=`` and ``\\`` with a backslash (client-go's ``fields.EscapeValue``), so an
    object named ``a,b`` (RBAC names may hold both) is selected by ``metadata.name=a\\,b``."""
    if not text or not text.strip():
        return None
    checks: list[Predicate] = []
    for term in _field_terms(text):
        if not term.strip():
            continue  # kube skips empty field-selector terms (kr8s sends "metadata.name=x,")
        at = next(((i, op) for i in range(len(term)) for op in _FIELD_OPERATORS if term.startswith(op, i)), None)
        if at is None:
            raise bad_request(f"invalid field selector {text!r}: {term.strip()!r} is not field=value or field!=value")
        path, op, value = term[:at[0]].strip(), at[1], term[at[0] + len(at[1]):]
        if not _FIELD_PATH_RE.match(path):
            raise bad_request(f"invalid field selector {text!r}: field label not supported: {path!r} "
                              f"(a dotted path such as metadata.name)")
        value = _unescape_field_value(text, term, value)
        if supported is not None and path not in supported:
            raise bad_request(f"field label not supported: {path}")
        if op == "!=":
            checks.append(_field_differs(path, value))
        else:
            checks.append(_field_equals(path, value))
    return lambda obj: all(check(obj) for check in checks)


def combine(*predicates: Predicate | None) -> Predicate | None:
    active = [p for p in predicates if p is not None]
    if not active:
        return None
    if len(active) == 1:
        return active[0]
    return lambda obj: all(p(obj) for p in active)


def _field_equals(path: str, value: str) -> Predicate:
    return lambda obj: bool(field_value(obj, path) == value)


def _field_differs(path: str, value: str) -> Predicate:
    return lambda obj: bool(field_value(obj, path) != value)
