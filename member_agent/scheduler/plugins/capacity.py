"""``capacity``: elastic quota with deserved / guarantee / capability (volcano.md §6.7).

Unlike proportion, a queue's *deserved* is written in its spec; what a queue may take is
its *real capability*: the cluster minus everyone else's guarantees, plus its own
guarantee, capped by its capability. With ``enableHierarchy`` queues form a tree through
``spec.parent`` (default ``root``): limits are checked on the queue and every ancestor,
usage is added to every ancestor, only leaf queues take jobs, and a missing parent or a
cycle makes the plugin refuse everything (reported once).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from member_agent.scheduler.framework.arguments import Argument
from member_agent.scheduler.framework.dims import Vector, fits, is_empty, le_on_requested
from member_agent.scheduler.framework.infos import JobInfo, TaskInfo
from member_agent.scheduler.framework.interface import Point
from member_agent.scheduler.framework.session import Session
from member_agent.scheduler.framework.status import Vote
from member_agent.scheduler.framework.victim_order import ordered_victims
from member_agent.scheduler.plugins.proportion_opening import capability_vector
from member_agent.scheduler.plugins.queue_usage import Usage, deduct_gated, queue_usage

NAME = "capacity"
ARGUMENTS = (
    Argument("ancestorReclaimLevel", int, 0),
    Argument("capacity.DynamicResourceAllocationEnable", bool, False),
    Argument("capacity.DRAConsumableCapacityEnable", bool, False),
)
ROOT = "root"


@dataclass
class Attr:
    name: str
    priority: int
    state: str
    parent: str
    deserved: Vector
    guarantee: Vector
    capability: Vector
    real_capability: Vector
    allocated: Vector
    request: Vector
    inqueue: Vector
    elastic: Vector
    #: dims the deserved lists, a zero amount included (Volcano keeps such a scalar key, and
    #: ``GreaterPartlyWithRelevantDimensions`` compares a listed scalar even when it is 0)
    listed: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    children: list[str] = field(default_factory=list)
    share: float = 0.0

    def update_share(self) -> None:
        if is_empty(self.deserved):
            self.share = 1.0  # a queue with nothing deserved is best-effort
            return
        mask = self.deserved >= 0.1
        self.share = float(np.max(self.allocated[mask] / self.deserved[mask]))


class CapacityPlugin:
    name = NAME

    def __init__(self, args: dict[str, Any]) -> None:
        self.ancestor_reclaim_level = int(args["ancestorReclaimLevel"])
        self.attrs: dict[str, Attr] = {}
        self.hierarchical = False
        self.not_ready = ""

    # ------------------------------------------------------------------ building
    def on_session_open(self, ssn: Session) -> None:
        self.ssn = ssn
        self.dims = ssn.dims
        option = next((p for t in ssn.conf.tiers for p in t.plugins if p.name == NAME), None)
        self.hierarchical = bool(option is not None and option.enabled("enableHierarchy"))
        usage = queue_usage(ssn)
        if self.hierarchical:
            self._build_hierarchy(ssn, usage)
        else:
            self._build_flat(ssn, usage)
        for attr in self.attrs.values():
            attr.update_share()
        if self.not_ready:
            ssn.warn(f"capacity: {self.not_ready}; every queue check fails this session")
        ssn.add(Point.QUEUE_ORDER, NAME, self._queue_order)
        ssn.add(Point.ALLOCATABLE, NAME, self._allocatable)
        ssn.add(Point.PREEMPTIVE, NAME, self._preemptive)
        ssn.add(Point.RECLAIMABLE, NAME, self._reclaimable)
        ssn.add(Point.JOB_ENQUEUEABLE, NAME, self._enqueueable)
        ssn.add(Point.JOB_ENQUEUED, NAME, self._enqueued)
        if self.hierarchical:
            ssn.add(Point.VICTIM_QUEUE_ORDER, NAME, self._victim_queue_order)
        ssn.add_event_handler(NAME, self._on_allocate, self._on_deallocate)

    def _attr(self, ssn: Session, name: str, use: Usage | None) -> Attr:
        dims, queue = self.dims, ssn.queues[name]
        zeros = dims.zeros()
        return Attr(
            name=name, priority=queue.priority, state=queue.state, parent=queue.parent or ROOT,
            deserved=dims.vector(queue.deserved), guarantee=dims.vector(queue.guarantee),
            capability=capability_vector(dims, queue), real_capability=zeros.copy(),
            allocated=use.allocated.copy() if use else zeros.copy(), request=use.request.copy() if use else zeros.copy(),
            inqueue=use.inqueue.copy() if use else zeros.copy(), elastic=use.elastic.copy() if use else zeros.copy(),
            # deserved is max'd with guarantee (helpers.Max), which keeps the keys of both
            listed=np.array([n in queue.deserved or n in queue.guarantee for n in dims.names], dtype=bool),
        )

    def _build_flat(self, ssn: Session, usage: dict[str, Usage]) -> None:
        total_guarantee = self.dims.zeros()
        for queue in ssn.queues.values():
            total_guarantee += self.dims.vector(queue.guarantee)
        for name, use in usage.items():
            attr = self._attr(ssn, name, use)
            real = np.maximum(ssn.total - total_guarantee, 0.0) + attr.guarantee
            attr.real_capability = np.minimum(real, attr.capability)
            attr.deserved = np.maximum(np.minimum(attr.deserved, attr.real_capability), attr.guarantee)
            self.attrs[name] = attr

    def _build_hierarchy(self, ssn: Session, usage: dict[str, Usage]) -> None:
        for name in ssn.queues:
            self.attrs[name] = self._attr(ssn, name, usage.get(name))
        for name, attr in self.attrs.items():
            if name == ROOT:
                continue
            if attr.parent not in self.attrs:
                self.not_ready = f"queue {name} has parent {attr.parent}, which does not exist"
                return
            self.attrs[attr.parent].children.append(name)
        for name in self.attrs:
            seen, cur = set(), name
            while cur != ROOT:
                if cur in seen:
                    self.not_ready = f"queue {name} is in a parent cycle"
                    return
                seen.add(cur)
                cur = self.attrs[cur].parent
        for job in ssn.jobs.values():
            if self.attrs[job.queue].children:
                self.not_ready = f"job {job.uid} is in queue {job.queue}, which is not a leaf queue"
                return
        # Leaf usage counts for every ancestor.
        for name, use in usage.items():
            for ancestor in self._ancestors(name)[1:]:
                a = self.attrs[ancestor]
                a.allocated += use.allocated
                a.request += use.request
                a.inqueue += use.inqueue
                a.elastic += use.elastic
        root = self.attrs[ROOT]
        root.real_capability = root.capability.copy()
        root.deserved = sum((self.attrs[c].deserved for c in root.children), self.dims.zeros())
        root.listed = np.logical_or.reduce([self.attrs[c].listed for c in root.children] + [root.listed])
        root.guarantee = sum((self.attrs[c].guarantee for c in root.children), self.dims.zeros())
        self._descend(ROOT)

    def _descend(self, parent_name: str) -> None:
        parent = self.attrs[parent_name]
        children = [self.attrs[c] for c in parent.children]
        guarantees = sum((c.guarantee for c in children), self.dims.zeros())
        for child in children:
            child.deserved = np.maximum(child.deserved, child.guarantee)
            child.capability = np.where(np.isinf(child.capability), parent.capability, child.capability)
            real = np.maximum(parent.real_capability - guarantees, 0.0) + child.guarantee
            child.real_capability = np.minimum(real, child.capability)
            self._descend(child.name)

    def _ancestors(self, name: str) -> list[str]:
        """The queue itself, then its parents up to the root (flat mode: just the queue)."""
        if not self.hierarchical:
            return [name]
        chain = [name]
        while chain[-1] != ROOT and chain[-1] in self.attrs:
            chain.append(self.attrs[chain[-1]].parent)
        return chain

    # ------------------------------------------------------------------ callbacks
    def _queue_order(self, left: str, right: str) -> int:
        la, ra = self.attrs.get(left), self.attrs.get(right)
        if la is None or ra is None:
            return 0
        if la.priority != ra.priority:
            return -1 if la.priority > ra.priority else 1
        if self.hierarchical:
            if bool(la.children) != bool(ra.children):
                return 1 if la.children else -1
            la, ra = self._below_common_ancestor(left, right)
        if la.share != ra.share:
            return -1 if la.share < ra.share else 1
        le, re = is_empty(la.deserved), is_empty(ra.deserved)
        if le != re:
            return 1 if le else -1
        return 0

    def _below_common_ancestor(self, left: str, right: str) -> tuple[Attr, Attr]:
        lpath, rpath = self._ancestors(left)[::-1], self._ancestors(right)[::-1]
        depth = 0
        while depth < min(len(lpath), len(rpath)) and lpath[depth] == rpath[depth]:
            depth += 1
        lname = lpath[min(depth, len(lpath) - 1)]
        rname = rpath[min(depth, len(rpath) - 1)]
        return self.attrs[lname], self.attrs[rname]

    def _victim_queue_order(self, left: str, right: str, preemptor: str) -> int:
        def depth(q: str) -> int:
            mine = self._ancestors(preemptor)[::-1]
            theirs = self._ancestors(q)[::-1]
            d = 0
            while d < min(len(mine), len(theirs)) and mine[d] == theirs[d]:
                d += 1
            return d

        ld, rd = depth(left), depth(right)
        return 0 if ld == rd else (-1 if ld > rd else 1)

    def _fits_chain(self, queue: str, amount: Vector, request: Vector, field_name: str) -> bool:
        for name in self._ancestors(queue):
            attr = self.attrs.get(name)
            if attr is None:
                continue
            total = attr.allocated + amount + (attr.inqueue - attr.elastic if field_name == "enqueue" else 0.0)
            if not le_on_requested(total, attr.real_capability, request, self.dims.is_pods):
                return False
        return True

    def _allocatable(self, queue: str, task: TaskInfo) -> bool:
        attr = self.attrs.get(queue)
        if self.not_ready:
            return False
        if attr is None:
            return True
        if attr.state != "Open" or (self.hierarchical and attr.children):
            return False
        return self._fits_chain(queue, task.spec.request, task.spec.request, "allocate")

    def _preemptive(self, queue: str, tasks: list[TaskInfo]) -> bool:
        if self.not_ready:
            return False
        attr = self.attrs.get(queue)
        if attr is None or not tasks:
            return True
        if attr.state != "Open":
            self.ssn.log(3, f"Queue <{queue}> current state: {attr.state}, is not open state, can not reclaim")
            return False
        req = sum((t.spec.request for t in tasks), self.dims.zeros())
        # the queue's own real capability only: unlike AllocatableFn, Volcano's PreemptiveFn
        # does not walk the ancestors (§6.7), so a parent full of a sibling's over-use does
        # not stop a leaf below its deserved share from reclaiming
        if not le_on_requested(attr.allocated + req, attr.real_capability, req, self.dims.is_pods):
            return False
        if self._partly_within_deserved(attr, req):
            return True
        # ancestorReclaimLevel: an ancestor (not root) within the level still under its deserved
        # on a requested dimension lets the queue reclaim although the queue itself is not
        for ancestor in self._ancestors(queue)[1:self._level() + 1]:
            if ancestor != ROOT and ancestor in self.attrs and self._partly_within_deserved(self.attrs[ancestor], req):
                return True
        return False

    def _level(self) -> int:
        """The ancestor levels reclaim checks: only with hierarchical queues."""
        return self.ancestor_reclaim_level if self.hierarchical else 0

    def _partly_within_deserved(self, attr: Attr, req: Vector) -> bool:
        """``LessEqualPartlyWithDimensionZeroFiltered``: within deserved (tolerant) on some
        requested dim, dims zero on both sides dropped, ``pods`` ignored."""
        after = attr.allocated + req
        relevant = (req > 0) & ~self.dims.is_pods & ~((after < 0.1) & (attr.deserved < 0.1))
        return bool(np.any(relevant & (after < attr.deserved + 0.1)))

    def _reclaimable(self, reclaimer: TaskInfo, reclaimees: list[TaskInfo]) -> tuple[list[TaskInfo], Vote]:
        own = self.attrs.get(reclaimer.job.queue)
        if self.not_ready or own is None:
            return [], Vote.REJECT
        working: dict[str, Vector] = {}
        victims = []
        wanted = (reclaimer.spec.request > 0) & ~self.dims.is_pods
        # in eviction order, as Volcano walks them: each accepted victim lowers its queue's
        # working allocation, so the order decides which of a queue's pods are accepted
        for task in ordered_victims(self.ssn, reclaimer, reclaimees):
            attr = self.attrs.get(task.job.queue)
            if attr is None:
                continue
            req = task.spec.request
            if not np.any(wanted & (req > 0)):
                continue  # shares no resource the reclaimer needs
            allocated = working.setdefault(attr.name, attr.allocated.copy())
            if not fits(attr.guarantee, allocated - req, self.dims.always):
                continue  # would drop the queue below its guarantee
            if self._immediate(attr, req):
                # no deserved on the victim's resources; with ancestor levels, not between
                # relatives when the reclaimer has no deserved signal either (no real contention)
                if self._level() > 0 and self._share_ancestor(own.name, attr.name) and self._immediate(own, reclaimer.spec.request):
                    continue
            elif not self._over_deserved(attr, allocated, req):
                continue
            checked = self._ancestors_to_check(own.name, attr.name)
            for name in checked:
                working.setdefault(name, self.attrs[name].allocated.copy())
            if not all(self._immediate(self.attrs[n], req) or self._over_deserved(self.attrs[n], working[n], req)
                       for n in checked):
                continue  # an ancestor within the level is not over its deserved share
            allocated -= req
            for name in checked:
                working[name] -= req
            victims.append(task)
        return victims, Vote.PERMIT

    @staticmethod
    def _immediate(attr: Attr, req: Vector) -> bool:
        """An "immediate victim": ``api.Intersection(req, deserved)`` is empty, both sides'
        ``ResourceNames`` (amounts of at least 0.1, ``pods`` included) compared."""
        return not np.any((attr.deserved >= 0.1) & (req >= 0.1))

    def _over_deserved(self, attr: Attr, allocated: Vector, req: Vector) -> bool:
        """``GreaterPartlyWithRelevantDimensions``: strictly above deserved on a dim the victim
        requests that the deserved defines: cpu and memory when at least 0.1, a scalar when
        listed at all (a listed 0 counts: anything held is over it); ``pods`` ignored."""
        always = self.dims.always
        relevant = np.where(always, attr.deserved >= 0.1, attr.listed & ~self.dims.is_pods)
        return bool(np.any((req > 0) & relevant & (allocated > attr.deserved)))

    def _share_ancestor(self, left: str, right: str) -> bool:
        """A common non-root ancestor within ``ancestorReclaimLevel`` levels of both queues."""
        level = self._level()
        mine = set(self._ancestors(left)[1:level + 1]) - {ROOT}
        return bool(mine & set(self._ancestors(right)[1:level + 1]))

    def _ancestors_to_check(self, reclaimer: str, victim: str) -> list[str]:
        """The victim's ancestors that must be over their deserved share too: levels
        1..ancestorReclaimLevel, not root, not the reclaimer's own ancestor at that level."""
        level = self._level()
        if level <= 0:
            return []
        mine, theirs = self._ancestors(reclaimer), self._ancestors(victim)
        out = []
        for depth in range(1, level + 1):
            if depth >= len(theirs) or theirs[depth] == ROOT:
                continue
            if depth < len(mine) and mine[depth] == theirs[depth]:
                continue  # the same family at this level: not a boundary
            if theirs[depth] in self.attrs:
                out.append(theirs[depth])
        return out

    def _enqueueable(self, job: JobInfo) -> Vote:
        if self.not_ready:
            job.job_fit_error = f"capacity: {self.not_ready}"
            return Vote.REJECT
        attr = self.attrs.get(job.queue)
        if attr is None:
            return Vote.PERMIT
        if self.hierarchical and attr.children:
            job.job_fit_error = f"queue {job.queue} is not a leaf queue"
            return Vote.REJECT
        if attr.state != "Open":
            job.job_fit_error = f"queue {job.queue} is {attr.state}"
            return Vote.REJECT
        min_req = job.spec.min_resources
        if min_req is None:
            return Vote.PERMIT
        if self._fits_chain(job.queue, min_req, min_req, "enqueue"):
            return Vote.PERMIT
        job.job_fit_error = f"queue {job.queue} resource quota insufficient"
        return Vote.REJECT

    def _enqueued(self, job: JobInfo) -> None:
        if job.spec.min_resources is None:
            return
        reserve = deduct_gated(job, job.spec.min_resources)
        for name in self._ancestors(job.queue):
            if name in self.attrs:
                self.attrs[name].inqueue = self.attrs[name].inqueue + reserve

    def _on_allocate(self, task: TaskInfo) -> None:
        self._shift(task, 1.0)

    def _on_deallocate(self, task: TaskInfo) -> None:
        self._shift(task, -1.0)

    def _shift(self, task: TaskInfo, sign: float) -> None:
        for name in self._ancestors(task.job.queue):
            attr = self.attrs.get(name)
            if attr is not None:
                attr.allocated += sign * task.spec.request
                attr.update_share()

    def on_session_close(self, ssn: Session) -> None:
        for attr in self.attrs.values():
            if attr.share > 1:
                ssn.log(3, f"Queue <{attr.name}> is overused: share <{attr.share:g}>")


def new(args: dict[str, Any]) -> CapacityPlugin:
    return CapacityPlugin(args)

