"""Small memos kept across sessions by the pure cores: work a session repeats from an earlier one's
inputs (the same queues, the same node table) is looked up instead of done again.

Two shapes recur: a bounded memo keyed by a session's inputs, oldest entries dropped first
(:func:`remember`), and the value derived from the last object asked about, compared by identity
(:class:`LastOf`: the cache hands an unchanged table or array to the next snapshot). Both hold what
their keys name by identity, so an ``id`` in a key cannot be reused while its entry lives.
"""

from __future__ import annotations

from typing import Callable, Generic, TypeVar

K = TypeVar("K")
T = TypeVar("T")
V = TypeVar("V")


def remember(memo: dict[K, V], key: K, value: V, limit: int) -> V:
    """Keep ``value`` under ``key``, the oldest entries dropped first so at most ``limit`` stay."""
    while len(memo) >= limit:
        memo.pop(next(iter(memo)))
    memo[key] = value
    return value


class LastOf(Generic[T, V]):
    """The value derived from the last object asked about, while the same object (``is``) is asked
    again; the object is held, so its identity stays its own."""

    __slots__ = ("_last",)

    def __init__(self) -> None:
        self._last: tuple[T, V] | None = None

    def get(self, obj: T, derive: Callable[[T], V]) -> V:
        last = self._last
        if last is not None and last[0] is obj:
            return last[1]
        value = derive(obj)
        self._last = (obj, value)
        return value
