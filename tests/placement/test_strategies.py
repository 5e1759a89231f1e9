"""Karmada's dividers, table-driven (tests/data/placement/strategies.yaml)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from placement_builders import EVEN_UID, ODD_UID, PLACEMENT, load

from federation.placement.strategies import DIVIDERS, DivideInput, Unschedulable
from federation.placement.webster import fnv1a_32, names_descending, webster

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


def naive_webster(seats: int, votes: dict[str, int], uid: str, initial: dict[str, int]) -> dict[str, int]:
    """Karmada's procedure literally: scan every party each round."""
    parties = sorted(set(votes) | set(initial))
    held = {p: initial.get(p, 0) for p in parties}
    descending = names_descending(uid)
    for _ in range(seats):
        def key(p: str) -> tuple[float, int, int]:
            rank = parties.index(p)
            return (-votes.get(p, 0) / (2 * held[p] + 1), held[p], -rank if descending else rank)
        held[min(parties, key=key)] += 1
    return held


@settings(max_examples=300, deadline=None)
@given(
    seats=st.integers(0, 30),
    votes=st.dictionaries(st.sampled_from("abcdefgh"), st.integers(0, 6), min_size=1, max_size=8),
    initial=st.dictionaries(st.sampled_from("abcdefghij"), st.integers(0, 4), max_size=4),
    uid=st.sampled_from(["", EVEN_UID, ODD_UID]),
)
def test_webster_matches_the_round_by_round_scan(seats: int, votes: dict[str, int],
                                                 initial: dict[str, int], uid: str) -> None:
    if not any(votes.values()) and not initial:
        return
    assert webster(seats, votes, uid, initial) == naive_webster(seats, votes, uid, initial)
