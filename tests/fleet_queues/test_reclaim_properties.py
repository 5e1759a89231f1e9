"""Hypothesis properties of cross-cluster reclaim over random fleets, queues and placed gangs.

* A guarantee is never reclaimed: no victim's queue ends below its guarantee on any resource.
* No gang is evicted partially: a victim leaves every cluster it is on, and the reclaimer fits only
  in the room its victims free whole.
* A reclaim never evicts from more clusters than needed: a brute force over every set of placed
  gangs the queue rules allow finds none that makes room touching fewer clusters; and when the plan
  names no victims, no such set exists at all.
"""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from federation.fleet_queues.reclaim import Placed, Reclaimer, _fits, _valid, plan_reclaim
from tests.fleet_queues.reclaim_builders import ledger

GPU = "nvidia.com/gpu"
MILLI = 1000.0
CLUSTERS = ("c0", "c1", "c2")
QUEUES = ("q0", "q1", "q2")
OTHERS = ("q0", "q1", "q1", "q1", "q2", "q2", "q2")  # the reclaimer's queue q0 holds little


@st.composite
def fleets(draw: Any) -> tuple[list[dict[str, Any]], dict[str, float], list[Placed], Reclaimer, dict[str, dict[str, float]]]:
    clusters = CLUSTERS[:draw(st.integers(2, 3))]
    room = {c: draw(st.sampled_from([8, 16])) * MILLI for c in clusters}
    queues = []
    for name in QUEUES:
        spec: dict[str, Any] = {"weight": draw(st.integers(1, 3)) + 2 * (name == "q0"), "reclaimable": draw(st.booleans() | st.just(True))}
        guarantee = draw(st.sampled_from([0, 0, 4, 8, 12]))
        if guarantee:
            spec["guarantee"] = {"resource": {GPU: str(guarantee)}}
        queues.append({"metadata": {"name": name}, "spec": spec})
    gangs: list[Placed] = []
    for index in range(draw(st.integers(3, 8))):
        spans = draw(st.lists(st.sampled_from(clusters), min_size=1, max_size=2, unique=True))
        per = draw(st.sampled_from([4, 8])) * MILLI
        usage = {}
        for cluster in spans:
            if room[cluster] >= per:
                room[cluster] -= per
                usage[cluster] = {GPU: per}
        if not usage:
            continue
        gangs.append(Placed(("ns", f"g{index}"), draw(st.sampled_from(OTHERS)), draw(st.integers(0, 3)),
                            {GPU: per * len(usage)}, usage, draw(st.booleans() | st.just(True)), float(index)))
    for cluster in clusters:  # mostly a full fleet: the rest of a cluster is one more gang
        if room[cluster] > 0 and draw(st.integers(0, 3)) > 0:
            gangs.append(Placed(("ns", f"fill-{cluster}"), draw(st.sampled_from(OTHERS)), draw(st.integers(0, 3)),
                                {GPU: room[cluster]}, {cluster: {GPU: room[cluster]}}, True, 10.0))
            room[cluster] = 0
    pods = ((({GPU: draw(st.sampled_from([4, 8])) * MILLI}), draw(st.integers(1, 2))),)
    waiting = Reclaimer(("ns", "hungry"), "q0", pods, draw(st.integers(0, 3)))
    total = {GPU: sum(room.values()) + sum(g.request[GPU] for g in gangs)}
    return queues, total, gangs, waiting, {c: {GPU: v} for c, v in room.items()}


def _touched(victims: Any) -> set[str]:
    return set().union(*(v.clusters for v in victims)) if victims else set()


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fleets())
def test_reclaim_keeps_guarantees_whole_gangs_and_fewest_clusters(case: Any) -> None:
    queues, total, gangs, waiting, free = case
    fleet = ledger(queues, {GPU: str(total[GPU] / MILLI)}, gangs, waiting)
    attrs = fleet.attrs()
    plan = plan_reclaim(attrs, waiting, gangs, free)
    victims = [e.victim for e in plan.evictions]
    by_key = {g.key: g for g in gangs}

    left: dict[str, float] = {q: attrs[q].allocated.get(GPU, 0.0) for q in attrs}
    for victim in victims:
        assert victim.queue != waiting.queue and victim.preemptable and attrs[victim.queue].queue.reclaimable
        left[victim.queue] -= victim.request[GPU]
    for queue in {v.queue for v in victims}:  # a guarantee is never reclaimed
        assert left[queue] >= attrs[queue].guarantee.get(GPU, 0.0) - 1e-6, plan

    assert len(set(plan.victims)) == len(victims) and all(by_key[v.key] is v for v in victims)
    assert set(plan.clusters) == _touched(victims)  # every cluster a victim is on
    if victims:  # it fits in what whole gangs free, and would not with any victim kept back whole
        rooms = [_room(free[c], victims, c) for c in sorted(free)]
        assert _fits(waiting.pods, rooms)

    allowed = [g for g in gangs if g.queue != waiting.queue and g.preemptable and attrs[g.queue].queue.reclaimable]
    fewest = None
    for count in range(1, len(allowed) + 1):
        for subset in itertools.combinations(sorted(allowed, key=_order), count):
            if _valid(attrs, subset) and _fits(waiting.pods, [_room(free[c], subset, c) for c in sorted(free)]):
                size = len(_touched(subset))
                fewest = size if fewest is None else min(fewest, size)
    if victims:
        assert fewest is not None and len(_touched(victims)) == fewest, plan
    elif not plan.reason.startswith(("queue ", "the fleet's free room")):
        assert fewest is None, plan.reason


def _order(victim: Placed) -> tuple[int, int, float, tuple[str, str]]:
    return (victim.priority, len(victim.clusters), -victim.created, victim.key)


def _room(free: dict[str, float], victims: Any, cluster: str) -> dict[str, float]:
    room = dict(free)
    for victim in victims:
        for name, amount in victim.usage.get(cluster, {}).items():
            room[name] = room.get(name, 0.0) + amount
    return room
