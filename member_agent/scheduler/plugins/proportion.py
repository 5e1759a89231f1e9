"""``proportion``: weighted fair share of the cluster between queues (volcano.md §6.6).

Each queue with jobs gets a *deserved* vector by water-filling: the remaining cluster is
split by weight, each queue capped by its real capability and by what it asks for, and
floored by its guarantee; queues that are satisfied (or stop growing) leave the loop and
their leftovers are split again. A queue is overused once ``deserved <= allocated``; a task
is allocatable while ``allocated + request <= deserved`` on the dimensions it requests;
a job is enqueueable while ``minResources + allocated + inqueue - elastic`` stays within
the real capability.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from member_agent.scheduler.framework.dims import (
    TOLERANCE,
    Dimensions,
    Vector,
    fits,
    is_empty,
    le_on_requested,
)
from member_agent.scheduler.framework.infos import JobInfo, TaskInfo
from member_agent.scheduler.framework.interface import Point
from member_agent.scheduler.framework.session import Session
from member_agent.scheduler.framework.snapshot import QueueSpec
from member_agent.scheduler.framework.status import Vote
from member_agent.scheduler.plugins.queue_usage import deduct_gated, queue_usage

NAME = "proportion"
ARGUMENTS = ()


@dataclass
class QueueAttr:
    name: str
    weight: int
    priority: int
    state: str
    capability: Vector  # +inf where unlimited
    guarantee: Vector
    real_capability: Vector
    allocated: Vector
    request: Vector
    inqueue: Vector
    elastic: Vector
    deserved: Vector
    share: float = 0.0
    inv_deserved: Vector | None = None
    inv_any: bool = False  # inv_deserved has a non-zero entry (read on every allocation)


def capability_vector(dims: Dimensions, queue: QueueSpec) -> Vector:
    """Spec capability with +inf for unset dims (and for cpu/memory <= 0)."""
    cap = np.full(len(dims), np.inf)
    for name, amount in (queue.capability or {}).items():
        i = dims.index.get(name)
        if i is not None:
            cap[i] = amount
    for i in (Dimensions.CPU, Dimensions.MEMORY):
        if cap[i] <= 0:
            cap[i] = np.inf
    return cap


def queue_share(allocated: Vector, deserved: Vector) -> float:
    """max over dims with a deserved amount (>= 0.1) of allocated / deserved."""
    mask = deserved >= 0.1
    if not mask.any():
        return 0.0
    return float(np.max(allocated[mask] / deserved[mask]))


def inverse(vector: Vector) -> Vector:
    """1/x on dims where x >= 0.1, else 0: ``max(a * inverse(x))`` is the share of ``a``."""
    out = np.zeros_like(vector)
    mask = vector >= 0.1
    out[mask] = 1.0 / vector[mask]
    return out


def water_fill(attrs: list[QueueAttr], total: Vector, always: np.ndarray) -> None:
    """Each queue's deserved share: rounds in which every queue not yet met takes its weight's
    part of what remains (clamped to its capability, request and guarantee), until every queue
    is met or nothing moves (volcano.md §6.6).

    All queues of a round at once, as (queues × dims) arrays: each element goes through the
    same float operations as a loop over the queues would apply, and the round's increase and
    decrease are summed queue after queue (``cumsum`` is sequential), so the answers are the
    loop's bit for bit (tests/scheduler/test_proportion_water_fill.py keeps the loop)."""
    if not attrs:
        return
    weights = [a.weight for a in attrs]
    capability = np.array([a.real_capability for a in attrs])
    request = np.array([a.request for a in attrs])
    guarantee = np.array([a.guarantee for a in attrs])
    allocated = np.array([a.allocated for a in attrs])
    deserved = np.array([a.deserved for a in attrs], dtype=float)
    shares = np.array([a.share for a in attrs], dtype=float)
    checked = (request != 0) | always  # the dims ``fits`` compares, per queue
    met = np.zeros(len(attrs), dtype=bool)
    remaining = total.copy()
    zeros = np.zeros((1, len(total)))
    while True:
        rows = np.flatnonzero(~met)
        total_weight = sum(weights[i] for i in rows)
        if total_weight == 0:
            break
        old_remaining = remaining.copy()
        old = deserved[rows]
        parts = np.array([weights[i] / total_weight for i in rows])
        new = old + remaining * parts[:, None]
        new = np.minimum(new, capability[rows])
        new = np.minimum(new, request[rows])
        new = np.maximum(new, guarantee[rows])
        deserved[rows] = new
        shares[rows] = _shares(allocated[rows], new)
        fit = np.all((request[rows] < new + TOLERANCE) | ~checked[rows], axis=1)
        met[rows[fit | np.all(new == old, axis=1)]] = True
        increased = np.cumsum(np.vstack([zeros, np.maximum(new - old, 0.0)]), axis=0)[-1]
        decreased = np.cumsum(np.vstack([zeros, np.maximum(old - new, 0.0)]), axis=0)[-1]
        remaining = np.maximum(remaining + decreased - increased, 0.0)
        if is_empty(remaining) or np.array_equal(remaining, old_remaining):
            break
    for i, attr in enumerate(attrs):
        attr.deserved = deserved[i].copy()
        attr.share = float(shares[i])


def _shares(allocated: np.ndarray, deserved: np.ndarray) -> np.ndarray:
    """:func:`queue_share` of each row."""
    mask = deserved >= 0.1
    ratios = np.divide(allocated, deserved, out=np.full_like(deserved, -np.inf), where=mask)
    return np.where(mask.any(axis=1), ratios.max(axis=1, initial=-np.inf), 0.0)


class ProportionPlugin:
    name = NAME

    def __init__(self) -> None:
        self.attrs: dict[str, QueueAttr] = {}
        self.dims: Dimensions | None = None

    def on_session_open(self, ssn: Session) -> None:
        dims = self.dims = ssn.dims
        usage = queue_usage(ssn)
        total_guarantee = dims.zeros()
        for queue in ssn.queues.values():
            total_guarantee += dims.vector(queue.guarantee)
        for name, use in usage.items():
            queue = ssn.queues[name]
            guarantee = dims.vector(queue.guarantee)
            capability = capability_vector(dims, queue)
            real = np.maximum(ssn.total - total_guarantee, 0.0) + guarantee
            if queue.capability:
                real = np.minimum(real, capability)
            self.attrs[name] = QueueAttr(
                name=name, weight=queue.weight, priority=queue.priority, state=queue.state,
                capability=capability, guarantee=guarantee, real_capability=real,
                allocated=use.allocated, request=use.request, inqueue=use.inqueue, elastic=use.elastic,
                deserved=dims.zeros(),
            )
        water_fill(list(self.attrs.values()), ssn.total, dims.always)
        for attr in self.attrs.values():
            attr.inv_deserved = inverse(attr.deserved)
            attr.inv_any = bool(attr.inv_deserved.any())
        for attr in self.attrs.values() if ssn.options.verbosity >= 4 else ():
            # guarded: describing three vectors per queue cost ~10 % of a session at verbosity 0
            ssn.log(4, f"Considering Queue <{attr.name}>: weight <{attr.weight}>, deserved <{dims.describe(attr.deserved)}>, "
                       f"allocated <{dims.describe(attr.allocated)}>, request <{dims.describe(attr.request)}>")
        self.ssn = ssn
        ssn.add(Point.QUEUE_ORDER, NAME, self._queue_order)
        ssn.add(Point.RECLAIMABLE, NAME, self._reclaimable)
        ssn.add(Point.OVERUSED, NAME, self._overused)
        ssn.add(Point.ALLOCATABLE, NAME, self._allocatable)
        ssn.add(Point.PREEMPTIVE, NAME, self._preemptive)
        ssn.add(Point.JOB_ENQUEUEABLE, NAME, self._enqueueable)
        ssn.add(Point.JOB_ENQUEUED, NAME, self._enqueued)
        ssn.add_event_handler(NAME, self._on_allocate, self._on_deallocate)

    # ------------------------------------------------------------------ callbacks
    def _queue_order(self, left: str, right: str) -> int:
        la, ra = self.attrs.get(left), self.attrs.get(right)
        if la is None or ra is None:
            return 0
        if la.priority != ra.priority:
            return -1 if la.priority > ra.priority else 1
        if la.share == ra.share:
            return 0
        return -1 if la.share < ra.share else 1

    def _overused(self, queue: str) -> bool:
        attr = self.attrs.get(queue)
        if attr is None:
            return False
        assert self.dims is not None
        over = fits(attr.deserved, attr.allocated, self.dims.always)
        if over and self.ssn.options.verbosity >= 3:
            self.ssn.log(3, f"Queue <{queue}> is overused: deserved <{self.dims.describe(attr.deserved)}>, "
                            f"allocated <{self.dims.describe(attr.allocated)}>, share <{attr.share:g}>")
        return over

    def _allocatable(self, queue: str, task: TaskInfo) -> bool:
        attr = self.attrs.get(queue)
        if attr is None:
            return True
        if attr.state != "Open":
            return False
        # Strict allocated + request <= deserved on the requested dims, in scalar arithmetic.
        allocated = attr.allocated
        deserved = attr.deserved
        req = task.spec.request_list
        return all(allocated[d] + req[d] <= deserved[d] for d in task.spec.requested_dims)

    def _preemptive(self, queue: str, tasks: list[TaskInfo]) -> bool:
        attr = self.attrs.get(queue)
        if attr is None or not tasks:
            return True
        if attr.state != "Open":  # Volcano: "is not open state, can not reclaim"
            self.ssn.log(3, f"Queue <{queue}> current state: {attr.state}, is not open state, can not reclaim")
            return False
        assert self.dims is not None
        req = sum((t.spec.request for t in tasks), self.dims.zeros())
        return le_on_requested(attr.allocated + req, attr.deserved, req, self.dims.is_pods)

    def _reclaimable(self, _reclaimer: TaskInfo, reclaimees: list[TaskInfo]) -> tuple[list[TaskInfo], Vote]:
        assert self.dims is not None
        working: dict[str, Vector] = {}
        victims = []
        for task in reclaimees:
            attr = self.attrs.get(task.job.queue)
            if attr is None:
                continue
            allocated = working.setdefault(attr.name, attr.allocated.copy())
            if not fits(allocated, attr.deserved, self.dims.always):
                allocated -= task.spec.request
                victims.append(task)
        return victims, Vote.PERMIT

    def _enqueueable(self, job: JobInfo) -> Vote:
        attr = self.attrs.get(job.queue)
        if attr is None:
            return Vote.PERMIT
        if attr.state != "Open":
            job.job_fit_error = f"queue {job.queue} is {attr.state}"
            return Vote.REJECT
        min_req = job.spec.min_resources
        if min_req is None:
            return Vote.PERMIT
        assert self.dims is not None
        need = min_req + attr.allocated + attr.inqueue - attr.elastic
        if le_on_requested(need, attr.real_capability, min_req, self.dims.is_pods):
            return Vote.PERMIT
        short = [self.dims.names[i] for i in np.flatnonzero((min_req > 0) & ~self.dims.is_pods & (need > attr.real_capability))]
        job.job_fit_error = f"queue {job.queue} resource quota insufficient: insufficient {', '.join(short)}"
        return Vote.REJECT

    def _enqueued(self, job: JobInfo) -> None:
        attr = self.attrs.get(job.queue)
        if attr is not None and job.spec.min_resources is not None:
            attr.inqueue = attr.inqueue + deduct_gated(job, job.spec.min_resources)

    def _on_allocate(self, task: TaskInfo) -> None:
        attr = self.attrs.get(task.job.queue)
        if attr is not None:
            attr.allocated += task.spec.request
            self._reshare(attr)

    def _on_deallocate(self, task: TaskInfo) -> None:
        attr = self.attrs.get(task.job.queue)
        if attr is not None:
            attr.allocated -= task.spec.request
            self._reshare(attr)

    @staticmethod
    def _reshare(attr: QueueAttr) -> None:
        inv = attr.inv_deserved
        # max() over a Python list: numpy's ``.max()`` costs more than the product on a few dims
        attr.share = float(max((attr.allocated * inv).tolist())) if inv is not None and attr.inv_any else 0.0

    def on_session_close(self, ssn: Session) -> None:
        pass


def new(args: dict[str, Any]) -> ProportionPlugin:
    return ProportionPlugin()
