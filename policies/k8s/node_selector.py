"""core/v1 NodeSelectorRequirement and NodeSelectorTerm matching, the one copy both planes use.

Kubernetes' rules (``nodeaffinity.NewNodeSelector``, ``NodeSelectorRequirementsAsSelector``):

* a term ANDs its ``matchExpressions`` (node labels) and ``matchFields`` (``metadata.name``
  only); an **empty term matches nothing**; a selector ORs its terms, and a selector with no
  terms matches nothing (None, no required affinity at all, is the caller's "everything");
* ``In``/``NotIn``/``Exists``/``DoesNotExist`` as for label selectors (``NotIn`` matches an
  absent key);
* ``Gt``/``Lt`` take exactly one value, an int64 in ``strconv.ParseInt`` syntax (ASCII digits,
  an optional sign, nothing else: no blanks, no ``_``); the node's label must parse the same
  way, else no match; an absent label never matches;
* a field requirement is ``In``/``NotIn`` with exactly one value;
* a requirement kube cannot turn into a selector (unknown operator, wrong number of values, a
  bound that is not an integer) makes its term match nothing, never everything.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from policies.errors import FieldError

OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
FIELD_OPERATORS = ("In", "NotIn")
NAME_FIELD = "metadata.name"
_INT64 = re.compile(r"[+-]?[0-9]+")
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


def parse_int64(text: str | None) -> int | None:
    """``strconv.ParseInt(text, 10, 64)``, or None where Go returns an error."""
    if text is None or not _INT64.fullmatch(text):
        return None
    value = int(text)
    return value if _INT64_MIN <= value <= _INT64_MAX else None


@dataclass(frozen=True)
class NodeSelectorRequirement:
    key: str
    operator: str
    values: tuple[str, ...] = ()

    def matches(self, value: str | None) -> bool:
        """Whether a node whose label ``key`` is ``value`` (None: absent) satisfies this."""
        op, values = self.operator, self.values
        if op == "In":
            return value is not None and value in values
        if op == "NotIn":
            return bool(values) and (value is None or value not in values)
        if op == "Exists":
            return not values and value is not None
        if op == "DoesNotExist":
            return not values and value is None
        if op in ("Gt", "Lt") and len(values) == 1:
            bound, have = parse_int64(values[0]), parse_int64(value)
            if bound is None or have is None:
                return False
            return have > bound if op == "Gt" else have < bound
        return False

    def matches_field(self, name: str) -> bool:
        """As a ``matchFields`` entry, against the node's name."""
        if self.key != NAME_FIELD or self.operator not in FIELD_OPERATORS or len(self.values) != 1:
            return False
        return self.matches(name)


@dataclass(frozen=True)
class NodeSelectorTerm:
    """AND of label expressions and ``metadata.name`` field expressions; empty matches nothing."""

    expressions: tuple[NodeSelectorRequirement, ...] = ()
    fields: tuple[NodeSelectorRequirement, ...] = ()

    def matches(self, labels: Mapping[str, str], name: str) -> bool:
        if not self.expressions and not self.fields:
            return False
        return (all(r.matches(labels.get(r.key)) for r in self.expressions)
                and all(r.matches_field(name) for r in self.fields))


def requirements(raw: Iterable[Mapping[str, Any]] | None) -> tuple[NodeSelectorRequirement, ...]:
    """Wire ``matchExpressions``/``matchFields`` as requirements (an absent operator is In)."""
    return tuple(NodeSelectorRequirement(str(r.get("key", "")), str(r.get("operator", "In")),
                                         tuple(str(v) for v in r.get("values") or ()))
                 for r in raw or ())


def term(raw: Mapping[str, Any]) -> NodeSelectorTerm:
    """A wire NodeSelectorTerm."""
    return NodeSelectorTerm(requirements(raw.get("matchExpressions")), requirements(raw.get("matchFields")))


def terms(raw: Mapping[str, Any] | None) -> tuple[NodeSelectorTerm, ...] | None:
    """A wire NodeSelector's terms; None when there is no selector (no requirement)."""
    if raw is None:
        return None
    return tuple(term(t) for t in raw.get("nodeSelectorTerms") or ())


def any_term_matches(selector: tuple[NodeSelectorTerm, ...] | None, labels: Mapping[str, str], name: str) -> bool:
    """A required NodeSelector (OR of terms): None matches every node, no terms none."""
    if selector is None:
        return True
    return any(t.matches(labels, name) for t in selector)


def validate_requirement(raw: Mapping[str, Any], path: str, field: bool = False) -> list[FieldError]:
    """kube's ValidateNodeSelectorRequirement (``field``: a ``matchFields`` entry) at ``path``."""
    op, values = raw.get("operator"), list(raw.get("values") or ())
    errors: list[FieldError] = []
    if field and raw.get("key") != NAME_FIELD:
        errors.append(FieldError(f"{path}.key", f"Unsupported value: {raw.get('key')!r}: supported values: "
                                                f"{NAME_FIELD!r}"))
    if field and op not in FIELD_OPERATORS:
        return errors + [FieldError(f"{path}.operator", f"Unsupported value: {op!r}: not a valid field selector "
                                                        "operator; supported values: 'In', 'NotIn'")]
    if field and len(values) != 1:
        return errors + [FieldError(f"{path}.values", "Required value: must be only one value when `operator` "
                                                      f"is {op!r} for node field selector")]
    if op in ("In", "NotIn") and not values:
        errors.append(FieldError(f"{path}.values", f"Required value: must be specified when `operator` is {op!r}"))
    elif op in ("Exists", "DoesNotExist") and values:
        errors.append(FieldError(f"{path}.values", f"Forbidden: may not be specified when `operator` is {op!r}"))
    elif op in ("Gt", "Lt"):
        if len(values) != 1:
            errors.append(FieldError(f"{path}.values", f"Required value: must be specified single value when "
                                                       f"`operator` is {op!r}"))
        elif parse_int64(str(values[0])) is None:
            errors.append(FieldError(f"{path}.values[0]", f"Invalid value: {values[0]!r}: must be an integer "
                                                          f"(int64) when `operator` is {op!r}"))
    elif op not in OPERATORS:
        errors.append(FieldError(f"{path}.operator", f"Unsupported value: {op!r}: not a valid selector operator"))
    return errors


def validate_term(raw: Mapping[str, Any], path: str) -> list[FieldError]:
    """Every rule a wire NodeSelectorTerm at ``path`` breaks."""
    errors: list[FieldError] = []
    for i, req in enumerate(raw.get("matchExpressions") or ()):
        errors += validate_requirement(req, f"{path}.matchExpressions[{i}]")
    for i, req in enumerate(raw.get("matchFields") or ()):
        errors += validate_requirement(req, f"{path}.matchFields[{i}]", field=True)
    return errors
