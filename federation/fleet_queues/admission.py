"""Fleet admission: which waiting Jobs their queues let the federation place, in Volcano's order.

:class:`FleetQueues` is the ledger of every federated Job's phase (model.py) and the per-queue sums
(accounting.py), kept up to date job by job. :meth:`FleetQueues.decide` is one fleet-wide session
of Volcano's two queue gates:

1. **enqueue** (Pending → Inqueue): queues by priority then share, jobs by priority then creation
   time; a job passes when its queue is Open, overcommit (when configured) finds
   ``inqueue + minResources <= total × factor − used``, and, for its queue and every ancestor,
   ``minResources + allocated + inqueue − elastic <= realCapability`` on the dimensions the minimum
   names (the queue plugin's ``enableJobEnqueued`` off skips the last check);
2. **allocate** (Inqueue → Allocated): the queue with the lowest share first, again after every
   job; a job passes when its whole request fits, on the dimensions it requests: ``allocated +
   request <= deserved`` under proportion, ``<= realCapability`` for the queue and every ancestor
   under capacity.

Only an Allocated job may be placed. Its request counts as the queue's ``allocated`` until the job
finishes or is deleted, so the sum of what a queue's placed jobs request never passes its real
capability, which never passes its capability (tests/fleet_queues/test_properties.py).
"""

from __future__ import annotations

import functools
import heapq
from dataclasses import dataclass
from typing import Iterable, Mapping

from federation.fleet_queues.accounting import (
    QueueAttr,
    Usage,
    ancestors,
    build_attrs,
    dims_of,
    hierarchy_problem,
    share_of,
)
from federation.fleet_queues.model import (
    DEFAULT_FLEET_CONF,
    DEFAULT_QUEUE,
    INF,
    ROOT,
    FleetConf,
    FleetJob,
    FleetQueue,
)
from policies.resources import PODS, ResourceVector, to_quantity_text

Key = tuple[str, str]


@dataclass(frozen=True)
class Verdict:
    """Where a job stands: ``admitted`` (Allocated: it may be placed) or why it waits."""

    phase: str
    reason: str = ""
    message: str = ""

    @property
    def admitted(self) -> bool:
        return self.phase == "Allocated"


ADMITTED = Verdict("Allocated", "Admitted", "admitted by its queue")


@functools.lru_cache(maxsize=8192)
def quantity(name: str, value: float) -> str:
    """Quantity text for a message (memoised: the same few numbers recur in every session's verdicts)."""
    return "unlimited" if value == INF else to_quantity_text(name, value)


class FleetQueues:
    """The fleet's queues and the phase of every federated Job in them."""

    def __init__(self, conf: FleetConf = DEFAULT_FLEET_CONF) -> None:
        self.conf = conf
        self.queues: dict[str, FleetQueue] = {DEFAULT_QUEUE: FleetQueue(DEFAULT_QUEUE)}
        self.jobs: dict[Key, FleetJob] = {}
        self.usage: dict[str, Usage] = {}
        self.total: dict[str, float] = {}
        self.used: dict[str, float] = {}
        self.verdicts: dict[Key, Verdict] = {}
        self.dims: set[str] = set()
        self.last_attrs: dict[str, QueueAttr] = {}
        #: per session: Σ guarantees (a bound that is only the fleet's total is placement's, see _limit),
        #: and the dimensions several queues ask for (only there is proportion's fair share a queue question)
        self._guarantees: dict[str, float] = {}
        self._contended_dims: set[str] = set()

    # ------------------------------------------------------------------ inputs
    def set_queues(self, queues: Iterable[FleetQueue]) -> None:
        self.queues = {q.name: q for q in queues}
        self.queues.setdefault(DEFAULT_QUEUE, FleetQueue(DEFAULT_QUEUE))
        for queue in self.queues.values():
            self.dims.update(queue.capability, queue.guarantee, queue.deserved)

    def set_capacity(self, total: Mapping[str, float], used: Mapping[str, float] | None = None) -> None:
        """The fleet's total allocatable (Σ members) and what is in use there (for overcommit)."""
        self.total = dict(total)
        self.used = dict(used or {})
        self.dims.update(total)

    def add_job(self, job: FleetJob) -> None:
        """A job the federation holds; a known one keeps its phase (its spec may have changed)."""
        old = self.jobs.get(job.key)
        if old is not None:
            job.phase = old.phase
            self._count(old, -1.0)
        self.jobs[job.key] = job
        self.dims.update(job.request, job.min_resources)
        self._count(job, 1.0)

    def remove_job(self, key: Key) -> bool:
        """A job finished or deleted: what it held is free for the next decision. True if known."""
        job = self.jobs.pop(key, None)
        self.verdicts.pop(key, None)
        if job is None:
            return False
        self._count(job, -1.0)
        return True

    def mark_allocated(self, key: Key) -> None:
        """The federation placed the job (also when its ledger is rebuilt from existing bindings)."""
        self._move(key, "Allocated")
        self.verdicts[key] = ADMITTED

    def unplaced(self, key: Key) -> None:
        """Its placement failed (fits nowhere) or was cleared: it waits as Inqueue again, holding its minimum."""
        job = self.jobs.get(key)
        if job is not None and job.phase == "Allocated":
            self._move(key, "Inqueue")
            self.verdicts[key] = Verdict("Inqueue", "Inqueue", "admitted by its queue; waiting for room in the fleet")

    def verdict(self, key: Key) -> Verdict | None:
        return self.verdicts.get(key)

    def _move(self, key: Key, phase: str) -> None:
        job = self.jobs.get(key)
        if job is None or job.phase == phase:
            return
        self._count(job, -1.0)
        job.phase = phase  # type: ignore[assignment]
        self._count(job, 1.0)

    def _count(self, job: FleetJob, sign: float) -> None:
        if job.phase == "Pending":
            return
        use = self.usage.setdefault(job.queue, Usage())
        use.jobs += int(sign)
        use.add("request", job.request, sign)
        if job.phase == "Inqueue":
            use.add("inqueue", job.min_resources, sign)
        else:
            use.add("allocated", job.request, sign)
            use.add("elastic", job.elastic, sign)
        if use.jobs == 0:
            del self.usage[job.queue]

    # ------------------------------------------------------------------ decisions
    def attrs(self) -> dict[str, QueueAttr]:
        """Every queue's fleet-wide attributes as the ledger stands."""
        known = {**{q: FleetQueue(q) for q in self.usage}, **self.queues}
        dims = dims_of([dict.fromkeys(self.dims, 0.0)])
        self.last_attrs = build_attrs(self.conf, known, self.usage, self.total, dims)
        return self.last_attrs

    def decide(self) -> list[Key]:
        """One fleet session: enqueue, then allocate. Returns the jobs newly allowed to be placed, in order."""
        attrs = self.attrs()
        problem = hierarchy_problem(self.queues) if self._hierarchical else ""
        self._guarantees = {}
        for queue in self.queues.values():
            _add(self._guarantees, queue.guarantee)
        self._enqueue(attrs, problem)
        attrs = self.attrs()  # admitted jobs now count in request (proportion's deserved moves)
        asking: dict[str, int] = {}
        for attr in attrs.values():
            for name, amount in attr.request.items():
                asking[name] = asking.get(name, 0) + (amount > 0)
        self._contended_dims = {name for name, count in asking.items() if count > 1}
        return self._allocate(attrs, problem)

    @property
    def _hierarchical(self) -> bool:
        return self.conf.plugin == "capacity" and self.conf.hierarchical

    def _queue_key(self, attr: QueueAttr) -> tuple[int, int, float, int, str]:
        """Volcano's QueueOrder: higher priority, leaf before parent (hierarchy), lower share, a
        queue with a deserved amount before a best-effort one (capacity), then the name."""
        best_effort = int(self.conf.plugin == "capacity" and not any(v > 0 for v in attr.deserved.values()))
        return (-attr.queue.priority, int(bool(attr.children)), attr.share, best_effort, attr.name)

    def _waiting(self, phase: str) -> dict[str, list[FleetJob]]:
        by_queue: dict[str, list[FleetJob]] = {}
        for job in self.jobs.values():
            if job.phase == phase:
                by_queue.setdefault(job.queue, []).append(job)
        for jobs in by_queue.values():
            jobs.sort(key=lambda j: (-j.priority, j.created, j.key), reverse=True)  # popped from the end
        return by_queue

    def _chain(self, queue: str, attrs: Mapping[str, QueueAttr]) -> list[QueueAttr]:
        names = ancestors(queue, self.queues) if self._hierarchical else [queue]
        return [attrs[n] for n in names if n in attrs and (n != ROOT or self._hierarchical)]

    def _enqueue(self, attrs: dict[str, QueueAttr], problem: str) -> None:
        waiting = self._waiting("Pending")
        overcommit = self._overcommit_room()
        order = sorted((self._queue_key(attrs[q]) if q in attrs else (0, 0, 0.0, 0, q), q) for q in waiting)
        for _, queue in order:  # shares do not move while enqueueing: a queue is served until it is empty
            for job in reversed(waiting[queue]):
                verdict = self._enqueueable(job, attrs, problem, overcommit)
                self.verdicts[job.key] = verdict
                if verdict.phase != "Inqueue":
                    continue
                self._move(job.key, "Inqueue")
                for attr in self._chain(job.queue, attrs):
                    _add(attr.inqueue, job.min_resources)
                    _add(attr.request, job.request)
                if overcommit is not None:
                    _add(overcommit[0], job.min_resources)

    def _overcommit_room(self) -> tuple[dict[str, float], dict[str, float]] | None:
        """(inqueue, idle) for overcommit: the full minimum of every Inqueue job; total × factor − used."""
        factor = self.conf.overcommit_factor
        if factor is None:
            return None
        inqueue: dict[str, float] = {}
        for use in self.usage.values():
            _add(inqueue, use.inqueue)
        used = dict(self.used)
        allocated: dict[str, float] = {}
        for use in self.usage.values():
            _add(allocated, use.allocated)
        for name, amount in allocated.items():  # placed but not reported yet still counts
            used[name] = max(used.get(name, 0.0), amount)
        idle = {n: self.total.get(n, 0.0) * factor - used.get(n, 0.0) for n in set(self.total) | set(used)}
        return inqueue, idle

    def _enqueueable(self, job: FleetJob, attrs: Mapping[str, QueueAttr], problem: str,
                     overcommit: tuple[dict[str, float], dict[str, float]] | None) -> Verdict:
        queue = self.queues.get(job.queue)
        if queue is None and self.conf.plugin == "capacity" and self._hierarchical:
            return Verdict("Pending", "QueueNotFound", f"queue {job.queue} does not exist")
        if queue is not None and queue.state != "Open":
            return Verdict("Pending", "QueueClosed", f"queue {job.queue} is {queue.state}: it admits no new job")
        if problem:
            return Verdict("Pending", "QueueHierarchy", f"queue hierarchy is not usable: {problem}")
        if self._hierarchical and job.queue in attrs and attrs[job.queue].children:
            return Verdict("Pending", "QueueNotLeaf", f"queue {job.queue} is not a leaf queue")
        need = job.min_resources
        if overcommit is not None:
            inqueue, idle = overcommit
            over = [n for n in _requested(need) if inqueue.get(n, 0.0) + need[n] > idle.get(n, 0.0)]
            if over:
                n = over[0]
                return Verdict("Pending", "FleetOverused", (
                    f"resource in the fleet is overused: {n} {quantity(n, inqueue.get(n, 0.0) + need[n])} admitted "
                    f"and asked of {quantity(n, idle.get(n, 0.0))} idle (total × overcommit-factor "
                    f"{self.conf.overcommit_factor:g} − used)"))
        if self.conf.plugin is None or not self.conf.enqueue:
            return Verdict("Inqueue")
        for attr in self._chain(job.queue, attrs):
            for n in _requested(need):
                held = attr.allocated[n] + attr.inqueue[n] - attr.elastic[n]
                if need[n] + held > self._limit(attr, n):
                    return Verdict("Pending", "QueueCapped", _capped(attr, job, n, held))
        return Verdict("Inqueue")

    def _limit(self, attr: QueueAttr, name: str) -> float:
        """The queue's bound on one dimension as a *queue* question: its real capability, except that
        a bound that is only the fleet's total (flat queues, no guarantee anywhere on that dimension)
        is left to placement, which knows the members' room exactly (node shapes, readiness,
        preemption) and says Unschedulable itself."""
        if self._hierarchical or self._guarantees.get(name, 0.0) > 0:
            return attr.real_capability[name]
        return attr.capability[name]

    def _allocate(self, attrs: dict[str, QueueAttr], problem: str) -> list[Key]:
        waiting = self._waiting("Inqueue")
        heap = [(self._queue_key(attrs[q]) if q in attrs else (0, 0, 0.0, 0, q), q) for q in waiting]
        heapq.heapify(heap)
        allowed: list[Key] = []
        while heap:
            _, queue = heapq.heappop(heap)
            jobs = waiting[queue]
            job = jobs.pop()
            verdict = self._allocatable(job, attrs, problem)
            if verdict.admitted:
                self._move(job.key, "Allocated")
                allowed.append(job.key)
                for attr in self._chain(job.queue, attrs):
                    _add(attr.allocated, job.request)
                    _add(attr.inqueue, job.min_resources, -1.0)
                    _add(attr.elastic, job.elastic)
                    attr.share = share_of(attr.allocated, attr.deserved, 1.0 if self.conf.plugin == "capacity" else 0.0)
            self.verdicts[job.key] = verdict
            if jobs:
                heapq.heappush(heap, (self._queue_key(attrs[queue]) if queue in attrs else (0, 0, 0.0, 0, queue), queue))
        return allowed

    def _allocatable(self, job: FleetJob, attrs: Mapping[str, QueueAttr], problem: str) -> Verdict:
        queue = self.queues.get(job.queue)
        if queue is not None and queue.state != "Open":
            return Verdict("Inqueue", "QueueClosed", f"queue {job.queue} is {queue.state}")
        if problem:
            return Verdict("Inqueue", "QueueHierarchy", f"queue hierarchy is not usable: {problem}")
        if self.conf.plugin is None:
            return ADMITTED
        request = job.request
        if self.conf.plugin == "proportion":
            attr = attrs.get(job.queue)
            if attr is None:
                return ADMITTED
            for n in _requested(request):
                # The cap holds whether or not another queue asks for the dimension: only the fair-share
                # test is skipped on a dimension no other queue contends for.
                if attr.allocated[n] + request[n] > self._limit(attr, n):
                    return Verdict("Inqueue", "QueueCapped", _capped(attr, job, n, attr.allocated[n], request[n]))
                if n not in self._contended_dims:
                    continue
                if attr.allocated[n] + request[n] > attr.deserved[n]:
                    return Verdict("Inqueue", "QueueShare", (
                        f"queue {job.queue} at its fair share: {n} {quantity(n, attr.allocated[n])} allocated across "
                        f"the fleet + {quantity(n, request[n])} asked > {quantity(n, attr.deserved[n])} deserved"))
            return ADMITTED
        for attr in self._chain(job.queue, attrs):
            for n in _requested(request):
                if attr.allocated[n] + request[n] > self._limit(attr, n):
                    return Verdict("Inqueue", "QueueCapped", _capped(attr, job, n, attr.allocated[n], request[n]))
        return ADMITTED


def _requested(vector: Mapping[str, float]) -> list[str]:
    return [n for n, v in vector.items() if v > 0 and n != PODS]


def _add(target: dict[str, float], amounts: Mapping[str, float], sign: float = 1.0) -> None:
    for name, amount in amounts.items():
        if name != PODS:
            target[name] = target.get(name, 0.0) + sign * amount


def _capped(attr: QueueAttr, job: FleetJob, name: str, held: float, asked: float | None = None) -> str:
    """``queue ai-training capped: nvidia.com/gpu 16/16 allocated across the fleet; this job needs 8``."""
    own = attr.name == job.queue
    who = f"queue {attr.name}" if own else f"queue {attr.name} (ancestor of {job.queue})"
    need = job.min_resources[name] if asked is None else asked
    real, cap = attr.real_capability[name], attr.capability[name]
    limit = quantity(name, real)
    if real < cap:
        limit += f" (capability {quantity(name, cap)}, less the other queues' guarantees)"
    return (f"{who} capped: {name} {quantity(name, held)}/{limit} allocated across the fleet; "
            f"this job needs {quantity(name, need)}")


def job_vectors(min_resources: ResourceVector, request: ResourceVector) -> tuple[ResourceVector, ResourceVector]:
    """Drop the ``pods`` slot (Volcano's minResources has none; queues never cap it here)."""
    return (ResourceVector({k: v for k, v in min_resources.items() if k != PODS}),
            ResourceVector({k: v for k, v in request.items() if k != PODS}))
