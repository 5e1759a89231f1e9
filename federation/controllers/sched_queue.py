"""The placement controller's scheduling queue, as Karmada's scheduler has one (pure, no I/O).

Three places a binding waits in:

* **activeQ**: bindings to place now, highest binding priority first, then the oldest
  (the Job's creation time, else when it was first queued), then arrival order;
* **backoffQ**: bindings whose last attempt failed for a *transient* reason (an API error, an
  invalid input the next write may fix); each waits ``initial_backoff * 2**(attempts-1)``,
  capped at ``max_backoff`` (Karmada's defaults: 1 s and 10 s), counted from that attempt;
* **unschedulable**: bindings that did not fit anywhere. They do not wait for a timer: any
  event that could make one fit (:meth:`SchedulingQueue.move_all_to_active`: a cluster's free
  capacity grows, a cluster joins or becomes Ready, a taint goes away, a job finishes or is
  deleted, a policy changes) moves all of them back to activeQ at once. As a safety net
  :meth:`flush_leftover` (every :data:`LEFTOVER_FLUSH_PERIOD`) moves those that waited longer
  than ``max_unschedulable`` (5 min).

A binding being placed (popped, not yet :meth:`done`) is *in flight*; pushing it again while in
flight marks it dirty, so it goes back to activeQ when done whatever the outcome, as an event
that arrives during an attempt may have made the attempt stale. Time is the injected ``clock``.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass, field
from typing import Literal

from policies.backoff import Backoff

#: Karmada's scheduler defaults (pkg/scheduler/internal/queue)
DEFAULT_INITIAL_BACKOFF = 1.0
DEFAULT_MAX_BACKOFF = 10.0
DEFAULT_MAX_UNSCHEDULABLE = 300.0
#: how often the backoffQ and the unschedulable leftovers are flushed (Karmada: 1 s and 30 s)
BACKOFF_FLUSH_PERIOD = 1.0
LEFTOVER_FLUSH_PERIOD = 30.0

Outcome = Literal["scheduled", "unschedulable", "error", "dropped", "preempted"]
Where = Literal["active", "backoff", "unschedulable", "inflight"]


@dataclass
class QueuedBinding:
    key: Hashable
    priority: int
    #: orders equal priorities: the Job's creation time, else the first time it was queued
    created: float
    #: when it last entered a queue (backoff and the unschedulable timeout count from it)
    timestamp: float
    attempts: int = 0
    seq: int = 0
    where: Where = "active"
    dirty: bool = False
    reason: str = ""

    def order(self) -> tuple[int, float, int]:
        return (-self.priority, self.created, self.seq)


@dataclass
class QueueStats:
    active: int
    backoff: int
    unschedulable: int
    inflight: int


@dataclass
class SchedulingQueue:
    clock: Callable[[], float]
    initial_backoff: float = DEFAULT_INITIAL_BACKOFF
    max_backoff: float = DEFAULT_MAX_BACKOFF
    max_unschedulable: float = DEFAULT_MAX_UNSCHEDULABLE
    _items: dict[Hashable, QueuedBinding] = field(default_factory=dict)
    _heap: list[tuple[tuple[int, float, int], Hashable]] = field(default_factory=list)
    _seq: Iterator[int] = field(default_factory=itertools.count)
    #: the last reason bindings were moved back to activeQ (for logs and tests)
    last_move: str = ""

    # ------------------------------------------------------------------ adding

    def push(self, key: Hashable, priority: int = 0, created: float | None = None) -> None:
        """Queue ``key`` for placement now (activeQ), or update its priority if already queued.
        A key waiting in backoffQ or unschedulable moves to activeQ (its spec or policy changed)."""
        now = self.clock()
        item = self._items.get(key)
        if item is None:
            item = QueuedBinding(key, priority, now if created is None else created, now, seq=next(self._seq))
            self._items[key] = item
            self._to_active(item)
            return
        if item.where == "inflight":
            item.dirty = True
            item.priority = priority
            return
        changed = item.priority != priority
        item.priority = priority
        if item.where != "active" or changed:
            self._to_active(item)

    def done(self, key: Hashable, outcome: Outcome, reason: str = "") -> None:
        """The attempt for a popped ``key`` ended: ``scheduled``/``dropped`` leave the queue,
        ``unschedulable`` waits for an event, ``error`` backs off, ``preempted`` (it cleared victims to
        make room) goes straight back to activeQ, ahead of its lower-priority victims. Dirty keys go
        back to activeQ."""
        item = self._items.get(key)
        if item is None or item.where != "inflight":
            return
        now = self.clock()
        item.reason = reason
        if outcome in ("scheduled", "dropped") and not item.dirty:
            del self._items[key]
            return
        if outcome in ("unschedulable", "error", "preempted"):
            item.attempts += 1
        item.timestamp = now
        if item.dirty or outcome == "preempted":
            self._to_active(item)
        elif outcome == "unschedulable":
            item.where = "unschedulable"
        elif outcome == "error":
            item.where = "backoff"
        else:  # scheduled/dropped but dirty: look again
            self._to_active(item)

    def forget(self, key: Hashable) -> None:
        """Drop ``key`` wherever it is (the job was deleted or needs no placement)."""
        self._items.pop(key, None)  # a later done() for it is ignored; stale heap entries are skipped

    # ------------------------------------------------------------------ taking

    def pop(self) -> Hashable | None:
        """The head of activeQ, now in flight (None: activeQ is empty)."""
        while self._heap:
            order, key = heapq.heappop(self._heap)
            item = self._items.get(key)
            if item is None or item.where != "active" or item.order() != order:
                continue  # a stale heap entry: moved, re-prioritised or forgotten since
            item.where = "inflight"
            item.dirty = False
            return key
        return None

    def move_all_to_active(self, reason: str) -> int:
        """An event that could make a waiting binding fit: every unschedulable binding goes back to
        activeQ now (backoffQ keeps its timers: those failures were not about capacity)."""
        moved = 0
        for item in self._items.values():
            if item.where == "unschedulable":
                self._to_active(item)
                moved += 1
            elif item.where == "inflight":
                item.dirty = True  # the attempt running now may have missed this event
        if moved:
            self.last_move = reason
        return moved

    def flush_backoff(self) -> int:
        """Move every backoffQ binding whose backoff has completed to activeQ."""
        now = self.clock()
        ready = [i for i in self._items.values() if i.where == "backoff" and self.backoff_until(i) <= now]
        for item in ready:
            self._to_active(item)
        return len(ready)

    def flush_leftover(self) -> int:
        """Karmada's safety net: unschedulable bindings that waited longer than ``max_unschedulable``."""
        now = self.clock()
        stale = [i for i in self._items.values()
                 if i.where == "unschedulable" and now - i.timestamp > self.max_unschedulable]
        for item in stale:
            self._to_active(item)
        if stale:
            self.last_move = "unschedulable for longer than the maximum"
        return len(stale)

    # ------------------------------------------------------------------ reading

    def backoff_duration(self, attempts: int) -> float:
        """No penalty before the first attempt; then initial, doubled per attempt, capped."""
        return Backoff(self.initial_backoff, self.max_backoff).delay(attempts)

    def backoff_until(self, item: QueuedBinding) -> float:
        return item.timestamp + self.backoff_duration(item.attempts)

    def next_backoff_expiry(self) -> float | None:
        """When the earliest backoffQ binding may be retried (None: backoffQ is empty)."""
        times = [self.backoff_until(i) for i in self._items.values() if i.where == "backoff"]
        return min(times) if times else None

    def where(self, key: Hashable) -> Where | None:
        item = self._items.get(key)
        return None if item is None else item.where

    def get(self, key: Hashable) -> QueuedBinding | None:
        return self._items.get(key)

    def active_keys(self) -> list[Hashable]:
        """activeQ in the order :meth:`pop` would hand it out."""
        items = sorted((i for i in self._items.values() if i.where == "active"), key=QueuedBinding.order)
        return [i.key for i in items]

    def stats(self) -> QueueStats:
        count = {"active": 0, "backoff": 0, "unschedulable": 0, "inflight": 0}
        for item in self._items.values():
            count[item.where] += 1
        return QueueStats(**count)

    def __len__(self) -> int:
        return sum(1 for i in self._items.values() if i.where == "active")

    def __contains__(self, key: object) -> bool:
        return key in self._items

    # ------------------------------------------------------------------ internals

    def _to_active(self, item: QueuedBinding) -> None:
        item.where = "active"
        item.dirty = False
        item.timestamp = self.clock()
        item.seq = next(self._seq)
        heapq.heappush(self._heap, (item.order(), item.key))
