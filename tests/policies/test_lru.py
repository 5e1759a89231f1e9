"""policies/lru.py: the bounded memo drops the least recently used entry, reading counts as use, and a
kept None is told from a missing key."""

from __future__ import annotations

import random

import pytest

from policies.lru import LRU


def test_the_least_recently_used_goes_first_and_a_read_counts_as_use() -> None:
    memo: LRU[str, int] = LRU(2)
    memo.put("a", 1)
    memo.put("b", 2)
    assert memo.get("a") == 1  # "b" is now the least recent
    memo.put("c", 3)
    assert "b" not in memo and memo.get("b") is None
    assert memo.get("a") == 1 and memo.get("c") == 3 and len(memo) == 2


def test_a_rewritten_key_is_the_most_recent() -> None:
    memo: LRU[str, int] = LRU(2)
    memo.put("a", 1)
    memo.put("b", 2)
    memo.put("a", 10)
    memo.put("c", 3)
    assert "b" not in memo and memo.get("a") == 10


def test_a_kept_none_is_held() -> None:
    memo: LRU[str, None] = LRU(4)
    memo.put("none", None)
    assert "none" in memo and "other" not in memo
    assert memo["none"] is None
    with pytest.raises(KeyError):
        memo["other"]
    memo.clear()
    assert len(memo) == 0 and "none" not in memo


def test_it_agrees_with_a_list_model_over_random_uses() -> None:
    rng = random.Random(7)
    memo: LRU[int, int] = LRU(5)
    order: list[int] = []  # least recent first
    values: dict[int, int] = {}
    for _ in range(2000):
        key = rng.randrange(12)
        if rng.random() < 0.5:
            got = memo.get(key)
            assert got == (values[key] if key in order else None)
            if key in order:
                order.remove(key)
                order.append(key)
        else:
            memo.put(key, rng.randrange(100))
            values[key] = memo.get(key)  # type: ignore[assignment]
            if key in order:
                order.remove(key)
            order.append(key)
            del order[:-5]
        assert len(memo) == len(order) and all(k in memo for k in order)
