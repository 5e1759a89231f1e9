"""What preempt and reclaim share: victim order, candidate nodes, fast node pre-filter.

* the victim order (Volcano's ``BuildVictimsPriorityQueue``) is in ``framework/victim_order.py``: within a
  job the task that sorts last is evicted first; between jobs of one queue the job that
  sorts last; between queues ``VictimQueueOrderFn`` (default: reverse queue order).
* :class:`EvictableIndex` keeps, per queue, the summed request of the tasks on every node
  that could be victims (right status, preemptable). ``FutureIdle + evictable`` is an upper
  bound of what a node can offer a preemptor, so a vectorised test over all nodes discards
  hopeless nodes before any per-node Python work. It follows every in-session change through
  a session event handler, so evictions, discards and placements keep it exact.
* :func:`vote_filter` applies some plugins' votes on an extension point whatever tier they sit in.
* :func:`affinity_blockers`: the victims a preemptor's inter-pod anti-affinity conflict on a
  node needs gone (kube-scheduler's preemption re-runs InterPodAffinity with the victims removed).
* :func:`candidate_rows` is ``PredicateForPreemptAction``: nodes whose predicates pass or fail
  only with a resolvable reason, minus nodes that cannot fit even after evicting everything.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

import numpy as np

from member_agent.scheduler.framework.dims import Vector, fits
from member_agent.scheduler.framework.interface import Point
from member_agent.scheduler.framework.node_search import shape_cache
from member_agent.scheduler.framework.pod_affinity import SHARED_KEY as INTER_POD_AFFINITY
from member_agent.scheduler.framework.status import ALLOCATED_STATUSES, Code, TaskStatus, Vote

if TYPE_CHECKING:
    from member_agent.scheduler.framework.infos import JobInfo, TaskInfo
    from member_agent.scheduler.framework.session import Session

S = TaskStatus


def priority_text(victim: TaskInfo, preemptor: TaskInfo) -> str:
    """``priority 10 < 1000``: job priorities between jobs, task priorities inside one job."""
    if victim.job is preemptor.job:
        return f"task priority {victim.spec.priority} < {preemptor.spec.priority}"
    return f"priority {victim.job.priority} < {preemptor.job.priority}"


def tiered_victims(ssn: Session, point: Point, preemptor: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
    """``Session.Preemptable`` / ``Reclaimable``: per tier, abstentions are skipped, the first
    voting plugin's answer starts the set and later ones intersect it; a tier that ends with
    victims returns them. An empty answer or intersection ends the search with no victims.
    (Volcano's ``init`` flag gives the same result once some plugin has voted; when the
    *first* voter answers nothing, Volcano lets a later tier start afresh, so e.g. drf in
    tier 2 could name victims priority or conformance in tier 1 refused. Caldera does not.)"""
    victims: list[TaskInfo] | None = None
    voted = False  # Volcano's ``init``
    for tier in ssn.callbacks[point]:
        for _name, fn in tier:
            answer, vote = fn(preemptor, candidates)
            if vote == Vote.ABSTAIN:
                continue
            if not answer:
                return []  # nothing, and no later tier may revive it
            if not voted:
                victims = list(answer)
                voted = True
            else:
                keep = {t.spec.uid for t in answer}
                victims = [v for v in victims or () if v.spec.uid in keep]
                if not victims:
                    return []
        if victims:
            return victims
    return []


def voters(ssn: Session, point: Point) -> frozenset[str]:
    """The plugins whose callback on ``point`` is registered (and switched on) this session."""
    return frozenset(name for tier in ssn.callbacks[point] for name, _fn in tier)


def guard(preemptor: TaskInfo, victims: Iterable[TaskInfo], *, lower_priority: bool,
          keep_gangs: bool = True) -> list[TaskInfo]:
    """Invariants Caldera keeps whatever the tiers voted (Volcano's tiered intersection lets a
    later tier, e.g. drf, name victims after priority or gang in an earlier tier named none):
    a victim of another job has a lower job priority (with ``lower_priority``), a victim of
    the preemptor's own job a lower task priority, and (with ``keep_gangs``: gang votes on
    the point) no victim job drops below minMember. Without gang's vote Volcano lets a gang
    lose pods (its capacity tests enable only gang's JobStarving), and so does Caldera."""
    left: dict[str, int] = {}
    out = []
    for victim in victims:
        job = victim.job
        if job is preemptor.job:
            if lower_priority and victim.spec.priority >= preemptor.spec.priority:
                continue
            out.append(victim)
            continue
        if lower_priority and job.priority >= preemptor.job.priority:
            continue
        if not keep_gangs:
            out.append(victim)
            continue
        ready = left.get(job.uid, job.ready_num)
        if ready <= job.min_available:
            continue
        left[job.uid] = ready - 1
        out.append(victim)
    return out


class EvictableIndex:
    """Per (queue, job priority) and node, the summed request of tasks in ``statuses`` that are
    preemptable (``all``), and of those whose job is above its minMember (``open``: only they
    can be victims of another job); per queue, the allocated total (Σ request of allocated
    tasks). Keying by job priority lets preempt count only jobs it may evict."""

    def __init__(self, ssn: Session, name: str, statuses: frozenset[TaskStatus]) -> None:
        self.ssn = ssn
        self.statuses = statuses
        self.shape = (len(ssn.node_names), len(ssn.dims))
        self.all: dict[tuple[str, int], np.ndarray] = {}
        self.open: dict[tuple[str, int], np.ndarray] = {}
        self.allocated: dict[str, Vector] = {}
        self._counted: dict[str, tuple[int, tuple[str, int], bool]] = {}  # task key -> (row, grid key, open)
        self._alloc_counted: dict[str, str] = {}  # task key -> queue in allocated
        self._frozen: dict[str, bool] = {}  # job uid -> at or below minMember
        for job in ssn.jobs.values():
            self._frozen[job.uid] = job.ready_num <= job.min_available
            for task in job.tasks:
                self._track(task)
        self.handler = (name, self.update, self.update)
        ssn.add_event_handler(*self.handler)

    def __enter__(self) -> "EvictableIndex":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop following the session (the action is over)."""
        self.ssn.remove_event_handler(*self.handler)

    def update(self, task: TaskInfo) -> None:
        self._track(task)
        job = task.job
        frozen = job.ready_num <= job.min_available
        if self._frozen.get(job.uid) != frozen:
            self._frozen[job.uid] = frozen
            for sibling in job.tasks:
                self._track(sibling)

    def _grid(self, grids: dict[tuple[str, int], np.ndarray], key: tuple[str, int]) -> np.ndarray:
        grid = grids.get(key)
        if grid is None:
            grid = grids[key] = np.zeros(self.shape)
        return grid

    def _track(self, task: TaskInfo) -> None:
        key = task.key
        req = task.spec.request
        previous = self._counted.pop(key, None)
        if previous is not None:
            row, grid_key, was_open = previous
            self.all[grid_key][row] -= req
            if was_open:
                self.open[grid_key][row] -= req
        if task.status in self.statuses and task.spec.preemptable and task.node is not None:
            grid_key = (task.job.queue, task.job.priority)
            is_open = not self._frozen.get(task.job.uid, False)
            self._grid(self.all, grid_key)[task.node] += req
            if is_open:
                self._grid(self.open, grid_key)[task.node] += req
            self._counted[key] = (task.node, grid_key, is_open)
        was = self._alloc_counted.pop(key, None)
        if was is not None:
            self.allocated[was] = self.allocated[was] - req
        if task.status in ALLOCATED_STATUSES:
            queue = task.job.queue
            self.allocated[queue] = self.allocated.get(queue, self.ssn.dims.zeros()) + req
            self._alloc_counted[key] = queue

    def evictable(self, queues: Iterable[str], *, open_only: bool = True, below: int | None = None) -> np.ndarray:
        """Σ over ``queues`` (and job priorities below ``below``, when given)."""
        grids = self.open if open_only else self.all
        wanted = set(queues)
        total = np.zeros(self.shape)
        for (queue, priority), grid in grids.items():
            if queue in wanted and (below is None or priority < below):
                total += grid
        return total

    def queue_allocated(self, queue: str) -> Vector:
        return self.allocated.get(queue, self.ssn.dims.zeros())


def job_evictable(ssn: Session, job: JobInfo, statuses: frozenset[TaskStatus]) -> np.ndarray:
    """Per node, the summed request of one job's preemptable tasks in ``statuses``."""
    grid = np.zeros((len(ssn.node_names), len(ssn.dims)))
    for task in job.tasks:
        if task.status in statuses and task.spec.preemptable and task.node is not None:
            grid[task.node] += task.spec.request
    return grid


class FailureMemo:
    """Nodes that already failed a preemptor of the same kind, until they change.

    Within one job's attempt, evictions only make other nodes *harder* to use (victim jobs
    lose ready pods, victim queues lose allocation), so a node that could not cover a task
    stays useless until the node itself changes (``Session.touch``). ``clear`` after a
    discarded job statement, which gives resources back.
    """

    def __init__(self, ssn: Session) -> None:
        self.ssn = ssn
        self.pos = len(ssn.changes)
        self.tick = 0
        self.touched = np.zeros(len(ssn.node_names), dtype=np.int64)
        self.failed: dict[object, np.ndarray] = {}

    def _sync(self) -> None:
        changes = self.ssn.changes
        if len(changes) > self.pos:
            self.tick += 1
            self.touched[np.asarray(changes[self.pos:], dtype=np.int64)] = self.tick
            self.pos = len(changes)

    def keep(self, key: object, rows: np.ndarray) -> np.ndarray:
        """``rows`` minus those that failed for ``key`` and have not changed since."""
        failed = self.failed.get(key)
        if failed is None or len(rows) == 0:
            return rows
        self._sync()
        stale: np.ndarray = rows[failed[rows] < self.touched[rows]]
        return stale

    def fail(self, key: object, row: int) -> None:
        self._sync()
        failed = self.failed.get(key)
        if failed is None:
            failed = self.failed[key] = np.full(len(self.touched), -1, dtype=np.int64)
        failed[row] = self.tick

    def clear(self) -> None:
        self.failed.clear()


def candidate_rows(ssn: Session, task: TaskInfo, evictable: np.ndarray) -> np.ndarray:
    """Rows where the preemptor passes predicates (resolvable failures allowed) and
    ``FutureIdle + evictable`` covers its request; in row order."""
    cache = shape_cache(ssn, task)
    kinds = np.asarray(ssn.reasons.kinds, dtype=np.int32)[cache.codes]
    resolvable = (kinds == Code.SUCCESS) | (kinds == Code.UNSCHEDULABLE)
    potential = ssn.idle + ssn.releasing - ssn.pipelined + evictable
    enough = (potential > cache.limit).all(axis=1)
    return np.flatnonzero(resolvable & enough)


def ranked_rows(ssn: Session, task: TaskInfo, rows: np.ndarray) -> np.ndarray:
    """``PrioritizeNodes`` then descending score (ties keep row order)."""
    if len(rows) <= 1:
        return rows
    cache = shape_cache(ssn, task)
    scores = cache.scores(ssn, task, rows)
    for fn in ssn.batch_node_order_fns:
        scores = scores + np.asarray(fn(task, rows), dtype=np.float64)
    return rows[np.argsort(-scores, kind="stable")]


def covers(ssn: Session, task: TaskInfo, row: int, victims: Iterable[TaskInfo]) -> bool:
    """``ValidateVictims``: request within FutureIdle plus everything the victims free."""
    available = ssn.future_idle(row)
    for victim in victims:
        available = available + victim.spec.request
    return fits(task.spec.request, available, ssn.dims.always)


def fits_now(ssn: Session, task: TaskInfo, row: int) -> bool:
    """Predicates pass and the request fits FutureIdle on ``row`` (the session's cache)."""
    return bool(shape_cache(ssn, task).ok[row])


def vote_filter(ssn: Session, point: Point, plugins: frozenset[str], preemptor: TaskInfo,
                candidates: list[TaskInfo]) -> list[TaskInfo]:
    """Keep candidates every listed plugin's vote on ``point`` accepts (abstentions ignored)."""
    for tier in ssn.callbacks[point]:
        for name, fn in tier:
            if name not in plugins or not candidates:
                continue
            answer, vote = fn(preemptor, candidates)
            if vote != Vote.ABSTAIN:
                keep = {t.spec.uid for t in answer}
                candidates = [c for c in candidates if c.spec.uid in keep]
    return candidates


def affinity_blockers(ssn: Session, task: TaskInfo, row: int, victims: Iterable[TaskInfo]) -> list[TaskInfo] | None:
    """The pods on ``row`` that must be evicted for ``task``'s inter-pod anti-affinity (either
    direction), all among ``victims``: [] when nothing conflicts, None when the conflict cannot
    be resolved on this node with these victims (a conflicting pod elsewhere in the topology
    domain, or one that is not a victim, e.g. of higher priority)."""
    tracker = ssn.shared.get(INTER_POD_AFFINITY)
    if tracker is None:
        return []
    blockers: list[TaskInfo] | None = tracker.blockers(task, row)
    if not blockers:
        return blockers
    allowed = {v.key for v in victims}
    return blockers if all(b.key in allowed for b in blockers) else None


def blockers_first(victims: list[TaskInfo], blockers: list[TaskInfo]) -> list[TaskInfo]:
    """``victims`` in their order, the ones that must go for affinity moved to the front."""
    if not blockers:
        return victims
    must = {b.key for b in blockers}
    return [v for v in victims if v.key in must] + [v for v in victims if v.key not in must]
