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

EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
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
