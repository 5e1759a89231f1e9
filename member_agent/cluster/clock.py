"""Clocks the agent and the simulated cluster run on.

Everything in the agent reads time through a :class:`Clock` so that tests and demos can run
faster than real time:

* :class:`RealClock`: wall-clock time, real sleeps;
* :class:`ScaledClock`: starts at the current wall-clock time and runs ``speed`` times faster
  (``caldera agent --speed 10``: a pod with a 60 s duration finishes in 6 real seconds);
* :class:`ManualClock`: time moves only when a test calls :meth:`ManualClock.advance`; sleepers
  whose deadline has passed wake up then. Nothing sleeps for real.

``now()`` is seconds since the epoch (a float), ``monotonic()`` a non-decreasing reading for
measuring durations on the same clock.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from datetime import UTC, datetime
from functools import lru_cache
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float:
        """Seconds since the epoch on this clock."""

    def monotonic(self) -> float:
        """A non-decreasing reading in this clock's seconds."""

    async def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` of this clock's time."""


@lru_cache(maxsize=256)  # pure; a controller pass stamps many objects with the same few instants
def rfc3339(epoch_seconds: float) -> str:
    """Kubernetes' timestamp format (UTC, whole seconds, trailing ``Z``)."""
    return datetime.fromtimestamp(epoch_seconds, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class RealClock:
    def now(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))


class ScaledClock:
    """Wall-clock start, ``speed`` times faster afterwards."""

    def __init__(self, speed: float = 1.0, start: float | None = None) -> None:
        if not speed > 0:
            raise ValueError(f"--speed must be positive, got {speed}")
        self.speed = float(speed)
        self._origin_wall = time.time() if start is None else start
        self._origin_mono = time.monotonic()

    def now(self) -> float:
        return self._origin_wall + (time.monotonic() - self._origin_mono) * self.speed

    def monotonic(self) -> float:
        return (time.monotonic() - self._origin_mono) * self.speed

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds) / self.speed)


class ManualClock:
    """A clock that tests move by hand; ``sleep`` returns when :meth:`advance` passes its deadline."""

    def __init__(self, start: float = 1_790_000_000.0) -> None:
        self._now = float(start)
        self._start = float(start)
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._seq = itertools.count()

    def now(self) -> float:
        return self._now

    def monotonic(self) -> float:
        return self._now - self._start

    async def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self._now + seconds, next(self._seq), future))
        await future

    def advance(self, seconds: float) -> None:
        """Move time forward and wake every sleeper whose deadline is now past."""
        if seconds < 0:
            raise ValueError("a clock does not go backwards")
        self._now += seconds
        while self._sleepers and self._sleepers[0][0] <= self._now:
            _, _, future = heapq.heappop(self._sleepers)
            if not future.done():
                future.set_result(None)

    @property
    def sleepers(self) -> int:
        return sum(1 for _, _, f in self._sleepers if not f.done())
