"""Webster / Sainte-Laguë seat allocation with Karmada's UID-seeded tie-break (Karmada >= 1.16).

Each round gives one seat to the party with the largest ``votes / (2 * seats + 1)`` (float64).
Exactly equal priorities go to the party with fewer seats, then by name: ascending, or
descending when the 32-bit FNV-1a hash of the workload UID is odd. An empty UID means
ascending. The order is total, so a heap keyed ``(-priority, seats, name rank)`` reproduces
the round-by-round scan in ``O(S log n)``.
"""

from __future__ import annotations

import heapq
from functools import lru_cache
from typing import Mapping

_FNV_OFFSET = 0x811C9DC5
_FNV_PRIME = 0x01000193


def fnv1a_32(text: str) -> int:
    value = _FNV_OFFSET
    for byte in text.encode():
        value = ((value ^ byte) * _FNV_PRIME) & 0xFFFFFFFF
    return value


@lru_cache(maxsize=4096)
def names_descending(uid: str) -> bool:
    """True when ties go to the lexicographically larger name (odd FNV-1a of the UID)."""
    return bool(uid) and fnv1a_32(uid) % 2 == 1


def webster(
    seats: int,
    votes: Mapping[str, float],
    uid: str = "",
    initial: Mapping[str, int] | None = None,
) -> dict[str, int]:
    """Hand ``seats`` new seats to the parties, on top of ``initial``; result sorted by name.

    Parties are the union of ``votes`` and ``initial`` (a party with seats but no votes has
    0 votes). Zero-seat parties are included, as in Karmada's output.
    """
    initial = initial or {}
    held = {p: int(n) for p, n in initial.items()}
    if seats > 0:
        # A party without votes has priority 0 and can only win once every priority is 0,
        # i.e. when no party has votes; otherwise it never enters the heap. Ranks among the
        # contenders order exactly as ranks among all parties would.
        contenders = sorted(p for p, v in votes.items() if v > 0) or sorted(set(votes) | set(initial))
        descending = names_descending(uid)
        if len(contenders) > seats and not any(held.get(p, 0) for p in contenders):
            # From zero seats only the best ``seats`` parties by (votes, tie order) can win:
            # an outsider beats a better party only once that party holds a seat, so all of
            # them would have to hold one first.
            best = sorted((-float(votes.get(p, 0.0)), -i if descending else i) for i, p in enumerate(contenders))
            keep = {abs(r) for _, r in best[:seats]}
            contenders = [p for i, p in enumerate(contenders) if i in keep]  # still in name order
        heap = []
        for i, p in enumerate(contenders):
            s = held.get(p, 0)
            heap.append((-float(votes.get(p, 0.0)) / (2 * s + 1), s, -i if descending else i, p))
        heapq.heapify(heap)
        for _ in range(seats):
            _, s, r, party = heapq.heappop(heap)
            s += 1
            held[party] = s
            heapq.heappush(heap, (-float(votes.get(party, 0.0)) / (2 * s + 1), s, r, party))
    return {p: held.get(p, 0) for p in sorted(set(votes) | set(initial))}


def allocate_by_weight(
    seats: int,
    votes: Mapping[str, float],
    uid: str = "",
    initial: Mapping[str, int] | None = None,
) -> dict[str, int]:
    """Karmada's dispenser around :func:`webster`.

    Zero seats with a non-empty initial result, or zero total votes, return the initial
    result unchanged.
    """
    initial = dict(initial or {})
    if seats == 0 and initial:
        return dict(sorted(initial.items()))
    if sum(votes.values()) == 0:
        return dict(sorted(initial.items()))
    return webster(seats, votes, uid, initial)
