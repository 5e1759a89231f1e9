"""Reclaim across clusters: a queue below its fleet-wide deserved share takes room back (pure, synchronous).

The situation: a Job its queue admitted (its queue is below its deserved share with the Job counted)
fits on no cluster, because the fleet is full. Volcano's ``reclaim``/``gangreclaim`` rules, held
fleet-wide and in gangs:

* **the reclaimer's queue** must be *Preemptive*: ``allocated + request <= deserved`` on every
  dimension the Job requests (its own request not counted twice when the ledger already holds it);
* **victims** are whole placed gangs (a gang leaves every cluster it is on, so no gang is ever cut
  below its ``minAvailable``) of *other* queues whose ``reclaimable`` is true, not marked
  ``volcano.sh/preemptable: "false"``;
* taken, queue by queue in victim order, only while the victim's queue is above its deserved
  share (proportion's ``Reclaimable`` vote: a victim's queue's working ``allocated`` is not
  ``<= deserved``), and never so that a queue drops below its ``guarantee`` on any dimension;
* from the **fewest clusters** (every cluster a victim is on counts, since it leaves them all):
  sets of clusters to evict from are tried by size, one cluster first; within the smallest size
  that works, the victims with the **lowest** highest priority, then the fewest victims, then the
  lowest sum of priorities, then the least freed (nothing more than needed), then names;
* the room is judged in resource totals per cluster, pod by pod: the reclaimer's pods must pack,
  first-fit by totals, into every cluster's free room plus what the victims free there (placement
  then divides the Job exactly, on node shapes, once the victims are gone).

With few candidates in a cluster set (``EXACT_LIMIT``) every subset is tried, so the answer is the
best one; beyond that victims are accumulated in order (lowest priority first), skipping any the
rules refuse, then every one not needed after all is reprieved (highest priority first).

:func:`may_preempt` applies the same queue rules to binding preemption by priority: a victim of
another queue is allowed only where reclaim would allow it.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from federation.fleet_queues.accounting import QueueAttr, share_of
from federation.fleet_queues.model import INF
from policies.resources import TOLERANCE

Key = tuple[str, str]
Vec = Mapping[str, float]
#: candidates in one cluster set up to which every subset is tried (2^12 subsets)
EXACT_LIMIT = 12
#: cluster sets tried per size before settling for the first that works (a huge fleet stays fast)
MAX_SETS = 2000


@dataclass(frozen=True)
class Placed:
    """A placed gang: what it holds on each cluster, its queue, priority and whether it may be evicted."""

    key: Key
    queue: str
    priority: int
    request: Vec
    usage: Mapping[str, Vec]
    preemptable: bool = True
    created: float = 0.0

    @property
    def clusters(self) -> frozenset[str]:
        return frozenset(c for c, use in self.usage.items() if any(v > 0 for v in use.values()))


@dataclass(frozen=True)
class Reclaimer:
    """The waiting Job: its queue, its pods (request, count) and whether the ledger already counts it."""

    key: Key
    queue: str
    pods: tuple[tuple[Vec, int], ...]
    priority: int = 0
    counted: bool = True

    @property
    def request(self) -> dict[str, float]:
        total: dict[str, float] = {}
        for pod, count in self.pods:
            for name, amount in pod.items():
                total[name] = total.get(name, 0.0) + amount * count
        return total


@dataclass(frozen=True)
class Eviction:
    victim: Placed
    message: str


@dataclass
class ReclaimPlan:
    """The victims (possibly none: ``reason`` says why), the clusters they free, both queues' shares."""

    reclaimer: Key
    evictions: tuple[Eviction, ...] = ()
    clusters: tuple[str, ...] = ()
    reason: str = ""
    shares: dict[str, tuple[float, float]] = field(default_factory=dict)

    @property
    def victims(self) -> tuple[Key, ...]:
        return tuple(e.victim.key for e in self.evictions)


def plan_reclaim(attrs: Mapping[str, QueueAttr], reclaimer: Reclaimer, placed: Sequence[Placed],
                 free: Mapping[str, Vec]) -> ReclaimPlan:
    """The victims whose eviction makes room for ``reclaimer`` on the fewest clusters of ``free``."""
    own = attrs.get(reclaimer.queue)
    if own is None:
        return ReclaimPlan(reclaimer.key, reason=f"queue {reclaimer.queue} is not known")
    request = reclaimer.request
    base = _without(own.allocated, request) if reclaimer.counted else dict(own.allocated)
    short = [n for n, v in request.items() if v > 0 and n in own.deserved and base.get(n, 0.0) + v > own.deserved[n]
             + TOLERANCE]
    if short:
        n = short[0]
        return ReclaimPlan(reclaimer.key, reason=(
            f"queue {reclaimer.queue} would pass its deserved share: {n} {base.get(n, 0.0):g} allocated + "
            f"{request[n]:g} asked > {own.deserved[n]:g} deserved"))
    if _fits(reclaimer.pods, [free.get(c, {}) for c in sorted(free)]):
        return ReclaimPlan(reclaimer.key, reason="the fleet's free room holds it already (placement decides)")
    candidates = [p for p in placed if _candidate(p, reclaimer, attrs, free)]
    candidates.sort(key=_victim_order)
    for size in range(1, len(free) + 1):
        best = _best_of_size(size, attrs, reclaimer, candidates, free)
        if best is not None:
            return _plan(attrs, reclaimer, base, best)
    return ReclaimPlan(reclaimer.key, reason=_nobody(reclaimer, attrs, placed))


def may_preempt(attrs: Mapping[str, QueueAttr], preemptor_queue: str, victims: Iterable[Placed]) -> bool:
    """Binding preemption by priority, held to the queues: a victim of the preemptor's own queue goes by
    priority alone (Volcano's ``preempt``); one of another queue only as reclaim would take it."""
    chosen = [v for v in victims if v.queue != preemptor_queue]
    return all(v.preemptable for v in victims) and (not chosen or _valid(attrs, chosen))


def _candidate(victim: Placed, reclaimer: Reclaimer, attrs: Mapping[str, QueueAttr], free: Mapping[str, Vec]) -> bool:
    attr = attrs.get(victim.queue)
    return (victim.queue != reclaimer.queue and victim.key != reclaimer.key and victim.preemptable
            and attr is not None and attr.queue.reclaimable and bool(victim.clusters)
            and victim.clusters <= set(free) and _valid(attrs, [victim]))


def _victim_order(victim: Placed) -> tuple[int, int, float, Key]:
    """Lowest priority first, then the gang on fewer clusters, then the newest."""
    return (victim.priority, len(victim.clusters), -victim.created, victim.key)


def _valid(attrs: Mapping[str, QueueAttr], victims: Sequence[Placed]) -> bool:
    """Each victim, in order, leaves a queue still above its deserved share; no queue ends below its guarantee."""
    working: dict[str, dict[str, float]] = {}
    for victim in victims:
        attr = attrs[victim.queue]
        allocated = working.setdefault(victim.queue, dict(attr.allocated))
        if not _above_deserved(allocated, attr.deserved):
            return False
        for name, amount in victim.request.items():
            allocated[name] = allocated.get(name, 0.0) - amount
        if any(allocated.get(n, 0.0) + TOLERANCE < g for n, g in attr.guarantee.items() if g > 0):
            return False
    return True


def _above_deserved(allocated: Vec, deserved: Vec) -> bool:
    """Volcano's ``!allocated.LessEqual(deserved)``: above on some dimension the queue holds."""
    return any(amount > deserved.get(n, 0.0) + TOLERANCE for n, amount in allocated.items()
               if amount > 0 and deserved.get(n, INF) < INF)


def _best_of_size(size: int, attrs: Mapping[str, QueueAttr], reclaimer: Reclaimer, candidates: Sequence[Placed],
                  free: Mapping[str, Vec]) -> tuple[tuple[str, ...], tuple[Placed, ...]] | None:
    best: tuple[tuple[Any, ...], tuple[str, ...], tuple[Placed, ...]] | None = None
    for tried, clusters in enumerate(itertools.combinations(sorted(free), size)):
        if tried >= MAX_SETS and best is not None:
            break
        inside = [c for c in candidates if c.clusters <= set(clusters)]
        victims = _victims_in(attrs, reclaimer, inside, free)
        if victims is None or not victims or _touched(victims) != set(clusters):
            continue  # a set the victims do not all touch is found at a smaller size
        cost = (*_cost(victims), clusters)
        if best is None or cost < best[0]:
            best = (cost, clusters, victims)
    return None if best is None else (best[1], best[2])


def _victims_in(attrs: Mapping[str, QueueAttr], reclaimer: Reclaimer, inside: Sequence[Placed], free: Mapping[str, Vec]) -> tuple[Placed, ...] | None:
    def fits(victims: Sequence[Placed]) -> bool:
        return _fits(reclaimer.pods, [_room(free[c], victims, c) for c in sorted(free)])

    if len(inside) <= EXACT_LIMIT:
        best: tuple[tuple[Any, ...], tuple[Placed, ...]] | None = None
        for count in range(1, len(inside) + 1):
            for subset in itertools.combinations(inside, count):
                if _valid(attrs, subset) and fits(subset):
                    cost = _cost(subset)
                    if best is None or cost < best[0]:
                        best = (cost, subset)
        return None if best is None else best[1]
    chosen: list[Placed] = []
    for victim in inside:  # lowest priority first, skipping what the queue rules refuse
        if _valid(attrs, chosen + [victim]):
            chosen.append(victim)
            if fits(chosen):
                break
    else:
        return None
    for victim in sorted(chosen, key=lambda v: -v.priority):  # reprieve what is not needed after all
        rest = [v for v in chosen if v is not victim]
        if rest and fits(rest) and _valid(attrs, rest):
            chosen = rest
    return tuple(chosen)


def _cost(victims: Sequence[Placed]) -> tuple[Any, ...]:
    """Lowest highest priority, fewest victims, lowest sum of priorities, least freed, then victim order."""
    priorities = [v.priority for v in victims]
    return (max(priorities), len(victims), sum(priorities), _freed(victims), tuple(_victim_order(v) for v in victims))


def _room(free: Vec, victims: Sequence[Placed], cluster: str) -> dict[str, float]:
    room = dict(free)
    for victim in victims:
        for name, amount in victim.usage.get(cluster, {}).items():
            room[name] = room.get(name, 0.0) + amount
    return room


def _fits(pods: Sequence[tuple[Vec, int]], rooms: Sequence[Vec]) -> bool:
    """The pods pack into the rooms, largest first, first fit by totals."""
    left = [dict(r) for r in rooms]
    for pod, count in sorted(pods, key=lambda p: -sum(p[0].values())):
        for _ in range(count):
            for room in left:
                if all(room.get(n, 0.0) + TOLERANCE >= v for n, v in pod.items() if v > 0):
                    for n, v in pod.items():
                        room[n] = room.get(n, 0.0) - v
                    break
            else:
                return False
    return True


def _touched(victims: Iterable[Placed]) -> set[str]:
    out: set[str] = set()
    for victim in victims:
        out |= victim.clusters
    return out


def _freed(victims: Iterable[Placed]) -> float:
    return sum(sum(v.request.values()) for v in victims)


def _without(allocated: Vec, request: Vec) -> dict[str, float]:
    return {n: allocated.get(n, 0.0) - request.get(n, 0.0) for n in set(allocated) | set(request)}


def _plan(attrs: Mapping[str, QueueAttr], reclaimer: Reclaimer, base: Vec,
          chosen: tuple[tuple[str, ...], tuple[Placed, ...]]) -> ReclaimPlan:
    clusters, victims = chosen
    own = attrs[reclaimer.queue]
    after = dict(base)
    for name, amount in reclaimer.request.items():
        after[name] = after.get(name, 0.0) + amount
    shares = {reclaimer.queue: (share_of(base, own.deserved, 0.0), share_of(after, own.deserved, 0.0))}
    working: dict[str, dict[str, float]] = {}
    evictions = []
    for victim in victims:
        attr = attrs[victim.queue]
        allocated = working.setdefault(victim.queue, dict(attr.allocated))
        before = share_of(allocated, attr.deserved, 0.0)
        for name, amount in victim.request.items():
            allocated[name] = allocated.get(name, 0.0) - amount
        now = share_of(allocated, attr.deserved, 0.0)
        shares[victim.queue] = (shares.get(victim.queue, (before, now))[0], now)
        evictions.append(Eviction(victim, _message(reclaimer, victim, shares[reclaimer.queue], (before, now))))
    return ReclaimPlan(reclaimer.key, tuple(evictions), clusters, shares=shares)


def _message(reclaimer: Reclaimer, victim: Placed, own: tuple[float, float], theirs: tuple[float, float]) -> str:
    """``reclaimed by ns/b-1 of queue team-b (share 0.00 → 0.50 of its deserved) from queue team-a
    (share 1.50 → 1.00 of its deserved) on cluster-a``."""
    by = "/".join(reclaimer.key)
    where = ", ".join(sorted(victim.clusters))
    return (f"{'/'.join(victim.key)} reclaimed by {by} of queue {reclaimer.queue} (share {own[0]:.2f} → "
            f"{own[1]:.2f} of its deserved) from queue {victim.queue} (share {theirs[0]:.2f} → {theirs[1]:.2f} of "
            f"its deserved) on {where}")


def _nobody(reclaimer: Reclaimer, attrs: Mapping[str, QueueAttr], placed: Sequence[Placed]) -> str:
    over = sorted(q for q, a in attrs.items() if q != reclaimer.queue and a.queue.reclaimable
                  and _above_deserved(a.allocated, a.deserved))
    if not over:
        return "no reclaimable queue is above its deserved share"
    return (f"no set of whole gangs of {', '.join(over)} that reclaim may take (deserved, guarantee, "
            "preemptable) makes room")
