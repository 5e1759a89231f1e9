"""The resource dimensions of one session: every vector is a numpy row over them.

Order is fixed: ``cpu`` (milli), ``memory`` (bytes), ``pods`` (count), then every other
resource seen in the snapshot, sorted (milli-units, so ``nvidia.com/gpu: 1`` is 1000).
A resource absent from an object reads as 0, which is Volcano's ``Zero`` default.
"""

from __future__ import annotations

from typing import Iterable, Mapping

import numpy as np

from policies.resources import CPU, MEMORY, PODS, to_quantity_text
from policies.resources import TOLERANCE as TOLERANCE  # re-exported: the plugins compare with it

Vector = np.ndarray


class Dimensions:
    CPU = 0
    MEMORY = 1
    PODS = 2

    def __init__(self, extra: Iterable[str] = ()) -> None:
        scalars = sorted({n for n in extra if n not in (CPU, MEMORY, PODS)})
        self.names: tuple[str, ...] = (CPU, MEMORY, PODS, *scalars)
        self.index: dict[str, int] = {n: i for i, n in enumerate(self.names)}
        #: Columns always compared in a fit test (cpu and memory, as Volcano does).
        self.always = np.zeros(len(self.names), dtype=bool)
        self.always[[self.CPU, self.MEMORY]] = True
        self.is_pods = np.zeros(len(self.names), dtype=bool)
        self.is_pods[self.PODS] = True

    def __len__(self) -> int:
        return len(self.names)

    def zeros(self) -> Vector:
        return np.zeros(len(self.names), dtype=np.float64)

    def vector(self, values: Mapping[str, float] | None) -> Vector:
        out = self.zeros()
        for name, amount in (values or {}).items():
            i = self.index.get(name)
            if i is not None:
                out[i] = amount
        return out

    def to_mapping(self, vector: Vector, *, keep_zero: bool = False) -> dict[str, float]:
        return {
            n: float(v) for n, v in zip(self.names, vector, strict=True) if keep_zero or abs(v) >= TOLERANCE
        }

    def describe(self, vector: Vector) -> str:
        """Human text of a vector (``cpu 4, memory 8Gi, nvidia.com/gpu 2``)."""
        parts = []
        for name, value in zip(self.names, vector, strict=True):
            if abs(value) < TOLERANCE:
                continue
            if np.isinf(value):
                parts.append(f"{name} unlimited")
            else:
                parts.append(f"{name} {to_quantity_text(name, float(value))}")
        return ", ".join(parts) or "nothing"


def fits(request: Vector, available: Vector, always: np.ndarray) -> bool:
    """Volcano's tolerant ``LessEqual(…, Zero)``: every requested dim within available + 0.1."""
    check = (request != 0) | always
    return bool(np.all(request[check] < available[check] + TOLERANCE))


def fits_values(request: list[float], available: list[float], always: list[bool]) -> bool:
    """:func:`fits` on Python values (``tolist()`` of the vectors): the same comparisons, without
    the half-dozen numpy calls that cost more than them on a few dims (a queue's check per pop)."""
    for r, a, checked in zip(request, available, always, strict=True):
        if (r != 0 or checked) and not r < a + TOLERANCE:
            return False
    return True


def failing_dims(request: Vector, available: Vector, always: np.ndarray) -> np.ndarray:
    check = (request != 0) | always
    return np.flatnonzero(check & ~(request < available + TOLERANCE))


def le_on_requested(left: Vector, right: Vector, request: Vector, is_pods: np.ndarray) -> bool:
    """Strict ``left <= right`` only on dims where ``request > 0``, ``pods`` excluded
    (``LessEqualWithDimensionAndResourcesName``)."""
    check = (request > 0) & ~is_pods
    return bool(np.all(left[check] <= right[check]))


def is_empty(vector: Vector) -> bool:
    """Nothing but ``pods`` (Volcano's ``IsEmpty``: every other dim below the tolerance)."""
    # On a Python list: a vector has a handful of dims, where ``np.delete`` and a reduction
    # cost several times the comparisons (it runs for every pod the scheduler cache derives).
    return empty_values(vector.tolist())


def empty_values(values: list[float]) -> bool:
    """:func:`is_empty` of a vector's ``tolist()``."""
    return all(v < TOLERANCE for d, v in enumerate(values) if d != Dimensions.PODS)


def share(amount: Vector, total: Vector) -> Vector:
    """Per dim ``amount / total``; a zero total gives 0 for zero amount, else 1."""
    out = np.where(amount == 0, 0.0, 1.0)
    nz = total != 0
    out[nz] = amount[nz] / total[nz]
    return out
