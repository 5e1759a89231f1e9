"""Finding and ranking nodes for a task over the shape caches (:mod:`shape_cache`).

:class:`NodeSearch` is Volcano's predicate helper for one action (volcano.md §5): nodes are
visited from a rotating start index and the search stops after ``numNodesToFind``
feasible nodes; failures are cached per ``<job>/<role>`` so siblings skip those nodes.

A shape current on every row (the usual case after its first search: a job's searches sweep the
cluster) is searched through its sorted feasible rows (:meth:`NodeSearch._by_index`): the window
is a slice of them from the start, so a search costs about the nodes it keeps, not the nodes it
visits (most of a cluster is full or labelled for another pool). Other searches visit chunks of
rows in order and evaluate them as they are reached (:meth:`NodeSearch._by_chunks`). Both give
Volcano's answer: the same candidates, start and sibling failures.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import TYPE_CHECKING

import numpy as np

from member_agent.scheduler.framework.fit_errors import FitErrors as FitErrors
from member_agent.scheduler.framework.fit_errors import reason_codes
from member_agent.scheduler.framework.node_index import node_index
from member_agent.scheduler.framework.search_plan import RingPlan, SearchPlan, StandingWindow, plan_span

# Re-exported: the actions and the benches reach the shape caches through this module.
from member_agent.scheduler.framework.shape_cache import MAX_SHAPES as MAX_SHAPES
from member_agent.scheduler.framework.shape_cache import SMALL_ROWS as SMALL_ROWS
from member_agent.scheduler.framework.shape_cache import ResourceColumns as ResourceColumns
from member_agent.scheduler.framework.shape_cache import ShapeCache as ShapeCache
from member_agent.scheduler.framework.shape_cache import shape_cache as shape_cache
from member_agent.scheduler.framework.status import TaskStatus

if TYPE_CHECKING:
    from member_agent.scheduler.framework.infos import TaskInfo
    from member_agent.scheduler.framework.session import Session


def num_nodes_to_find(ssn: Session, n: int) -> int:
    opts = ssn.options
    if n <= opts.minimum_feasible_nodes or opts.percentage_nodes_to_find >= 100:
        return n
    pct = opts.percentage_nodes_to_find
    if pct <= 0:
        pct = max(opts.minimum_percentage_nodes_to_find, 50 - n // 125)
    return max(n * pct // 100, opts.minimum_feasible_nodes)


#: Search a shape current on every row through its sorted feasible rows (tests switch it off to
#: compare with the chunked visit, which gives the same answers).
INDEX_SEARCH = True

#: Skip the sibling-failure check of a window while no row of the shape turned feasible since the
#: role's first mark (tests switch it off to compare: the answers are the same).
TRUST_ROLE_MARKS = True

#: Decide the windows of a job's later searches with its first (search_plan.py; tests switch it off
#: to compare: the answers are the same).
PLAN_SEARCHES = True

#: Size a fresh shape's first chunk with the feasible density its placement's last fresh shape found
#: (one shape per job: a job's rows in one pass instead of two or three; tests switch it off to
#: compare: only the cost depends on it).
DENSITY_HINTS = True

#: Rows a bounded search evaluates at least at once: numpy's per-call overhead makes smaller
#: chunks slower than evaluating a few rows too many.
MIN_CHUNK = 512


def first_chunk(task: TaskInfo, cache: ShapeCache, want: int) -> int:
    """Rows to evaluate in one pass for a search of ``want`` feasible rows.

    Sized from the shape's feasible density so far (a fresh shape's: what its placement's last fresh
    shape found, ``NodeSearch._densities``) and the job's pending tasks (its siblings,
    usually of the same shape, search on from where this one stops): one pass usually holds
    the windows of the whole job, so a job whose windows sweep the cluster evaluates every row
    once, in one vectorised call, instead of a call per task. Only the cost depends on it:
    a row is current or evaluated again when read.
    """
    siblings = max(1, task.job.counts[TaskStatus.PENDING])
    return max(MIN_CHUNK, int(1.25 * (want + 1) * siblings / cache.density))


class NodeSearch:
    """The predicate helper of one action execution.

    The visiting start is the session's ``node_cursor`` (Volcano's ``lastProcessedNodeIndex``:
    it carries over between actions and, through :class:`SessionOptions`, between sessions).
    """

    def __init__(self, ssn: Session, cache_errors: bool = True) -> None:
        self.ssn = ssn
        self.cache_errors = cache_errors
        #: "<job>/<role>" → nodes a sibling task already failed on (Volcano's predicate cache):
        #: exactly the union of "visited and not feasible" over the role's searches.
        self.role_errors: dict[str, np.ndarray] = {}
        #: "<job>/<role>" -> the shape cache's serial and ``rises`` when the role's failures were
        #: first marked: while both stand, every marked row is still infeasible, so a window of
        #: feasible rows holds none of them (no check needed). A serial, not the cache: a cache
        #: dropped from the session's bound must not be kept alive.
        self.role_marked: dict[str, tuple[int, int]] = {}
        self._wants: dict[int, int] = {}  # nodes -> numNodesToFind (the options are the session's)
        #: Placement key (node_index.placement_key) -> the feasible density the last fresh shape with it
        #: found in its first search: the first chunk of the next one is sized with it (see ``first_chunk``).
        self._densities: dict[Hashable, float] = {}
        #: The searches of the current task's siblings, decided with its own (:mod:`search_plan`).
        self.plan: SearchPlan | RingPlan | StandingWindow | None = None

    @property
    def start(self) -> int:
        return self.ssn.node_cursor

    @start.setter
    def start(self, value: int) -> None:
        self.ssn.node_cursor = value

    def feasible(self, task: TaskInfo, check_resources: bool = True,
                 plan: bool = False) -> tuple[np.ndarray, FitErrors | None]:
        """Feasible node rows in visiting order, or no rows and the reasons.

        Rows are visited from the start index until one more than ``numNodesToFind`` feasible
        rows are seen (the last one is not kept, as Volcano cancels its workers there); the start
        then advances past the last kept row. Visiting every row ends with the start where it was.
        ``plan``: also decide the searches of the task's pending siblings that this one makes
        certain (:meth:`planned` hands them out; the caller places every task it searched for).
        """
        self.plan = None
        ssn = self.ssn
        n = len(ssn.node_names)
        placement: Hashable | None = None
        if n == 0:
            return np.zeros(0, dtype=np.int64), FitErrors(ssn, np.zeros(0, dtype=np.int32))
        cache = shape_cache(ssn, task, lazy=True)
        role_key = self._role_key(task.job.uid, task.spec.role)
        role = self.role_errors.get(role_key) if role_key else None
        start = self.start % n
        want = self._wants.get(n)
        if want is None:
            want = self._wants[n] = num_nodes_to_find(ssn, n)
        if INDEX_SEARCH and check_resources and cache.missing == len(cache.stale):  # current but a few touched rows
            cache.ensure_span(ssn, task, 0, n)
            marked = self.role_marked.get(role_key) if role is not None else None
            unchanged = TRUST_ROLE_MARKS and marked is not None and marked[0] == cache.serial and marked[1] == cache.rises
            trusted = unchanged or role is None
            order, scanned = self._by_index(cache, start, want, None if trusted else role)
            role = self._mark_failed(role_key, role, cache, start, scanned)
            if plan and PLAN_SEARCHES and trusted and task.job.counts[TaskStatus.PENDING] > 1:
                self._plan(task, cache, start, want, order, scanned)
        else:
            had = role is not None
            if DENSITY_HINTS and check_resources and not cache.seen_any:  # fresh: sized as its placement's last
                placement = node_index(ssn).placement(task.spec)
                cache.density = self._densities.get(placement, cache.density)
            order, scanned, role = self._by_chunks(task, cache, start, want, role_key, role, check_resources)
            if role is not None and not had and check_resources:
                self.role_marked[role_key] = (cache.serial, cache.rises)
            # A search that left the shape current on every row (a fresh shape evaluated round the
            # ring at once) found the index search's window: plan alike (role None before: trusted).
            if (plan and PLAN_SEARCHES and not had and check_resources and not cache.missing
                    and task.job.counts[TaskStatus.PENDING] > 1):
                self._plan(task, cache, start, want, order, scanned)
        count = len(order)
        if scanned:
            cache.density = max(count / scanned, 1 / n)
            if placement is not None:
                self._densities[placement] = cache.density
        processed = scanned if count >= want and scanned < n else n
        self.start = (start + processed) % n
        if count:
            return order, None
        codes = reason_codes(ssn, cache, np.arange(n), check_resources, role)
        return order, FitErrors(ssn, codes)

    def _role_key(self, job: str, role: str) -> str:
        """The predicate cache's key of a job's role ("" when failures are not cached)."""
        return f"{job}/{role}" if self.cache_errors and role else ""

    def _plan(self, task: TaskInfo, cache: ShapeCache, start: int, want: int, order: np.ndarray,
              scanned: int) -> None:
        spec = task.spec
        if scanned == len(cache.ok):  # every feasible row in the window (a trusted search): search_plan.py
            if len(order):
                self.plan = StandingWindow(task.job.uid, spec.role, spec.shape, cache, start, order,
                                           len(self.ssn.changes) + 1, self._role_key(task.job.uid, spec.role))
            return
        if len(order) != want:
            return
        siblings = task.job.counts[TaskStatus.PENDING] - 1  # an upper bound on the searches to come
        at = int(cache.ok_rows.searchsorted(start))
        planned = plan_span(cache, at, want, siblings)
        if planned is not None:
            span, count = planned
            self.plan = SearchPlan(task.job.uid, spec.role, spec.shape, cache, span, want, count,
                                   len(self.ssn.changes) + 1)
        else:  # want < feasible rows <= 2 * want: the next window wraps onto this one (search_plan.RingPlan)
            self.plan = RingPlan(task.job.uid, spec.role, spec.shape, cache, at, want, siblings,
                                 len(self.ssn.changes) + 1)

    def planned(self, task: TaskInfo) -> tuple[int, bool] | None:
        """:meth:`feasible` then :meth:`best_feasible` for ``task`` from the current plan: its node,
        whether it fits the node's Idle, the start moved and the sibling failures marked as its
        own search would; None when no plan holds for it (then the ordinary search answers)."""
        plan = self.plan
        if plan is None:
            return None
        answer = plan.search(self, task)
        if answer is None:
            self.plan = None
        return answer

    @staticmethod
    def _by_index(cache: ShapeCache, start: int, want: int, role: np.ndarray | None) -> tuple[np.ndarray, int]:
        """The window from the shape's sorted feasible rows (every row current): the first
        ``want`` of them from ``start`` on, wrapping, that no sibling failed on, and the rows
        visited (up to the next such row, or all of them when there is none)."""
        ok_rows = cache.ok_rows
        n = len(cache.ok)
        need = want + 1
        at = int(ok_rows.searchsorted(start))
        picked = ok_rows[at:at + need]
        if len(picked) < need and at:
            picked = np.concatenate((picked, ok_rows[:min(at, need - len(picked))]))
        if role is not None and role[picked].any():  # rarely: a row freed since a sibling failed there
            picked = _unfailed(ok_rows, at, need, role)
        if len(picked) > want:
            return picked[:want], (int(picked[want]) - start) % n
        return picked, n

    def _by_chunks(self, task: TaskInfo, cache: ShapeCache, start: int, want: int, role_key: str,
                   role: np.ndarray | None, check_resources: bool) -> tuple[np.ndarray, int, np.ndarray | None]:
        """The window visiting rows in chunks from ``start``, evaluating them as they are reached."""
        ssn = self.ssn
        n = len(ssn.node_names)
        found: list[np.ndarray] = []
        count = scanned = 0
        # Two sizes (only the cost depends on them, never the answer): ``chunk`` rows are scanned
        # at a time, about what this one search needs; a shape with many rows not yet evaluated
        # evaluates ``ahead`` rows in one vectorised pass (its siblings' windows too), once.
        chunk = n if want >= n else max(MIN_CHUNK, int(1.25 * (want + 1) / cache.density))
        ahead = first_chunk(task, cache, want) if want < n and cache.missing > chunk else 0
        ensured = 0  # rows from ``start``, in visiting order, evaluated by this search
        while scanned < n and count <= want:
            lo = (start + scanned) % n
            hi = min(lo + chunk, n, lo + n - scanned)
            if cache.missing and scanned + hi - lo > ensured:
                if ahead >= n - scanned:  # ahead covers the rest of the ring: every row in one pass
                    cache.ensure_span(ssn, task, 0, n)  # (not one to the end and one after the wrap)
                    ensured = n
                else:
                    end = min(lo + max(ahead, hi - lo), n, lo + n - scanned)
                    cache.ensure_span(ssn, task, lo, end)
                    ensured = scanned + end - lo
            ok = cache.ok[lo:hi] if check_resources else cache.codes[lo:hi] == 0
            rows = (np.greater(ok, role[lo:hi]) if role is not None else ok).nonzero()[0]  # ok and not role
            take = len(rows)
            if count + take > want:  # the (want+1)-th feasible row: stop before it
                take = want - count
                visited = int(rows[take])
            else:
                visited = hi - lo
            if role is not None:  # visited nodes that failed: siblings skip them
                role[lo:lo + visited] |= ~ok[:visited]
            elif role_key:
                failed = ~ok[:visited]
                if failed.any():
                    role = self.role_errors[role_key] = np.zeros(n, dtype=bool)
                    role[lo:lo + visited] |= failed
            found.append(rows[:take] + lo)
            count += take
            scanned += visited
            if visited < hi - lo:
                break
            chunk *= 2
        return (np.concatenate(found) if len(found) > 1 else found[0]), scanned, role

    def _mark_failed(self, role_key: str, role: np.ndarray | None, cache: ShapeCache, start: int,
                     scanned: int) -> np.ndarray | None:
        """Siblings skip the visited rows (``scanned`` from ``start``, wrapping) that failed."""
        if not role_key or not scanned:
            return role
        ok = cache.ok
        n = len(ok)
        end = start + scanned
        for lo, hi in ((start, min(end, n)), (0, end - n)):
            if hi <= lo:
                continue
            if role is not None:
                np.less_equal(ok[lo:hi], role[lo:hi], out=role[lo:hi])  # role |= ~ok, one pass
            elif not ok[lo:hi].all():
                role = self.role_errors[role_key] = np.zeros(n, dtype=bool)
                self.role_marked[role_key] = (cache.serial, cache.rises)
                np.logical_not(ok[lo:hi], out=role[lo:hi])
        return role

    def _cache(self, task: TaskInfo) -> ShapeCache:
        """The shape's lazy cache; the dictionary entry itself when no node changed since its
        last use (the common case right after :meth:`feasible`)."""
        cache = self.ssn.shape_caches.get(task.spec.shape)
        if cache is None or cache.pos != len(self.ssn.changes):
            cache = shape_cache(self.ssn, task, lazy=True)
        return cache

    # ------------------------------------------------------------------ ranking
    def best_node(self, task: TaskInfo, candidates: np.ndarray) -> int:
        """``prioritizeNodes``: the Idle group before the FutureIdle group; a single node
        wins without scoring; else the highest total score (first in visiting order on ties)."""
        ssn = self.ssn
        cache = self._cache(task)
        cache.ensure_rows(ssn, task, candidates)
        group = candidates[cache.fit_idle[candidates]]
        if len(group) == 0:
            group = candidates
        if len(group) == 1:
            return int(group[0])
        scores = cache.scores(ssn, task, group)
        for fn in ssn.batch_node_order_fns:
            scores = scores + fn(task, group)
        return int(group[int(scores.argmax())])

    def best_feasible(self, task: TaskInfo, candidates: np.ndarray) -> tuple[int, bool]:
        """:meth:`best_node` of the rows :meth:`feasible` just returned, and whether the task fits
        its Idle (else its FutureIdle: it is feasible). Those rows are current, feasible and
        scored in the shape's cache (nothing changed since), so their entries are read as they
        are; the per-task checks of the general path were a tenth of a session."""
        cache = self.ssn.shape_caches[task.spec.shape]
        fit_idle = cache.fit_idle
        if len(candidates) == 1:
            row = int(candidates[0])
            return row, bool(fit_idle[row])
        fits = fit_idle[candidates]  # usually all: then no boolean selection; ``take``: no fancy-indexing cost
        group = candidates if fits[fits.argmin()] or not fits.any() else candidates[fits]
        row = int(group[0]) if len(group) == 1 else int(group[self.top(task, group, cache.score.take(group))])
        return row, bool(fit_idle[row])

    def top(self, task: TaskInfo, group: np.ndarray, scores: np.ndarray) -> int:
        """The index in ``group`` (two rows or more) of the highest total score, the first on ties:
        ``scores`` (the row-local ones) plus the batch scorers' on ``group``."""
        for fn in self.ssn.batch_node_order_fns:
            scores = scores + fn(task, group)
        return int(scores.argmax())

    def fits_resources(self, task: TaskInfo, row: int) -> tuple[bool, bool]:
        """Whether ``task``'s request fits the Idle and the FutureIdle of one node."""
        cache = self._cache(task)
        if not cache.evaluated[row]:
            cache.ensure_span(self.ssn, task, row, row + 1)
        return bool(cache.fit_idle[row]), bool(cache.fit_future[row])

    def fits_on(self, task: TaskInfo, row: int) -> bool:
        """Whether ``task`` passes the resource check and predicates on one node."""
        cache = shape_cache(self.ssn, task, lazy=True)
        cache.ensure_span(self.ssn, task, row, row + 1)
        return bool(cache.ok[row])


def _unfailed(ok_rows: np.ndarray, at: int, need: int, role: np.ndarray) -> np.ndarray:
    """The first ``need`` of ``ok_rows`` from index ``at`` on, wrapping, not marked in ``role``."""
    total = len(ok_rows)
    found: list[np.ndarray] = []
    got, seen, block = 0, 0, need
    at = at % total if total else 0
    while got < need and seen < total:
        take = min(block, total - seen, total - at)
        rows = ok_rows[at:at + take]
        rows = rows[~role[rows]]
        if got + len(rows) > need:
            rows = rows[:need - got]
        found.append(rows)
        got += len(rows)
        seen += take
        at = (at + take) % total
        block *= 2
    if not found:
        return ok_rows[:0]
    return np.concatenate(found) if len(found) > 1 else found[0]

