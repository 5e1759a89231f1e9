"""A small least-recently-used map, for the memos that keep answers by their inputs' value.

One home for the bounded memos of the federation's placement and the agent's controllers: a memo
keyed by value (a problem, a wire status, a job's shape) must not grow with every object a
long-running process sees, and the answers most asked for are the recent ones.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Generic, Hashable, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class LRU(Generic[K, V]):
    """At most ``size`` entries; the least recently read or written goes first."""

    __slots__ = ("size", "_items")

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[K, V] = OrderedDict()

    def __getitem__(self, key: K) -> V:
        """The value kept for ``key``, now the most recent; KeyError when none is (a kept None included)."""
        value = self._items[key]
        self._items.move_to_end(key)
        return value

    def get(self, key: K) -> V | None:
        """The value kept for ``key`` (now the most recent), or None."""
        try:
            return self[key]
        except KeyError:
            return None

    def put(self, key: K, value: V) -> None:
        self._items[key] = value
        self._items.move_to_end(key)
        while len(self._items) > self.size:
            self._items.popitem(last=False)

    def clear(self) -> None:
        self._items.clear()

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def __len__(self) -> int:
        return len(self._items)
