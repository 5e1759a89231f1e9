"""What wakes the agent's loops: a change counter with subscribers, and the session gate.

:class:`Changes` counts every change the scheduler or the capacity report could see (the cluster
cache, the Works, the scheduler inputs, the writes a session just made). Each loop subscribes its
own :class:`asyncio.Event` (one loop clearing its event never hides a change from another).

:class:`SessionGate` is Volcano's period made lazy: a session runs when something changed since
the last one, or when a period has passed and there is pending work (pods to place, PodGroups to
enqueue, a held share to reserve); an agent with nothing to do runs no session at all.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Optional


@dataclass
class Changes:
    version: int = 0
    _subscribers: list[asyncio.Event] = field(default_factory=list)

    def bump(self) -> None:
        self.version += 1
        for event in self._subscribers:
            event.set()

    def subscribe(self) -> asyncio.Event:
        event = asyncio.Event()
        self._subscribers.append(event)
        return event


@dataclass
class SessionGate:
    """Pure: whether a scheduling session is due (times on the agent's clock)."""

    period: float
    last_run: Optional[float] = None
    last_version: int = -1
    skipped: int = 0
    #: periods skipped in a row since the last session (and whether that idle spell was noted)
    idle_periods: int = 0
    _idle_noted: bool = True

    def due(self, now: float, version: int, pending: bool) -> bool:
        if self.last_run is None or version != self.last_version:
            return True
        return pending and now - self.last_run >= self.period

    def ran(self, now: float, version: int) -> None:
        """Record a session that started at ``now`` on what ``version`` showed."""
        self.last_run, self.last_version = now, version
        self.idle_periods, self._idle_noted = 0, False

    def skip(self) -> None:
        self.skipped += 1
        self.idle_periods += 1

    def went_idle(self, periods: int) -> bool:
        """True once per idle spell: ``periods`` periods in a row without a session after one ran."""
        if self._idle_noted or self.idle_periods < periods:
            return False
        self._idle_noted = True
        return True


async def first_of(*awaitables: Any) -> None:
    """Wait until the first of ``awaitables`` finishes (a change, or a period's sleep); cancel the rest."""
    tasks = [asyncio.ensure_future(a) for a in awaitables]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
