"""The clock a session reads (injected; pure code never reads time globals)."""

from __future__ import annotations

from typing import Protocol


class SessionClock(Protocol):
    def now(self) -> float:
        """Seconds since the epoch."""

    def monotonic(self) -> float:
        """A non-decreasing reading for durations."""


class FixedClock:
    """A clock that never moves: sessions on it are fully deterministic (tests)."""

    def __init__(self, now: float = 1_780_000_000.0) -> None:
        self._now = now

    def now(self) -> float:
        return self._now

    def monotonic(self) -> float:
        return 0.0
