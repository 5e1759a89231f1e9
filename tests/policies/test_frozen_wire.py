"""``frozen_wire``: the key the status-model memos are kept by. Two wire values share a key only
when a validation could not tell them apart: equal, with the same scalar types, the same kinds of
containers and the same dict order."""

from __future__ import annotations

import random
from typing import Any

import pytest

from policies.wire_objects import copy_wire, frozen_wire


def _value(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.random()
    if depth < 3 and roll < 0.3:
        return {rng.choice("abc"): _value(rng, depth + 1) for _ in range(rng.randint(0, 3))}
    if depth < 3 and roll < 0.45:
        return [_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return rng.choice([None, True, False, 0, 1, 1.0, 0.0, "", "1", "x"])


def _same(a: Any, b: Any) -> bool:
    """Equal with the same types all the way down, dicts in the same order."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def test_keys_are_equal_exactly_when_the_values_are_alike() -> None:
    rng = random.Random(11)
    values = [_value(rng) for _ in range(600)]
    for a, b in zip(values, values[1:] + values[:1], strict=True):
        assert (frozen_wire(a) == frozen_wire(b)) == _same(a, b)
        assert frozen_wire(a) == frozen_wire(copy_wire(a))
        hash(frozen_wire(a))


@pytest.mark.parametrize(("a", "b"), [
    (1, 1.0), (1, True), (0, False), ("1", 1), ([], {}), ([1], (1,)),
    ({"a": 1, "b": 2}, {"b": 2, "a": 1}), ({"a": [1]}, {"a": [1.0]}),
])
def test_values_a_validation_could_tell_apart_have_other_keys(a: Any, b: Any) -> None:
    assert frozen_wire(a) != frozen_wire(b)


def test_anything_else_unhashable_is_refused() -> None:
    with pytest.raises(TypeError):
        frozen_wire({"a": {1, 2}})


def test_kept_by_content_makes_once_per_content_and_keeps_none_but_not_errors() -> None:
    from policies.lru import LRU
    from policies.wire_objects import kept_by_content

    made: list[object] = []

    def make(value: object) -> object:
        made.append(value)
        if value == {"bad": True}:
            raise ValueError("refused")
        return None if value == {} else {"model of": value}

    memo: LRU[object, object] = LRU(8)
    first = kept_by_content(memo, {"phase": "Pending"}, make)
    assert kept_by_content(memo, {"phase": "Pending"}, make) is first and len(made) == 1
    assert kept_by_content(memo, {"phase": "Pending", "n": 1.0}, make) is not first  # 1.0 is not 1: another key
    assert kept_by_content(memo, {}, make) is None and kept_by_content(memo, {}, make) is None
    assert len(made) == 3  # the kept None answered the second ask
    for _ in range(2):  # an error is raised every time, never kept
        with pytest.raises(ValueError):
            kept_by_content(memo, {"bad": True}, make)
    assert len(made) == 5
    kept_by_content(memo, {"x": {1, 2}}, make)  # not wire data (a set: no frozen form): made every time
    kept_by_content(memo, {"x": {1, 2}}, make)
    assert len(made) == 7
