"""Binding preemption (Karmada's binding-priority-and-preemption proposal): pure, no I/O.

When a binding whose ``preemptionPolicy`` is ``PreemptLowerPriority`` fits on no cluster, the
scheduler may clear the placement of lower-priority bindings to make room. The proposal's order:

* only bindings of *strictly lower* priority with a non-empty resource request are candidates;
* on each cluster, the victims are the **fewest** bindings whose removal makes room, and among
  those the **lowest-priority** ones: the lowest-priority single binding that frees enough on its
  own; else bindings accumulated from the lowest priority up until they free enough, then every
  one of them that is not needed after all is reprieved (highest priority first);
* the cluster chosen is the one that **needs the least preemption**: fewest victims, then the
  lowest highest-victim priority, then the lowest sum of victim priorities, then the name;
* a cluster where no set of candidates makes room is not chosen; no cluster: no preemption.

The proposal's worked example: capacity 10, all used, a pending binding of priority 10 needing 5,
running bindings (priority, request) (0, 1), (1, 2), (2, 5), (3, 2): only the priority-2 binding
is preempted. "Room" is counted in resource totals per cluster (a gang needing several nodes is
then placed by the ordinary core once the victims are gone; if the freed capacity is fragmented
it waits as any unschedulable job does). A victim leaves every cluster it was on (a gang leaves as
a unit); that is the caller's business, this module only names it.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

EPSILON = 1e-9


@dataclass(frozen=True)
class Running:
    """A placed binding's share on one cluster."""

    key: Hashable
    priority: int
    #: what it occupies on this cluster, per resource
    usage: Mapping[str, float]


@dataclass(frozen=True)
class ClusterRoom:
    name: str
    #: free capacity per resource as the federation sees it (reports minus assumed shares)
    free: Mapping[str, float]
    running: Sequence[Running]


@dataclass(frozen=True)
class Preemption:
    cluster: str
    victims: tuple[Hashable, ...]
    priorities: tuple[int, ...]

    def cost(self) -> tuple[int, int, int, str]:
        return (len(self.victims), max(self.priorities, default=0), sum(self.priorities), self.cluster)


def gap(need: Mapping[str, float], free: Mapping[str, float]) -> dict[str, float]:
    """What is missing per resource (only the resources short of ``need``)."""
    return {r: amount - free.get(r, 0.0) for r, amount in need.items() if amount - free.get(r, 0.0) > EPSILON}


def _covers(freed: Mapping[str, float], missing: Mapping[str, float]) -> bool:
    return all(freed.get(r, 0.0) + EPSILON >= amount for r, amount in missing.items())


def _total(bindings: Sequence[Running]) -> dict[str, float]:
    out: dict[str, float] = {}
    for b in bindings:
        for r, amount in b.usage.items():
            out[r] = out.get(r, 0.0) + amount
    return out


def victims_on(room: ClusterRoom, need: Mapping[str, float], priority: int) -> tuple[Running, ...] | None:
    """The victims on one cluster (``()``: it fits without preemption; None: preemption cannot help)."""
    missing = gap(need, room.free)
    if not missing:
        return ()
    candidates = sorted((b for b in room.running if b.priority < priority and any(v > 0 for v in b.usage.values())),
                        key=lambda b: (b.priority, str(b.key)))
    for single in candidates:  # fewest first: one binding that frees enough alone, the lowest such
        if _covers(single.usage, missing):
            return (single,)
    chosen: list[Running] = []
    for candidate in candidates:  # accumulate from the lowest priority until it makes room
        chosen.append(candidate)
        if _covers(_total(chosen), missing):
            break
    else:
        return None
    for candidate in sorted(chosen, key=lambda b: -b.priority):  # reprieve what is not needed after all
        rest = [b for b in chosen if b is not candidate]
        if _covers(_total(rest), missing):
            chosen = rest
    return tuple(sorted(chosen, key=lambda b: (b.priority, str(b.key))))


def choose(rooms: Sequence[ClusterRoom], need: Mapping[str, float], priority: int) -> Preemption | None:
    """The cluster needing the least preemption and its victims (None: none needed on some cluster,
    or no preemption makes room anywhere)."""
    best: Preemption | None = None
    for room in rooms:
        victims = victims_on(room, need, priority)
        if victims is None:
            continue
        if not victims:
            return None  # it fits there already: placement, not preemption, is the answer
        option = Preemption(room.name, tuple(v.key for v in victims), tuple(v.priority for v in victims))
        if best is None or option.cost() < best.cost():
            best = option
    return best
