"""A priority queue ordered by a session comparator (Volcano's ``util.PriorityQueue``)."""

from __future__ import annotations

import heapq
from typing import Callable, Generic, TypeVar

T = TypeVar("T")


class _Entry(Generic[T]):
    __slots__ = ("item", "less", "seq")

    def __init__(self, item: T, less: Callable[[T, T], int], seq: int) -> None:
        self.item = item
        self.less = less
        self.seq = seq

    def __lt__(self, other: "_Entry[T]") -> bool:
        result = self.less(self.item, other.item)
        if result == 0:
            return self.seq < other.seq
        return result < 0


class PriorityQueue(Generic[T]):
    """``pop`` returns the item that the comparator puts first (negative = first)."""

    def __init__(self, compare: Callable[[T, T], int]) -> None:
        self.compare = compare
        self._heap: list[_Entry[T]] = []
        self._seq = 0

    def push(self, item: T) -> None:
        self._seq += 1
        heapq.heappush(self._heap, _Entry(item, self.compare, self._seq))

    def pop(self) -> T:
        return heapq.heappop(self._heap).item

    def __len__(self) -> int:
        return len(self._heap)

    def __bool__(self) -> bool:
        return bool(self._heap)
