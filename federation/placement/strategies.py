"""Step 3, divide: Karmada's replica scheduling strategies (>= 1.16), dispatched by a table.

| placement                                  | strategy      |
|--------------------------------------------|---------------|
| Duplicated (or no replicaScheduling)       | Duplicated    |
| Divided + Aggregated                       | Aggregated    |
| Divided + Weighted + dynamicWeight         | DynamicWeight |
| Divided + Weighted otherwise               | StaticWeight  |

Static weight runs Webster from zero on the rule weights and ignores capacity. Dynamic weight
and Aggregated work in Steady mode (scale-up adds on top of the previous assignment,
scale-down shrinks it proportionally, equal keeps it) unless a reschedule was triggered
(Fresh), and fail with Unschedulable when the summed availability is short.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping

from federation.placement.request import ClusterState, StaticWeight
from federation.placement.selectors import affinity_matches
from federation.placement.webster import allocate_by_weight


class Unschedulable(Exception):
    """Karmada's UnschedulableError: capacity is short; nothing is placed."""


@dataclass(frozen=True)
class DivideInput:
    replicas: int
    uid: str
    #: candidate names in Karmada's order: score desc, availability desc, name asc
    candidates: tuple[str, ...]
    #: AllocatableReplicas per candidate (the estimate, without what the job already holds)
    allocatable: Mapping[str, int] = field(default_factory=dict)
    #: previous assignment on clusters still candidates, in the binding's order
    scheduled: tuple[tuple[str, int], ...] = ()
    fresh: bool = False
    votes: Mapping[str, int] = field(default_factory=dict)  # resolved static weights


Divider = Callable[[DivideInput], dict[str, int]]


def static_votes(candidates: list[ClusterState], rules: tuple[StaticWeight, ...]) -> dict[str, int]:
    """Max matching rule weight per candidate; unmatched dropped; all-zero means all 1.

    Rules naming clusters only (the common form) are looked up by name; the others are
    matched cluster by cluster.
    """
    by_name: dict[str, int] = {}
    general: list[StaticWeight] = []
    for rule in rules:
        t = rule.target
        if t.cluster_names and not t.exclude and t.label_selector is None and not t.field_expressions:
            for name in t.cluster_names:
                by_name[name] = max(by_name.get(name, 0), rule.weight)
        else:
            general.append(rule)
    votes: dict[str, int] = {}
    for cluster in candidates:
        weight = by_name.get(cluster.name, 0)
        for rule in general:
            if rule.weight > weight and affinity_matches(rule.target, cluster):
                weight = rule.weight
        if weight > 0:
            votes[cluster.name] = weight
    if not votes:
        return {c.name: 1 for c in candidates}
    return votes


def _nonzero(result: Mapping[str, int]) -> dict[str, int]:
    return {name: n for name, n in sorted(result.items()) if n > 0}


def divide_duplicated(inp: DivideInput) -> dict[str, int]:
    return {name: inp.replicas for name in sorted(inp.candidates)}


def divide_static(inp: DivideInput) -> dict[str, int]:
    votes = dict(inp.votes) if inp.votes else {name: 1 for name in inp.candidates}
    return _nonzero(allocate_by_weight(inp.replicas, votes, inp.uid))


def _by_weight_desc(pairs: list[tuple[str, int]]) -> list[tuple[str, int]]:
    return sorted(pairs, key=lambda p: -p[1])  # stable: ties keep candidate order


def _divide(target: int, weights: list[tuple[str, int]], scheduled: list[tuple[str, int]],
            aggregated: bool, uid: str) -> dict[str, int]:
    total = sum(w for _, w in weights)
    if total < target:
        raise Unschedulable(f"Clusters available replicas {total} are not enough to schedule")
    if aggregated:
        held = {name for name, n in scheduled if n > 0}
        ordered = [p for p in weights if p[0] in held] + [p for p in weights if p[0] not in held]
        prefix: list[tuple[str, int]] = []
        cumulative = 0
        for pair in ordered:
            prefix.append(pair)
            cumulative += pair[1]
            if cumulative >= target:
                break
        weights = prefix
    delta = allocate_by_weight(target, dict(weights), uid)
    merged = dict(delta)
    for name, n in scheduled:
        merged[name] = merged.get(name, 0) + n
    return _nonzero(merged)


def _by_availability(inp: DivideInput, aggregated: bool) -> dict[str, int]:
    candidates = set(inp.candidates)
    scheduled = [(name, n) for name, n in inp.scheduled if name in candidates]
    assigned = sum(n for _, n in scheduled)
    if inp.fresh:
        held = dict(scheduled)
        weights = [(name, inp.allocatable.get(name, 0) + held.get(name, 0)) for name in inp.candidates]
        return _divide(inp.replicas, _by_weight_desc(weights), [], aggregated, inp.uid)
    if assigned > inp.replicas:  # scale down: shrink the old layout proportionally
        return _divide(inp.replicas, _by_weight_desc(scheduled), [], aggregated, inp.uid)
    if assigned < inp.replicas:  # scale up (a first schedule is a scale-up from 0)
        weights = [(name, inp.allocatable.get(name, 0)) for name in inp.candidates]
        return _divide(inp.replicas - assigned, _by_weight_desc(weights), scheduled, aggregated, inp.uid)
    return _nonzero(dict(scheduled))


def divide_dynamic(inp: DivideInput) -> dict[str, int]:
    return _by_availability(inp, aggregated=False)


def divide_aggregated(inp: DivideInput) -> dict[str, int]:
    return _by_availability(inp, aggregated=True)


DIVIDERS: dict[str, Divider] = {
    "Duplicated": divide_duplicated,
    "StaticWeight": divide_static,
    "DynamicWeight": divide_dynamic,
    "Aggregated": divide_aggregated,
}

#: Strategies whose candidates are narrowed by spreadConstraints (static weight ignores them).
USES_SPREAD = frozenset({"Duplicated", "DynamicWeight", "Aggregated"})
#: Strategies that compare capacity with the replicas when selecting clusters.
CHECKS_CAPACITY_IN_SELECTION = frozenset({"DynamicWeight", "Aggregated"})
