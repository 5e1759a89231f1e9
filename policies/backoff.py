"""Capped exponential backoff, the one copy every retry delay comes from.

``Backoff(base, cap).delay(n)`` is the wait after the ``n``-th consecutive failure: nothing
before the first, then ``base``, doubled per failure, never above ``cap`` (client-go's
``ItemExponentialFailureRateLimiter``, Karmada's scheduling queue). It is computed without
raising the failure count to a power, so any count is safe: the old ``base * 2 ** (n - 1)``
raised OverflowError after 1,025 failures of one key and killed the worker (issue 42).

Why a small pure class and not tenacity: the callers are work queues and annotations that
count failures per key and schedule the next visit themselves; none wraps a call in a retry
loop, which is what tenacity's ``wait_exponential`` serves (it wants a ``RetryCallState``). And
``policies`` is a pure core, which the ``pure-cores`` import contract keeps free of tenacity.
The agent's federation sync (``member_agent/sync.py``) is a retry loop and keeps tenacity.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Backoff:
    """Exponential backoff from ``base`` seconds, capped at ``cap`` seconds."""

    base: float
    cap: float

    def __post_init__(self) -> None:
        for name in ("base", "cap"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
                raise ValueError(f"backoff {name} must be a finite number of seconds >= 0, got {value!r}")

    @property
    def doublings_to_cap(self) -> int:
        """How many doublings of ``base`` reach ``cap`` (the delay is ``cap`` from there on)."""
        if self.base <= 0 or self.base >= self.cap:
            return 0
        return math.ceil(math.log2(self.cap / self.base))

    def delay(self, failures: int) -> float:
        """Seconds to wait after ``failures`` consecutive failures (0 before the first)."""
        if failures <= 0 or self.base <= 0:
            return 0.0
        if self.base >= self.cap:
            return float(self.cap)
        doublings = failures - 1
        if doublings >= self.doublings_to_cap:
            return float(self.cap)
        return min(math.ldexp(float(self.base), doublings), float(self.cap))


def backoff(failures: int, base: float, cap: float) -> float:
    """``Backoff(base, cap).delay(failures)`` for one-off callers."""
    return Backoff(base, cap).delay(failures)
