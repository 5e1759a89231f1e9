"""metav1.LabelSelector: validation and matching, the one copy both planes use.

Kubernetes' rules (``metav1.LabelSelectorAsSelector`` and ``labels.Requirement.Matches``):

* a **nil** selector selects nothing, the **empty** selector ``{}`` selects everything. Callers
  whose API gives nil another meaning (Karmada: an unset ``labelSelector`` is no constraint)
  say so with :func:`selects`' ``nil`` argument;
* ``matchLabels`` and ``matchExpressions`` are ANDed;
* ``In`` needs the key present with one of the values; ``NotIn`` matches when the key is
  absent or its value is none of them; ``Exists``/``DoesNotExist`` test presence only;
* ``In``/``NotIn`` need at least one value, ``Exists``/``DoesNotExist`` none;
* any other operator is an **error**: admission refuses it (:func:`validate`), and a selector
  that fails to parse selects nothing (kube's callers treat the conversion error as no match),
  never everything.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from policies.errors import FieldError, PermanentError

OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")
SET_OPERATORS = ("In", "NotIn")


class InvalidSelector(PermanentError, ValueError):
    """A label selector that breaks metav1's rules; ``errors`` name each field path."""

    def __init__(self, errors: list[FieldError]) -> None:
        self.errors = errors
        super().__init__("; ".join(str(e) for e in errors))


@dataclass(frozen=True)
class Requirement:
    """One ``matchExpressions`` entry (``values`` kept in order for messages)."""

    key: str
    operator: str
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        value = labels.get(self.key)
        if self.operator == "In":
            return value is not None and value in self.values
        if self.operator == "NotIn":
            return value is None or value not in self.values
        if self.operator == "Exists":
            return value is not None
        if self.operator == "DoesNotExist":
            return value is None
        return False  # unknown operators never get here from parse(); built by hand they match nothing


@dataclass(frozen=True)
class LabelSelector:
    """A parsed, non-nil selector; the default (no terms) is the empty selector: everything."""

    match_labels: tuple[tuple[str, str], ...] = ()
    match_expressions: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        return (all(labels.get(k) == v for k, v in self.match_labels)
                and all(r.matches(labels) for r in self.match_expressions))

    def keys(self) -> set[str]:
        return {k for k, _ in self.match_labels} | {r.key for r in self.match_expressions}

    @property
    def empty(self) -> bool:
        return not self.match_labels and not self.match_expressions


EVERYTHING = LabelSelector()
#: kube's ``labels.Nothing()``: what an invalid selector selects, for callers that need a value
NOTHING = LabelSelector(match_expressions=(Requirement("", "(nothing)"),))


def validate_requirement(operator: Any, key: Any, values: Any, path: str) -> list[FieldError]:
    """kube's ValidateLabelSelectorRequirement for one expression at ``path``."""
    errors: list[FieldError] = []
    if not key:
        errors.append(FieldError(f"{path}.key", "Required value: a label selector requirement needs a key"))
    if operator in SET_OPERATORS:
        if not values:
            errors.append(FieldError(f"{path}.values",
                                     f"Required value: must list at least one value when `operator` is {operator!r}"))
    elif operator in ("Exists", "DoesNotExist"):
        if values:
            errors.append(FieldError(f"{path}.values",
                                     f"Forbidden: must be empty when `operator` is {operator!r}"))
    else:
        errors.append(FieldError(f"{path}.operator", f"Unsupported value: {operator!r}: not a valid selector "
                                                     f"operator; must be one of {', '.join(map(repr, OPERATORS))}"))
    return errors


def validate(raw: Any, path: str) -> list[FieldError]:
    """Every rule a wire-form selector at ``path`` breaks (``[]``: valid; None is valid: nil)."""
    if raw is None:
        return []
    if not isinstance(raw, Mapping):
        return [FieldError(path, "Invalid value: a label selector must be an object")]
    errors: list[FieldError] = []
    labels = raw.get("matchLabels")
    if labels is not None and not isinstance(labels, Mapping):
        errors.append(FieldError(f"{path}.matchLabels", "Invalid value: must be a map of strings"))
    expressions = raw.get("matchExpressions")
    if expressions is not None and not isinstance(expressions, list):
        return errors + [FieldError(f"{path}.matchExpressions", "Invalid value: must be a list")]
    for i, expr in enumerate(expressions or ()):
        at = f"{path}.matchExpressions[{i}]"
        if not isinstance(expr, Mapping):
            errors.append(FieldError(at, "Invalid value: must be an object"))
            continue
        errors += validate_requirement(expr.get("operator"), expr.get("key"), expr.get("values"), at)
    return errors


def parse(raw: Any, path: str = "labelSelector") -> LabelSelector | None:
    """The selector in wire form ``raw`` (None stays None: nil); InvalidSelector when it breaks a rule."""
    if raw is None:
        return None
    errors = validate(raw, path)
    if errors:
        raise InvalidSelector(errors)
    labels = tuple(sorted((str(k), str(v)) for k, v in (raw.get("matchLabels") or {}).items()))
    expressions = tuple(Requirement(str(e["key"]), str(e["operator"]), tuple(str(v) for v in e.get("values") or ()))
                        for e in raw.get("matchExpressions") or ())
    return LabelSelector(labels, expressions)


def parse_or_nothing(raw: Any) -> LabelSelector | None:
    """:func:`parse` for callers past admission: an invalid selector becomes NOTHING."""
    try:
        return parse(raw)
    except InvalidSelector:
        return NOTHING


def selects(raw: Any, labels: Mapping[str, str], *, nil: bool = False) -> bool:
    """Whether the wire-form selector ``raw`` selects ``labels``.

    ``nil`` is the answer for a missing selector: False is Kubernetes' (``LabelSelectorAsSelector``),
    True is Karmada's for an unset ``labelSelector``. An invalid selector selects nothing. Evaluated
    on the wire form in one pass (callers match many objects against unparsed selectors): a broken
    rule or a failed requirement both answer False, so stopping at the first is exact."""
    if raw is None:
        return nil
    if not isinstance(raw, Mapping):
        return False
    wanted = raw.get("matchLabels") or {}
    expressions = raw.get("matchExpressions") or []
    if not isinstance(wanted, Mapping) or not isinstance(expressions, list):
        return False
    for key, value in wanted.items():
        if labels.get(str(key)) != str(value):
            return False
    for expr in expressions:
        if not isinstance(expr, Mapping) or not expr.get("key"):
            return False
        op, values, have = expr.get("operator"), expr.get("values"), labels.get(str(expr["key"]))
        if op in SET_OPERATORS:
            if not values:
                return False
            listed = have is not None and (have in values or any(str(v) == have for v in values))
            if listed != (op == "In"):
                return False
        elif op not in ("Exists", "DoesNotExist") or values or (have is None) != (op == "DoesNotExist"):
            return False
    return True
