"""Resource vectors with Volcano's units and comparison semantics.

Units follow the Volcano scheduler (``reference/volcano.md`` §1.1):

* ``cpu`` in milli-cores, ``memory`` in bytes, ``pods`` in whole pods;
* every other resource (``nvidia.com/gpu``, ``nvidia.com/gpumem``, hugepages,
  ``ephemeral-storage``...) in milli-units, so ``nvidia.com/gpu: 1`` is ``1000``.

Comparisons are tolerant: two values closer than :data:`TOLERANCE` (0.1 in the native
unit) count as equal. A resource missing on one side is read as zero or as infinite,
chosen by :class:`Missing`, which is how Volcano's ``Zero``/``Infinity`` defaults behave.
"""

from __future__ import annotations

from enum import Enum
from fractions import Fraction
from typing import Iterable, Iterator, Mapping

from policies.quantity import QuantityLike, from_fraction, parse_quantity, remembered_for

TOLERANCE = 0.1
CPU = "cpu"
MEMORY = "memory"
PODS = "pods"
GPU = "nvidia.com/gpu"
GPU_MEMORY = "nvidia.com/gpumem"
GPU_CORES = "nvidia.com/gpucores"

#: Resources counted in whole units rather than milli-units.
_WHOLE_UNIT = frozenset({MEMORY, PODS})


class Missing(Enum):
    """How a resource absent from the right-hand side of a comparison is read."""

    ZERO = "zero"
    INFINITY = "infinity"


@remembered_for(str)
def to_internal(name: str, quantity: QuantityLike) -> float:
    """A quantity in the scheduler's unit for ``name`` (milli for cpu and scalars)."""
    q = parse_quantity(quantity)
    if name in _WHOLE_UNIT:
        return float(q.int_value())
    return float(q.milli_value())


@remembered_for(float)
def to_quantity_text(name: str, value: float) -> str:
    """Canonical quantity text for an internal value (inverse of :func:`to_internal`)."""
    if name in _WHOLE_UNIT:
        exact = Fraction(round(value))
        if name == MEMORY:
            return from_fraction(exact, "BinarySI").canonical()
        return from_fraction(exact).canonical()
    return from_fraction(Fraction(round(value)) / 1000).canonical()


class ResourceVector(Mapping[str, float]):
    """An immutable mapping ``resource name -> amount`` in scheduler units."""

    __slots__ = ("_values",)

    def __init__(self, values: Mapping[str, float] | None = None) -> None:
        self._values: dict[str, float] = {k: float(v) for k, v in (values or {}).items()}

    # ------------------------------------------------------------ construction
    @classmethod
    def from_resource_list(cls, resource_list: Mapping[str, QuantityLike] | None) -> "ResourceVector":
        """From a Kubernetes ResourceList (``{"cpu": "500m", "memory": "1Gi"}``).

        Names starting with ``count/`` are quota counters, not resources, and are skipped.
        """
        values: dict[str, float] = {}
        for name, quantity in (resource_list or {}).items():
            if name.startswith("count/"):
                continue
            values[name] = to_internal(name, quantity)
        return cls(values)

    def to_resource_list(self) -> dict[str, str]:
        """Back to a ResourceList of canonical quantity strings (zeros dropped)."""
        return {
            name: to_quantity_text(name, value)
            for name, value in sorted(self._values.items())
            if abs(value) >= TOLERANCE
        }

    # ------------------------------------------------------------ mapping protocol
    def __getitem__(self, name: str) -> float:
        return self._values.get(name, 0.0)

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __contains__(self, name: object) -> bool:
        return name in self._values

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v:g}" for k, v in sorted(self._values.items()))
        return f"ResourceVector({inner})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ResourceVector):
            return NotImplemented
        names = set(self._values) | set(other._values)
        return all(self[n] == other[n] for n in names)

    def __hash__(self) -> int:
        return hash(tuple(sorted((k, v) for k, v in self._values.items() if v != 0)))

    # ------------------------------------------------------------ arithmetic
    def __add__(self, other: Mapping[str, float]) -> "ResourceVector":
        values = dict(self._values)
        for name, amount in other.items():
            values[name] = values.get(name, 0.0) + amount
        return ResourceVector(values)

    def __sub__(self, other: Mapping[str, float]) -> "ResourceVector":
        values = dict(self._values)
        for name, amount in other.items():
            values[name] = values.get(name, 0.0) - amount
        return ResourceVector(values)

    def scale(self, factor: float) -> "ResourceVector":
        return ResourceVector({k: v * factor for k, v in self._values.items()})

    def clamp_zero(self) -> "ResourceVector":
        """Every negative amount raised to zero."""
        return ResourceVector({k: max(0.0, v) for k, v in self._values.items()})

    def max_with(self, other: Mapping[str, float]) -> "ResourceVector":
        names = set(self._values) | set(other)
        return ResourceVector({n: max(self[n], other.get(n, 0.0)) for n in names})

    def min_with(self, other: Mapping[str, float], missing: Missing = Missing.ZERO) -> "ResourceVector":
        """Per-resource minimum; a scalar absent from ``other`` reads as ``missing``.

        cpu and memory are plain numbers in Volcano (absent means 0), so ``missing`` only
        applies to the other resources, as in ``MinDimensionResource``.
        """
        out: dict[str, float] = {}
        for name, amount in self._values.items():
            if name in other:
                out[name] = min(amount, other[name])
            elif name in (CPU, MEMORY):
                out[name] = min(amount, 0.0)
            elif missing is Missing.ZERO:
                out[name] = 0.0
            else:
                out[name] = amount
        return ResourceVector(out)

    def exceeded_part(self, other: Mapping[str, float]) -> "ResourceVector":
        """Per resource ``max(0, self - other)``."""
        return ResourceVector({k: max(0.0, v - other.get(k, 0.0)) for k, v in self._values.items()})

    # ------------------------------------------------------------ comparisons
    def less_equal(self, other: Mapping[str, float], missing: Missing = Missing.ZERO) -> bool:
        """Every resource of ``self`` is at most the same resource of ``other``, within tolerance.

        cpu and memory are always compared. With ``Missing.INFINITY`` a resource absent
        from ``other`` is unlimited, and (as in Volcano) ``other`` having a scalar that
        ``self`` lacks makes the answer false.
        """
        for name in (CPU, MEMORY):
            if not _le(self[name], other.get(name, 0.0)):
                return False
        for name, amount in self._values.items():
            if name in (CPU, MEMORY):
                continue
            if name not in other:
                if missing is Missing.INFINITY:
                    continue
                if not _le(amount, 0.0):
                    return False
            elif not _le(amount, other[name]):
                return False
        if missing is Missing.INFINITY:
            for name in other:
                if name not in (CPU, MEMORY) and name not in self._values:
                    return False
        return True

    def fits_in(self, available: Mapping[str, float]) -> bool:
        """Whether a request fits the available amounts (absent available reads as zero)."""
        return self.less_equal(available, Missing.ZERO)

    def insufficient(self, available: Mapping[str, float]) -> list[str]:
        """Names of requested resources (amount > 0, ``pods`` included) that do not fit."""
        return sorted(
            name
            for name, amount in self._values.items()
            if amount > 0 and not _le(amount, available.get(name, 0.0))
        )

    def less_equal_in_requested(self, other: Mapping[str, float], request: Mapping[str, float]) -> bool:
        """Strict ``self <= other`` on only the dimensions ``request`` asks for (not ``pods``)."""
        for name, amount in request.items():
            if amount <= 0 or name == PODS:
                continue
            if self[name] > other.get(name, 0.0):
                return False
        return True

    def tolerant_equal(self, other: Mapping[str, float]) -> bool:
        names = set(self._values) | set(other)
        return all(abs(self[n] - other.get(n, 0.0)) < TOLERANCE for n in names)

    def is_empty(self) -> bool:
        """Nothing but ``pods`` is requested (Volcano's BestEffort test)."""
        return all(v < TOLERANCE for k, v in self._values.items() if k != PODS)

    def names(self) -> list[str]:
        """Resources with an amount of at least the tolerance (``pods`` included)."""
        return sorted(k for k, v in self._values.items() if v >= TOLERANCE)

    # ------------------------------------------------------------ shares
    def dominant_share(self, total: Mapping[str, float]) -> tuple[str, float]:
        """The resource with the largest share of ``total`` and that share (DRF).

        As in Volcano's drf/proportion plugins, shares are taken over the resources of
        ``total`` (at least the tolerance, ``pods`` included); a resource ``total`` does not
        have does not count.
        """
        best_name, best = "", 0.0
        for name in sorted(n for n, v in total.items() if v >= TOLERANCE):
            s = share(self[name], total[name])
            if s > best:
                best_name, best = name, s
        return best_name, best


def share(amount: float, total: float) -> float:
    """``amount / total``; a zero total gives 0 for a zero amount and 1 otherwise."""
    if total == 0:
        return 0.0 if amount == 0 else 1.0
    return amount / total


def _le(left: float, right: float) -> bool:
    return left < right or abs(left - right) < TOLERANCE


def sum_vectors(vectors: Iterable[Mapping[str, float]]) -> ResourceVector:
    total: dict[str, float] = {}
    for vector in vectors:
        for name, amount in vector.items():
            total[name] = total.get(name, 0.0) + amount
    return ResourceVector(total)


EMPTY = ResourceVector()
