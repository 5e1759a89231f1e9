"""core/v1 Taint and Toleration, and whether one tolerates the other: the one copy both planes use
(cluster taints in the federation, node taints in the agent).

Kubernetes' ``Toleration.ToleratesTaint``:

* a toleration with an effect only covers taints of that effect (empty: every effect);
* a toleration with a key only covers taints of that key (empty: every key);
* ``Exists`` then tolerates; ``Equal`` (or an empty operator) needs equal values; any other
  operator tolerates nothing.

Admission refuses ``Equal`` with an empty key and ``Exists`` with a value, so those only
reach matching from objects stored before; they then behave as in kube (an empty-key ``Equal``
toleration covers every taint whose value equals its own).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from policies.errors import FieldError

EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
OPERATORS = ("Exists", "Equal")
#: the effects a scheduler filters on (PreferNoSchedule only scores)
HARD_EFFECTS = ("NoSchedule", "NoExecute")


@dataclass(frozen=True)
class Taint:
    key: str
    value: str = ""
    effect: str = ""

    @classmethod
    def from_wire(cls, raw: Mapping[str, Any]) -> "Taint":
        return cls(str(raw.get("key") or ""), str(raw.get("value") or ""), str(raw.get("effect") or ""))


@dataclass(frozen=True)
class Toleration:
    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""

    @classmethod
    def from_wire(cls, raw: Mapping[str, Any]) -> "Toleration":
        return cls(str(raw.get("key") or ""), str(raw.get("operator") or "Equal"), str(raw.get("value") or ""),
                   str(raw.get("effect") or ""))

    def tolerates(self, taint: Taint) -> bool:
        """Kubernetes' ``Toleration.ToleratesTaint``."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        if self.operator in ("Equal", ""):
            return self.value == taint.value
        return False


def tolerations(raw: Iterable[Mapping[str, Any]] | None) -> tuple[Toleration, ...]:
    """Wire tolerations as values."""
    return tuple(Toleration.from_wire(t) for t in raw or ())


def tolerated(items: Iterable[Toleration], taint: Taint) -> bool:
    return any(t.tolerates(taint) for t in items)


def untolerated(taints: Iterable[Taint], items: tuple[Toleration, ...]) -> list[Taint]:
    """The NoSchedule/NoExecute taints that no toleration covers."""
    return [t for t in taints if t.effect in HARD_EFFECTS and not tolerated(items, t)]


def validate(raw: Mapping[str, Any], path: str) -> list[FieldError]:
    """kube's ValidateTolerations for one wire toleration at ``path`` (Karmada's webhook adds its
    refusal of ``Lt``/``Gt`` on top)."""
    errors: list[FieldError] = []
    key, op, value, effect = (raw.get(f) or "" for f in ("key", "operator", "value", "effect"))
    if op and op not in OPERATORS:
        errors.append(FieldError(f"{path}.operator", f"Unsupported value: {op!r}: supported values: "
                                                     f"{', '.join(map(repr, OPERATORS))}"))
    if op == "Exists" and value:
        errors.append(FieldError(f"{path}.value", "value must be empty when `operator` is 'Exists'"))
    if not key and op != "Exists":
        errors.append(FieldError(f"{path}.operator", "operator must be Exists when `key` is empty, which means "
                                                     '"match all values and all keys"'))
    if effect and effect not in EFFECTS:
        errors.append(FieldError(f"{path}.effect", f"Unsupported value: {effect!r}: supported values: "
                                                   f"{', '.join(map(repr, EFFECTS))}"))
    if raw.get("tolerationSeconds") is not None and effect != "NoExecute":
        errors.append(FieldError(f"{path}.effect", "effect must be 'NoExecute' when `tolerationSeconds` is set"))
    return errors
