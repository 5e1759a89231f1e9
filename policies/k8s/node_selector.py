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
