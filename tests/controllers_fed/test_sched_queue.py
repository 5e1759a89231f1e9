"""The scheduling queue (activeQ / backoffQ / unschedulable) as tables of steps on a manual clock."""

from __future__ import annotations

from typing import Any

import pytest

from federation.controllers.sched_queue import SchedulingQueue


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def run(steps: list[tuple[Any, ...]], **options: float) -> list[Any]:
    """Apply ``steps`` and collect what the ``pop``/``where``/``order`` steps read."""
    clock = Clock()
    q = SchedulingQueue(clock, **options)
    seen: list[Any] = []
    for step in steps:
        op, *args = step
        if op == "push":
            q.push(*args)
        elif op == "pop":
            seen.append(q.pop())
        elif op == "done":
            q.done(*args)
        elif op == "tick":
            clock.now += args[0]
        elif op == "move":
            seen.append(q.move_all_to_active(args[0]))
        elif op == "flush_backoff":
            seen.append(q.flush_backoff())
        elif op == "flush_leftover":
            seen.append(q.flush_leftover())
        elif op == "where":
            seen.append(q.where(args[0]))
        elif op == "order":
            seen.append(q.active_keys())
        elif op == "forget":
            q.forget(args[0])
        else:
            raise AssertionError(op)
    return seen


CASES = [
    ("higher priority first, then the older job",
     [("push", "low-old", 0, 10.0), ("push", "high-new", 5, 20.0), ("push", "low-new", 0, 30.0),
      ("push", "high-old", 5, 15.0), ("order",)],
     [["high-old", "high-new", "low-old", "low-new"]]),
    ("equal priority and creation: arrival order",
     [("push", "a", 0, 1.0), ("push", "b", 0, 1.0), ("pop",), ("pop",), ("pop",)], ["a", "b", None]),
    ("a priority change re-sorts a queued key",
     [("push", "a", 0, 1.0), ("push", "b", 0, 2.0), ("push", "b", 9, 2.0), ("order",)], [["b", "a"]]),
    ("unschedulable waits for an event, not a timer",
     [("push", "a", 0, 1.0), ("pop",), ("done", "a", "unschedulable"), ("tick", 3600.0), ("flush_backoff",),
      ("where", "a"), ("move", "cluster x reports more nvidia.com/gpu"), ("where", "a"), ("pop",)],
     ["a", 0, "unschedulable", 1, "active", "a"]),
    ("a transient error backs off 1 s, then 2 s (Karmada's defaults)",
     [("push", "a", 0, 1.0), ("pop",), ("done", "a", "error"), ("tick", 0.9), ("flush_backoff",), ("tick", 0.2),
      ("flush_backoff",), ("pop",), ("done", "a", "error"), ("pop",), ("tick", 1.5), ("flush_backoff",),
      ("tick", 0.6), ("flush_backoff",), ("pop",)],
     ["a", 0, 1, "a", None, 0, 1, "a"]),
    ("an event does not cut a transient backoff short",
     [("push", "a", 0, 1.0), ("pop",), ("done", "a", "error"), ("move", "cluster joined"), ("where", "a")],
     ["a", 0, "backoff"]),
    ("the periodic flush moves unschedulable leftovers after 5 minutes",
     [("push", "a", 0, 1.0), ("pop",), ("done", "a", "unschedulable"), ("tick", 299.0), ("flush_leftover",),
      ("tick", 2.0), ("flush_leftover",), ("where", "a")],
     ["a", 0, 1, "active"]),
    ("an event during an attempt sends the key back to activeQ when it is done",
     [("push", "a", 0, 1.0), ("pop",), ("move", "job x finished"), ("done", "a", "unschedulable"),
      ("where", "a")],
     ["a", 0, "active"]),
    ("pushed again while in flight: placed again after success",
     [("push", "a", 0, 1.0), ("pop",), ("push", "a", 0, 1.0), ("done", "a", "scheduled"), ("where", "a")],
     ["a", "active"]),
    ("scheduled leaves the queue; a new push starts afresh",
     [("push", "a", 0, 1.0), ("pop",), ("done", "a", "scheduled"), ("where", "a"), ("pop",)], ["a", None, None]),
    ("a spec change moves an unschedulable key to activeQ",
     [("push", "a", 0, 1.0), ("pop",), ("done", "a", "unschedulable"), ("push", "a", 0, 1.0), ("where", "a")],
     ["a", "active"]),
    ("forgotten keys are never popped",
     [("push", "a", 0, 1.0), ("push", "b", 0, 2.0), ("forget", "a"), ("pop",), ("pop",)], ["b", None]),
    ("a preemptor goes straight back to activeQ, ahead of its victims",
     [("push", "victim", 0, 1.0), ("push", "preemptor", 10, 5.0), ("pop",), ("push", "victim", 0, 1.0),
      ("done", "preemptor", "preempted"), ("pop",), ("pop",)],
     ["preemptor", "preemptor", "victim"]),
    ("unschedulable keys come back in priority order",
     [("push", "low", 1, 1.0), ("push", "high", 10, 5.0), ("pop",), ("done", "high", "unschedulable"), ("pop",),
      ("done", "low", "unschedulable"), ("move", "cluster a reports more cpu"), ("pop",), ("pop",)],
     ["high", "low", 2, "high", "low"]),
]


@pytest.mark.parametrize(("steps", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_queue(steps: list[tuple[Any, ...]], expected: list[Any]) -> None:
    assert run(steps) == expected


@pytest.mark.parametrize(("attempts", "seconds"), [(0, 0.0), (1, 1.0), (2, 2.0), (3, 4.0), (4, 8.0), (5, 10.0),
                                                   (40, 10.0)])
def test_backoff_duration(attempts: int, seconds: float) -> None:
    assert SchedulingQueue(Clock()).backoff_duration(attempts) == seconds


def test_long_backoff_is_configurable() -> None:
    q = SchedulingQueue(Clock(), initial_backoff=3600.0, max_backoff=7200.0)
    assert (q.backoff_duration(1), q.backoff_duration(3)) == (3600.0, 7200.0)
