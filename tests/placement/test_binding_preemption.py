"""Binding preemption victims, as Karmada's binding-priority-and-preemption proposal picks them."""

from __future__ import annotations

import pytest

from federation.placement.binding_preemption import ClusterRoom, Running, choose, victims_on

G = "nvidia.com/gpu"


def room(name: str, free: float, *running: tuple[str, int, float]) -> ClusterRoom:
    return ClusterRoom(name, {G: free}, [Running(key, prio, {G: use}) for key, prio, use in running])


# the proposal's worked example: capacity 10, all used; pending priority 10 needs 5
EXAMPLE = room("m1", 0, ("p0", 0, 1), ("p1", 1, 2), ("p2", 2, 5), ("p3", 3, 2))

VICTIM_CASES = [
    ("the proposal's worked example: only the priority-2 binding", EXAMPLE, 5, 10, ("p2",)),
    ("fits already: no victims", room("m1", 6, ("a", 0, 4)), 5, 10, ()),
    ("equal or higher priority is never a victim", room("m1", 0, ("a", 10, 8), ("b", 11, 8)), 5, 10, None),
    ("several needed: the lowest accumulated, extra ones reprieved",
     room("m1", 0, ("a", 0, 2), ("b", 1, 2), ("c", 2, 3), ("d", 3, 3)), 5, 10, ("a", "c")),
    ("not enough even with every candidate", room("m1", 0, ("a", 0, 1), ("b", 1, 1)), 5, 10, None),
    ("free capacity counts towards the gap", room("m1", 3, ("a", 0, 1), ("b", 1, 2)), 5, 10, ("b",)),
    ("a binding requesting nothing frees nothing", room("m1", 0, ("empty", 0, 0), ("b", 1, 5)), 5, 10, ("b",)),
]


@pytest.mark.parametrize(("cluster", "need", "priority", "expected"), [c[1:] for c in VICTIM_CASES],
                         ids=[c[0] for c in VICTIM_CASES])
def test_victims(cluster: ClusterRoom, need: float, priority: int, expected: tuple[str, ...] | None) -> None:
    got = victims_on(cluster, {G: need}, priority)
    assert (None if got is None else tuple(v.key for v in got)) == expected


CLUSTER_CASES = [
    ("the worked example on its own", [EXAMPLE], ("m1", ("p2",))),
    ("fewest victims wins over lower priorities",
     [room("two", 0, ("a", 0, 3), ("b", 0, 3)), room("one", 0, ("c", 5, 8))], ("one", ("c",))),
    ("same count: the lower victim priority",
     [room("x", 0, ("hi", 7, 8)), room("y", 0, ("lo", 2, 8))], ("y", ("lo",))),
    ("a tie is broken by the cluster name", [room("b", 0, ("v1", 1, 8)), room("a", 0, ("v2", 1, 8))],
     ("a", ("v2",))),
    ("a cluster that fits already means no preemption", [room("busy", 0, ("v", 0, 8)), room("idle", 8)], None),
    ("nothing helps anywhere", [room("a", 0, ("v", 20, 8))], None),
]


@pytest.mark.parametrize(("rooms", "expected"), [c[1:] for c in CLUSTER_CASES], ids=[c[0] for c in CLUSTER_CASES])
def test_cluster_choice(rooms: list[ClusterRoom], expected: tuple[str, tuple[str, ...]] | None) -> None:
    got = choose(rooms, {G: 5}, 10)
    assert (None if got is None else (got.cluster, got.victims)) == expected
