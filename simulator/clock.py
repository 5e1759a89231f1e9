"""Virtual time: a clock that moves only when the replay says so (no sleeps, no wall clock)."""

from __future__ import annotations


class VirtualClock:
    """A :class:`SessionClock` whose time the event loop advances."""

    def __init__(self, start: float = 0.0) -> None:
        self._now = start

    def now(self) -> float:
        return self._now

    def monotonic(self) -> float:
        return self._now

    def advance_to(self, when: float) -> None:
        if when > self._now:
            self._now = when

    def advance(self, seconds: float) -> None:
        self._now += max(0.0, seconds)
