"""Karmada's dividers, table-driven (tests/data/placement/strategies.yaml)."""

from __future__ import annotations

import pytest
from placement_builders import EVEN_UID, ODD_UID, PLACEMENT, load

from federation.placement.strategies import DIVIDERS, DivideInput, Unschedulable
from federation.placement.webster import fnv1a_32, webster

CASES = load(PLACEMENT / "strategies.yaml")[0]
UIDS = {None: "", "EVEN": EVEN_UID, "ODD": ODD_UID}


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_strategy_table(case: dict) -> None:
    candidates = case.get("candidates") or {n: 0 for n in case.get("votes", {})}
    inp = DivideInput(
        replicas=case["replicas"],
        uid=UIDS[case.get("uid")],
        candidates=tuple(candidates),
        allocatable=candidates,
        scheduled=tuple((n, r) for n, r in case.get("scheduled", [])),
        fresh=case.get("fresh", False),
        votes=case.get("votes", {}),
    )
    divider = DIVIDERS[case["strategy"]]
    if "error" in case:
        with pytest.raises(Unschedulable, match=case["error"]):
            divider(inp)
        return
    assert divider(inp) == case["expect"]


def test_reference_uids_have_the_documented_parity() -> None:
    assert fnv1a_32(EVEN_UID) % 2 == 0
    assert fnv1a_32(ODD_UID) % 2 == 1
    assert fnv1a_32("") == 0x811C9DC5


@pytest.mark.parametrize("votes", [{"a": 3, "b": 2, "c": 1}, {"a": 20, "b": 12, "c": 6}, {"x": 1, "y": 1, "z": 7}])
@pytest.mark.parametrize("uid", ["", EVEN_UID, ODD_UID])
def test_webster_is_house_monotone(votes: dict[str, int], uid: str) -> None:
    previous = webster(0, votes, uid)
    for seats in range(1, 40):
        current = webster(seats, votes, uid)
        grown = [n for n in votes if current[n] != previous[n]]
        assert len(grown) == 1 and current[grown[0]] == previous[grown[0]] + 1
        previous = current


def test_webster_output_is_sorted_and_keeps_zero_seat_parties() -> None:
    result = webster(1, {"b": 1, "a": 5, "c": 0}, "", initial={"d": 2})
    assert list(result) == ["a", "b", "c", "d"]
    assert result == {"a": 1, "b": 0, "c": 0, "d": 2}
