"""The pure cores' small memos (framework/memo.py): a bounded memo drops its oldest entries first, and
a value kept for the last object is answered only for that very object."""

from __future__ import annotations

import numpy as np

from member_agent.scheduler.framework.memo import LastOf, remember


def test_remember_keeps_at_most_limit_entries_dropping_the_oldest_first() -> None:
    memo: dict[str, int] = {}
    for i, key in enumerate("abcde"):
        assert remember(memo, key, i, 3) == i
    assert list(memo.items()) == [("c", 2), ("d", 3), ("e", 4)]
    remember(memo, "c", 9, 3)  # the oldest entry (here "c" itself) goes, then the key is stored anew, newest
    assert list(memo.items()) == [("d", 3), ("e", 4), ("c", 9)]


def test_last_of_answers_only_for_the_same_object() -> None:
    calls: list[int] = []

    def derive(values: np.ndarray) -> float:
        calls.append(1)
        return float(values.sum())

    last: LastOf[np.ndarray, float] = LastOf()
    first = np.array([1.0, 2.0])
    assert last.get(first, derive) == 3.0
    assert last.get(first, derive) == 3.0 and len(calls) == 1  # the same object: derived once
    equal = first.copy()  # equal but another object: derived again
    assert last.get(equal, derive) == 3.0 and len(calls) == 2
    assert last.get(first, derive) == 3.0 and len(calls) == 3  # only the last object is kept
