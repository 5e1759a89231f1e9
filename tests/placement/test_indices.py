"""Global task indices kept across re-placements (tests/data/placement/index-cases.yaml)."""

from __future__ import annotations

from typing import Any

import pytest
from placement_builders import PLACEMENT, load

from federation.placement.indices import assign, from_ranges, to_ranges

CASES = load(PLACEMENT / "index-cases.yaml")[0]


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_index_case(case: dict[str, Any]) -> None:
    got = assign(case["order"], case["counts"], case["total"], case.get("previous"))
    assert got == case["expect"]
    every = sorted(i for indices in got.values() for i in indices)
    assert every == list(range(sum(case["counts"].values()))), "indices are unique and dense"


def test_ranges_round_trip() -> None:
    assert to_ranges([5, 6, 7, 14, 15]) == ((5, 8), (14, 16))
    assert from_ranges([[5, 8], [14, 16]]) == [5, 6, 7, 14, 15]
