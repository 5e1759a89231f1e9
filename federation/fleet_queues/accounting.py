"""Fleet-wide queue quantities with Volcano's meanings (volcano.md §6.6, §6.7), summed over the fleet.

Per queue:

* ``allocated``: the requests of the queue's jobs the federation let take their resources
  (placed and dispatched, or about to be);
* ``request``: ``allocated`` plus the requests of admitted jobs that wait for room;
* ``inqueue``: the ``minResources`` of admitted jobs that hold nothing yet;
* ``elastic``: what allocated jobs hold above their ``minResources``;
* ``realCapability``: the fleet's total allocatable minus every other queue's guarantee, plus the
  queue's own guarantee, capped by its ``capability``;
* ``deserved``: under proportion, the weights' water-filling of the fleet's total; under capacity,
  ``spec.deserved`` (with hierarchy: ``spec.parent``, children inheriting the dimensions they leave
  out), clamped to the real capability and floored by the guarantee.

Everything is a plain ``dict`` over the dimensions in play (names of the total, the queues' limits
and the jobs' requests); a dimension a queue leaves uncapped is ``math.inf``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Mapping

from federation.fleet_queues.model import INF, ROOT, FleetConf, FleetQueue
from policies.resources import PODS, TOLERANCE

Vec = dict[str, float]


@dataclass
class Usage:
    """What a queue's jobs hold, want and wait with (sums over the fleet)."""

    allocated: Vec = field(default_factory=dict)
    request: Vec = field(default_factory=dict)
    inqueue: Vec = field(default_factory=dict)
    elastic: Vec = field(default_factory=dict)
    jobs: int = 0

    def add(self, which: str, amounts: Mapping[str, float], sign: float = 1.0) -> None:
        target: Vec = getattr(self, which)
        for name, amount in amounts.items():
            value = target.get(name, 0.0) + sign * amount
            target[name] = 0.0 if abs(value) < 1e-9 else value


@dataclass
class QueueAttr:
    """One queue's fleet-wide attributes for a round of decisions."""

    queue: FleetQueue
    capability: Vec
    guarantee: Vec
    real_capability: Vec
    deserved: Vec
    allocated: Vec
    request: Vec
    inqueue: Vec
    elastic: Vec
    children: list[str] = field(default_factory=list)
    share: float = 0.0

    @property
    def name(self) -> str:
        return self.queue.name


def dims_of(vectors: Iterable[Mapping[str, float]]) -> list[str]:
    names: set[str] = set()
    for vector in vectors:
        names.update(vector)
    names.discard(PODS)
    return sorted(names)


def le(left: float, right: float) -> bool:
    """Volcano's tolerant ``<=``."""
    return left < right or abs(left - right) < TOLERANCE


def share_of(allocated: Mapping[str, float], deserved: Mapping[str, float], empty: float) -> float:
    """max over the dims with a deserved amount of allocated / deserved (``empty`` when none)."""
    ratios = [allocated.get(n, 0.0) / d for n, d in deserved.items() if d >= TOLERANCE and d < INF]
    return max(ratios) if ratios else empty


def _capability(queue: FleetQueue, dims: list[str]) -> Vec:
    return {n: queue.capability_limit(n) for n in dims}


def _real_capability(total: Mapping[str, float], total_guarantee: Mapping[str, float], guarantee: Vec,
                     capability: Vec, dims: list[str]) -> Vec:
    return {n: min(max(total.get(n, 0.0) - total_guarantee.get(n, 0.0), 0.0) + guarantee.get(n, 0.0),
                   capability[n]) for n in dims}


def _attr(queue: FleetQueue, usage: Usage | None, dims: list[str]) -> QueueAttr:
    use = usage or Usage()
    return QueueAttr(
        queue=queue, capability=_capability(queue, dims),
        guarantee={n: queue.guarantee[n] for n in dims},
        real_capability={n: INF for n in dims}, deserved={n: queue.deserved[n] for n in dims},
        allocated={n: use.allocated.get(n, 0.0) for n in dims}, request={n: use.request.get(n, 0.0) for n in dims},
        inqueue={n: use.inqueue.get(n, 0.0) for n in dims}, elastic={n: use.elastic.get(n, 0.0) for n in dims},
    )


def build_attrs(conf: FleetConf, queues: Mapping[str, FleetQueue], usage: Mapping[str, Usage],
                total: Mapping[str, float], dims: list[str]) -> dict[str, QueueAttr]:
    """Every queue's attributes under ``conf``'s plugin (proportion when none is named, for the order)."""
    if conf.plugin == "capacity" and conf.hierarchical:
        return _hierarchy(queues, usage, dims)
    total_guarantee: Vec = {}
    for queue in queues.values():
        for name, amount in queue.guarantee.items():
            total_guarantee[name] = total_guarantee.get(name, 0.0) + amount
    attrs: dict[str, QueueAttr] = {}
    for name, queue in queues.items():
        attr = _attr(queue, usage.get(name), dims)
        attr.real_capability = _real_capability(total, total_guarantee, attr.guarantee, attr.capability, dims)
        attrs[name] = attr
    if conf.plugin == "capacity":
        for attr in attrs.values():
            attr.deserved = {n: max(min(attr.deserved[n], attr.real_capability[n]), attr.guarantee[n]) for n in dims}
            attr.share = share_of(attr.allocated, attr.deserved, 1.0)
        return attrs
    active = [attrs[name] for name, use in usage.items() if name in attrs and use.jobs > 0]
    for attr in attrs.values():
        attr.deserved = dict(attr.guarantee)  # a queue without jobs deserves its guarantee only
    water_fill(active, total, dims)
    for attr in attrs.values():
        attr.share = share_of(attr.allocated, attr.deserved, 0.0)
    return attrs


def water_fill(attrs: list[QueueAttr], total: Mapping[str, float], dims: list[str]) -> None:
    """Proportion's deserved: rounds in which every queue not yet met takes its weight's part of what
    remains, clamped to its real capability and its request and floored by its guarantee; a queue
    whose request is met, or whose deserved stops moving, leaves; the rest is shared again."""
    for attr in attrs:
        attr.deserved = {n: 0.0 for n in dims}
    remaining = {n: total.get(n, 0.0) for n in dims}
    met: set[str] = set()
    while True:
        rows = [a for a in attrs if a.name not in met]
        total_weight = sum(a.queue.weight for a in rows)
        if total_weight == 0:
            return
        old_remaining = dict(remaining)
        increased = {n: 0.0 for n in dims}
        decreased = {n: 0.0 for n in dims}
        for attr in rows:
            old = attr.deserved
            part = attr.queue.weight / total_weight
            new = {}
            for n in dims:
                value = min(old[n] + remaining[n] * part, attr.real_capability[n])
                value = min(value, attr.request[n])  # a dimension the queue does not ask for: 0
                new[n] = max(value, attr.guarantee[n])
                increased[n] += max(new[n] - old[n], 0.0)
                decreased[n] += max(old[n] - new[n], 0.0)
            attr.deserved = new
            if all(le(attr.request[n], new[n]) for n in dims) or new == old:
                met.add(attr.name)
        remaining = {n: max(remaining[n] + decreased[n] - increased[n], 0.0) for n in dims}
        if all(v < TOLERANCE for v in remaining.values()) or remaining == old_remaining:
            return


def _hierarchy(queues: Mapping[str, FleetQueue], usage: Mapping[str, Usage], dims: list[str]) -> dict[str, QueueAttr]:
    """capacity with ``enableHierarchy``: leaf usage counts for every ancestor; the root is unlimited
    unless its spec caps it; each child's real capability is its parent's minus its siblings'
    guarantees, capped by its own capability, which inherits the dimensions it leaves out."""
    attrs = {name: _attr(queue, usage.get(name), dims) for name, queue in queues.items()}
    if ROOT not in attrs:
        attrs[ROOT] = _attr(FleetQueue(ROOT, reclaimable=False), None, dims)
    for name, attr in attrs.items():
        if name != ROOT and parent_of(attr.queue) in attrs:
            attrs[parent_of(attr.queue)].children.append(name)
    for name, use in usage.items():
        for ancestor in ancestors(name, queues)[1:]:
            if ancestor not in attrs:
                continue
            a = attrs[ancestor]
            for which in ("allocated", "request", "inqueue", "elastic"):
                target: Vec = getattr(a, which)
                for n, amount in getattr(use, which).items():
                    if n in target:
                        target[n] += amount
    root = attrs[ROOT]
    root.real_capability = dict(root.capability)
    root.deserved = {n: sum(attrs[c].deserved[n] for c in root.children) for n in dims}
    root.guarantee = {n: sum(attrs[c].guarantee[n] for c in root.children) for n in dims}
    pending = [ROOT]
    seen = {ROOT}
    while pending:
        parent = attrs[pending.pop()]
        guarantees = {n: sum(attrs[c].guarantee[n] for c in parent.children) for n in dims}
        for child_name in parent.children:
            if child_name in seen:  # a cycle: never descended twice
                continue
            seen.add(child_name)
            child = attrs[child_name]
            child.deserved = {n: max(child.deserved[n], child.guarantee[n]) for n in dims}
            child.capability = {n: parent.capability[n] if child.capability[n] == INF else child.capability[n]
                                for n in dims}
            child.real_capability = {n: min(max(parent.real_capability[n] - guarantees[n], 0.0)
                                            + child.guarantee[n], child.capability[n]) for n in dims}
            pending.append(child_name)
    for attr in attrs.values():
        attr.share = share_of(attr.allocated, attr.deserved, 1.0)
    return attrs


def parent_of(queue: FleetQueue) -> str:
    return queue.parent or ROOT


def ancestors(name: str, queues: Mapping[str, FleetQueue]) -> list[str]:
    """The queue, then its parents up to the root; stops at a missing parent or a cycle."""
    chain = [name]
    while chain[-1] != ROOT:
        queue = queues.get(chain[-1])
        parent = parent_of(queue) if queue is not None else ROOT
        if parent in chain:
            break
        chain.append(parent)
    return chain


def hierarchy_problem(queues: Mapping[str, FleetQueue]) -> str:
    """Why capacity's hierarchy is not usable (a missing parent or a cycle), or ``""``."""
    for name, queue in sorted(queues.items()):
        if name == ROOT:
            continue
        if parent_of(queue) != ROOT and parent_of(queue) not in queues:
            return f"queue {name} has parent {parent_of(queue)}, which does not exist"
        chain = ancestors(name, queues)
        if chain[-1] != ROOT:
            return f"queue {name} is in a parent cycle"
    return ""
