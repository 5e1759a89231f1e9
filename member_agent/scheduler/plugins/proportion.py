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

from typing import Any

import numpy as np

from member_agent.scheduler.framework.dims import Dimensions, Vector, fits, fits_values, le_on_requested
from member_agent.scheduler.framework.infos import JobInfo, TaskInfo
from member_agent.scheduler.framework.interface import Point
from member_agent.scheduler.framework.session import Session
from member_agent.scheduler.framework.status import Vote
from member_agent.scheduler.plugins.proportion_opening import QueueAttr, _opened, share_of
from member_agent.scheduler.plugins.queue_usage import deduct_gated, queue_sums
from member_agent.scheduler.plugins.water_fill import water_fill as water_fill  # re-exported for tests

NAME = "proportion"
ARGUMENTS = ()


def queue_share(allocated: Vector, deserved: Vector) -> float:
    """max over dims with a deserved amount (>= 0.1) of allocated / deserved."""
    mask = deserved >= 0.1
    if not mask.any():
        return 0.0
    return float(np.max(allocated[mask] / deserved[mask]))


class ProportionPlugin:
    name = NAME

    def __init__(self) -> None:
        self._attrs: dict[str, QueueAttr] = {}
        self._slots: dict[str, int] = {}  # queue -> its place in the opening's rows
        self.dims: Dimensions | None = None

    def on_session_open(self, ssn: Session) -> None:
        dims = self.dims = ssn.dims
        self.ssn = ssn
        sums = queue_sums(ssn)  # read-only, some of them the ledger's own arrays
        self._opening, self._shares = _opened(ssn, sums)
        self._slots = {name: i for i, name in enumerate(sums)}
        # The sums as they are now, in one array of this session's own: attributes built later read
        # them (the ledger's arrays move when a later snapshot updates it), and a queue's rows are
        # its attributes' allocated, request, elastic and inqueue.
        self._sums = np.array(list(sums.values())) if sums else np.zeros((0, 4, len(dims)))
        for attr in self.attrs.values() if ssn.options.verbosity >= 4 else ():
            # guarded: describing three vectors per queue cost ~10 % of a session at verbosity 0
            ssn.log(4, f"Considering Queue <{attr.name}>: weight <{attr.weight}>, deserved <{dims.describe(attr.deserved)}>, "
                       f"allocated <{dims.describe(attr.allocated)}>, request <{dims.describe(attr.request)}>")
        ssn.add(Point.QUEUE_ORDER, NAME, self._queue_order)
        ssn.add(Point.RECLAIMABLE, NAME, self._reclaimable)
        ssn.add(Point.OVERUSED, NAME, self._overused)
        ssn.add(Point.ALLOCATABLE, NAME, self._allocatable)
        ssn.add(Point.PREEMPTIVE, NAME, self._preemptive)
        ssn.add(Point.JOB_ENQUEUEABLE, NAME, self._enqueueable)
        ssn.add(Point.JOB_ENQUEUED, NAME, self._enqueued)
        ssn.add_event_handler(NAME, self._on_allocate, self._on_deallocate)

    @property
    def attrs(self) -> dict[str, QueueAttr]:
        """Every queue with a job, in the usage's order (each built on first use: a replay's session
        reads the one or two queues of its jobs out of a dozen)."""
        return {name: self._attr(name) for name in self._slots}  # type: ignore[misc]

    def _attr(self, name: str) -> QueueAttr | None:
        """The queue's attributes, None for a queue without a job. Built when first asked for, from
        the opening as it was when the session opened (arrays of this session's own, as an eager
        build made them: the queue's rows of the session's copy of the sums, its deserved and
        inverse rows copied)."""
        attr = self._attrs.get(name)
        if attr is None:
            i = self._slots.get(name)
            if i is None:
                return None
            opened, queue = self._opening, self.ssn.queues[name]
            guarantee, capability = opened.vectors[i]
            own = self._sums[i]
            if self._shares is not None:
                share = self._shares[i]
            else:  # a remembered fill: this queue's share of the session's allocated (_opened)
                assert opened.deserved_rows is not None
                share = share_of(own[0].tolist(), opened.deserved_rows[i])
            attr = self._attrs[name] = QueueAttr(
                name=name, weight=queue.weight, priority=queue.priority, state=queue.state,
                capability=capability, guarantee=guarantee, real_capability=opened.real[i],
                allocated=own[0], request=own[1], inqueue=own[3], elastic=own[2],
                deserved=opened.deserved[i].copy(), inv_deserved=opened.inverse[i].copy(), inv_any=opened.inv_any[i],
                _share=share,
            )
        return attr

    # ------------------------------------------------------------------ callbacks
    def _queue_order(self, left: str, right: str) -> int:
        la, ra = self._attr(left), self._attr(right)
        if la is None or ra is None:
            return 0
        if la.priority != ra.priority:
            return -1 if la.priority > ra.priority else 1
        if la.share == ra.share:
            return 0
        return -1 if la.share < ra.share else 1

    def _overused(self, queue: str) -> bool:
        attr = self._attr(queue)
        if attr is None:
            return False
        assert self.dims is not None
        over = fits_values(attr.deserved.tolist(), attr.allocated.tolist(), self.dims.always.tolist())
        if over and self.ssn.options.verbosity >= 3:
            self.ssn.log(3, f"Queue <{queue}> is overused: deserved <{self.dims.describe(attr.deserved)}>, "
                            f"allocated <{self.dims.describe(attr.allocated)}>, share <{attr.share:g}>")
        return over

    def _allocatable(self, queue: str, task: TaskInfo) -> bool:
        attr = self._attr(queue)
        if attr is None:
            return True
        if attr.state != "Open":
            return False
        # Strict allocated + request <= deserved on the requested dims, in scalar arithmetic on
        # Python floats (the same IEEE sums as numpy's scalars, without a numpy scalar per read).
        allocated = attr.allocated.tolist()
        deserved = attr.deserved.tolist()
        spec = task.spec
        req = spec.request_list
        for d in spec.requested_dims:  # noqa: SIM110 (``all`` over a generator cost more than the comparisons)
            if not allocated[d] + req[d] <= deserved[d]:
                return False
        return True

    def _preemptive(self, queue: str, tasks: list[TaskInfo]) -> bool:
        attr = self._attr(queue)
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
            attr = self._attr(task.job.queue)
            if attr is None:
                continue
            allocated = working.setdefault(attr.name, attr.allocated.copy())
            if not fits(allocated, attr.deserved, self.dims.always):
                allocated -= task.spec.request
                victims.append(task)
        return victims, Vote.PERMIT

    def _enqueueable(self, job: JobInfo) -> Vote:
        attr = self._attr(job.queue)
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
        attr = self._attr(job.queue)
        if attr is not None and job.spec.min_resources is not None:
            attr.inqueue = attr.inqueue + deduct_gated(job, job.spec.min_resources)

    def _on_allocate(self, task: TaskInfo) -> None:
        attr = self._attr(task.job.queue)
        if attr is not None:
            attr.allocated += task.spec.request
            attr.stale = True

    def _on_deallocate(self, task: TaskInfo) -> None:
        attr = self._attr(task.job.queue)
        if attr is not None:
            attr.allocated -= task.spec.request
            attr.stale = True

    def on_session_close(self, ssn: Session) -> None:
        pass


def new(args: dict[str, Any]) -> ProportionPlugin:
    return ProportionPlugin()
