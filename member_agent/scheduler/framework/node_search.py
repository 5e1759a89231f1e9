"""Finding and ranking nodes for a task, once per task shape, over numpy rows.

Tasks with the same shape (request, node selector, affinity, tolerations: pods of one
template) see the same predicate results and row-local scores on a node in the same state.
:class:`ShapeCache` keeps, per shape, the predicate code of every node, whether the request
fits Idle and FutureIdle, and the summed row-local scores. When a node changes
(:meth:`Session.touch`), only that row is re-evaluated the next time the shape is used,
so the cost of a session grows with nodes × distinct shapes, not nodes × pods.

:class:`NodeSearch` is Volcano's predicate helper for one action (volcano.md §5): nodes are
visited from a rotating start index and the search stops after ``numNodesToFind``
feasible nodes; failures are cached per ``<job>/<role>`` so siblings skip those nodes.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

import numpy as np

from member_agent.scheduler.framework.node_classes import new_memo, score_rows
from member_agent.scheduler.framework.rows import selector, take
from member_agent.scheduler.framework.status import Code, TaskStatus
from policies.resources import TOLERANCE

if TYPE_CHECKING:
    from member_agent.scheduler.framework.infos import TaskInfo
    from member_agent.scheduler.framework.session import Session


#: Up to this many changed rows are re-evaluated with scalar code (numpy's per-call
#: overhead dominates for a handful of rows); more rows go through the vectorised path.
SMALL_ROWS = 8


class ShapeCache:
    """Per-shape predicate codes, fits and scores of the node rows evaluated so far.

    Evaluation is lazy: a search evaluates only the rows it visits (:meth:`ensure_span`); a row
    touched since it was evaluated is evaluated again (see :meth:`refresh`).
    :func:`shape_cache` (callers that read every row) completes the evaluation first.
    """

    __slots__ = ("codes", "fit_idle", "fit_future", "ok", "_ok_rows", "score", "pos", "limit", "checked",
                 "evaluated", "scored", "missing", "memo", "density", "stale")

    def __init__(self, ssn: Session, task: TaskInfo) -> None:
        req = task.spec.request
        n = len(ssn.node_names)
        check = (req != 0) | ssn.dims.always
        # fits  <=>  req < avail + 0.1  <=>  avail > req - 0.1 ; unchecked dims always pass.
        self.limit = np.where(check, req - TOLERANCE, -np.inf)
        self.checked = [(int(d), float(req[d]) - TOLERANCE) for d in np.flatnonzero(check)]
        self.codes = np.zeros(n, dtype=np.int32)
        self.fit_idle = np.zeros(n, dtype=bool)
        self.fit_future = np.zeros(n, dtype=bool)
        self.ok = np.zeros(n, dtype=bool)  # predicates pass and FutureIdle fits
        self._ok_rows: np.ndarray | None = None  # sorted rows where ``ok`` (None: recompute)
        self.score = np.zeros(n, dtype=np.float64)
        self.evaluated = np.zeros(n, dtype=bool)  # rows whose entries are current
        self.scored = np.zeros(n, dtype=bool)  # evaluated rows whose ``score`` is current
        self.missing = n  # rows not current (0: every row is)
        #: Rows :meth:`refresh` marked not current one by one (touched since evaluated); when they
        #: are all the rows not current (``missing == len(stale)``), a span is checked against
        #: them in Python instead of reading the span of ``evaluated``.
        self.stale: set[int] = set()
        self.pos = len(ssn.changes)
        #: By-resources scores per node class the session opened with (node_classes.new_memo).
        self.memo: list[np.ndarray] | None = None
        #: Feasible rows per visited row in the shape's last search (sizes the next chunk).
        self.density = 1.0

    @property
    def ok_rows(self) -> np.ndarray:
        """Sorted rows where ``ok`` (only meaningful once :meth:`ensure_all` ran)."""
        if self._ok_rows is None:
            self._ok_rows = np.flatnonzero(self.ok)
        return self._ok_rows

    # ------------------------------------------------------------------ lazy evaluation
    def ensure_all(self, ssn: Session, task: TaskInfo) -> None:
        if self.missing:
            self.ensure_span(ssn, task, 0, len(self.codes))

    def ensure_span(self, ssn: Session, task: TaskInfo, lo: int, hi: int) -> None:
        """Evaluate the rows of ``[lo, hi)`` that are not current."""
        if not self.missing or hi <= lo:
            return
        if self.missing == len(self.stale):
            inside = [row for row in self.stale if lo <= row < hi]
            if inside:
                inside.sort()
                self._evaluate(ssn, task, np.array(inside, dtype=np.int64))
            return
        done = self.evaluated[lo:hi]
        if done.all():
            return
        if not done.any():
            self._evaluate(ssn, task, np.arange(lo, hi))
            return
        rows = np.flatnonzero(~done)
        if len(rows):
            self._evaluate(ssn, task, rows + lo)

    def ensure_rows(self, ssn: Session, task: TaskInfo, rows: np.ndarray) -> None:
        if self.missing:
            missing = rows[~self.evaluated[rows]]
            if len(missing):
                self._evaluate(ssn, task, np.unique(missing))

    def refresh(self, ssn: Session, task: TaskInfo) -> None:
        """Bring the rows touched since the last use up to date. A few (the common case: the
        previous task of the same job was just placed, behind the search start) are marked
        unevaluated and evaluated again only if a search visits them; many at once are
        evaluated again now, in one vectorised pass."""
        changes = ssn.changes
        count = len(changes) - self.pos
        if count == 0:
            return
        if count <= SMALL_ROWS:
            evaluated = self.evaluated
            for row in changes[self.pos:]:
                if evaluated[row]:
                    evaluated[row] = False
                    self.missing += 1
                    self.stale.add(row)
            self.pos = len(changes)
            return
        rows = np.unique(np.array(changes[self.pos:], dtype=np.int64))
        self.pos = len(changes)
        if self.missing:
            rows = rows[self.evaluated[rows]]
        self.evaluated[rows] = False
        self.missing += len(rows)
        self._evaluate(ssn, task, rows)

    def _evaluate(self, ssn: Session, task: TaskInfo, rows: np.ndarray) -> None:
        """Evaluate ``rows`` (sorted, unique, none of them current); scores only where the
        task could go (the rest are scored on demand by :meth:`scores`)."""
        if len(rows) == 0:
            return
        self.missing -= len(rows)
        if len(rows) <= SMALL_ROWS:
            self.evaluated[rows] = True
            for row in rows.tolist():
                self.stale.discard(row)
                self._evaluate_row(ssn, task, row)
            return
        sel = selector(rows)  # a contiguous span: views and slice writes, no gathers
        self.evaluated[sel] = True
        if self.stale:
            evaluated = self.evaluated
            self.stale = {row for row in self.stale if not evaluated[row]}
        # Checked dims one contiguous column at a time (ResourceColumns): 1-D comparisons
        # are much cheaper than ``all(axis=1)`` over a short second axis or strided reads.
        fit_idle: np.ndarray | bool = True
        fit_future: np.ndarray | bool = True
        if isinstance(sel, slice):  # a span (a fresh shape's pass): slices of the shared columns
            fit_idle, fit_future = self._fit_span(resource_columns(ssn).current(ssn), sel)
        else:  # scattered touched rows: one gather of each array is cheaper than refreshing columns
            idle, releasing, pipelined = take(ssn.idle, sel), take(ssn.releasing, sel), take(ssn.pipelined, sel)
            for d, lim in self.checked:
                column = idle[:, d]
                fit_idle = fit_idle & (column > lim)
                fit_future = fit_future & ((column + releasing[:, d] - pipelined[:, d]) > lim)
        self.fit_idle[sel] = fit_idle
        self.fit_future[sel] = fit_future
        codes: np.ndarray | None = None
        for fn, _ in ssn.predicate_fns:
            if codes is None:
                codes = np.array(fn(task, rows), dtype=np.int32)
                continue
            pending = codes == 0
            if pending.all():
                codes = np.array(fn(task, rows), dtype=np.int32)
            elif pending.any():
                codes[pending] = fn(task, rows[pending])
        if codes is None:
            codes = np.zeros(len(rows), dtype=np.int32)
        self.codes[sel] = codes
        ok = (codes == 0) & fit_future
        self.ok[sel] = ok
        self._ok_rows = None
        self.scored[sel] = False
        if ok.all():
            self._score_rows(ssn, task, rows)
        elif ok.any():
            self._score_rows(ssn, task, rows[ok])

    def _fit_span(self, columns: tuple[np.ndarray, np.ndarray], sel: slice) -> tuple[np.ndarray | bool, ...]:
        """Idle and FutureIdle fit over a span, comparing into one scratch buffer and AND-ing
        in place: every fresh shape passes over most of the cluster (jobs x nodes rows in a
        session), so temporaries per dimension were a third of this pass's cost."""
        if not self.checked:
            return True, True
        idle_t, future_t = columns
        (d, lim), rest = self.checked[0], self.checked[1:]
        fit_idle = idle_t[d][sel] > lim
        fit_future = future_t[d][sel] > lim
        if rest:
            scratch = np.empty(len(fit_idle), dtype=bool)
            for d, lim in rest:
                fit_idle &= np.greater(idle_t[d][sel], lim, out=scratch)
                fit_future &= np.greater(future_t[d][sel], lim, out=scratch)
        return fit_idle, fit_future

    def _score_rows(self, ssn: Session, task: TaskInfo, rows: np.ndarray) -> None:
        if self.memo is None:
            self.memo = new_memo(ssn) or []
        score = score_rows(ssn, task, rows, self.memo or None)
        sel = selector(rows)
        self.score[sel] = score
        self.scored[sel] = True

    def scores(self, ssn: Session, task: TaskInfo, rows: np.ndarray) -> np.ndarray:
        """The row-local scores of evaluated ``rows`` (in their order), computing those not
        scored yet (rows where the task did not fit: preemption ranks them too)."""
        unscored = rows[~self.scored[rows]]
        if len(unscored):
            self._score_rows(ssn, task, np.unique(unscored))
        scores: np.ndarray = self.score[rows]
        return scores

    def _evaluate_row(self, ssn: Session, task: TaskInfo, row: int) -> None:
        """The same evaluation for one node, in scalar code (numpy per-call overhead dominates)."""
        checked = self.checked
        idle = ssn.idle[row].tolist()
        releasing = ssn.releasing[row].tolist()
        pipelined = ssn.pipelined[row].tolist()
        fit_idle = fit_future = True
        for d, lim in checked:  # one plain loop: two generator expressions per row cost more
            value = idle[d]
            if not value > lim:
                fit_idle = False
            if not value + releasing[d] - pipelined[d] > lim:
                fit_future = False
        self.fit_idle[row] = fit_idle
        self.fit_future[row] = fit_future
        code = 0
        for fn, row_fn in ssn.predicate_fns:
            code = int(row_fn(task, row)) if row_fn is not None else int(fn(task, np.array([row]))[0])
            if code:
                break
        self.codes[row] = code
        ok = code == 0 and fit_future
        if ok != self.ok[row]:
            self.ok[row] = ok
            if self._ok_rows is not None:
                at = int(np.searchsorted(self._ok_rows, row))
                self._ok_rows = np.insert(self._ok_rows, at, row) if ok else np.delete(self._ok_rows, at)
        if not ok:  # scored on demand (:meth:`scores`): a full node is usually never ranked
            self.scored[row] = False
            return
        score = 0.0
        for fn, row_fn in ssn.node_order_fns:
            score += float(row_fn(task, row)) if row_fn is not None else float(fn(task, np.array([row]))[0])
        self.score[row] = score
        self.scored[row] = True

    def insufficient_reasons(self, ssn: Session, rows: np.ndarray) -> np.ndarray:
        """Reason codes ("Insufficient <resource>") for rows whose FutureIdle is short."""
        future = ssn.idle[rows] + ssn.releasing[rows] - ssn.pipelined[rows]
        first = np.argmax(~(future > self.limit), axis=1)
        codes: np.ndarray = dim_reason_codes(ssn)[first]
        return codes


class ResourceColumns:
    """Idle and FutureIdle (idle + releasing - pipelined) of every node, one contiguous row
    per dimension, shared by every shape's cache.

    A fresh shape compares a whole span of nodes against its request; reading a dimension of
    the row-major session arrays is a strided gather and FutureIdle would be summed again per
    shape. Every change to those arrays goes through :meth:`Session.touch`, so the columns are
    kept current by copying the rows touched since the last read.
    """

    __slots__ = ("idle", "future", "pos")

    def __init__(self, ssn: Session) -> None:
        self.idle = np.ascontiguousarray(ssn.idle.T)
        self.future = np.ascontiguousarray((ssn.idle + ssn.releasing - ssn.pipelined).T)
        self.pos = len(ssn.changes)

    def current(self, ssn: Session) -> tuple[np.ndarray, np.ndarray]:
        changes = ssn.changes
        if self.pos < len(changes):
            rows = np.unique(np.array(changes[self.pos:], dtype=np.int64))
            self.pos = len(changes)
            self.idle[:, rows] = ssn.idle[rows].T
            self.future[:, rows] = (ssn.idle[rows] + ssn.releasing[rows] - ssn.pipelined[rows]).T
        return self.idle, self.future


def resource_columns(ssn: Session) -> ResourceColumns:
    columns: ResourceColumns | None = ssn.resource_columns
    if columns is None or columns.idle.shape[1] != len(ssn.idle):
        columns = ssn.resource_columns = ResourceColumns(ssn)
    return columns


def dim_reason_codes(ssn: Session) -> np.ndarray:
    if ssn.insufficient_codes is None:
        ssn.insufficient_codes = np.array(
            [ssn.reasons.code(f"Insufficient {name}") for name in ssn.dims.names], dtype=np.int32
        )
    return ssn.insufficient_codes


#: Shape caches kept per session, least recently used dropped first: with one shape per job a
#: session would otherwise hold nodes x jobs cells (1.1 GiB at 20k nodes / 2.5k jobs). A
#: dropped shape is rebuilt when used again, with the same answers (a cache is a function of
#: the session's state), so results do not depend on the bound.
MAX_SHAPES = 256


def shape_cache(ssn: Session, task: TaskInfo, lazy: bool = False) -> ShapeCache:
    """The task shape's cache, current on every row (``lazy``: current only where evaluated;
    the caller evaluates what it reads with ``ensure_*``)."""
    caches = ssn.shape_caches
    key = task.spec.shape
    cache: ShapeCache | None = caches.pop(key, None)
    if cache is None:
        cache = ShapeCache(ssn, task)
        while len(caches) >= MAX_SHAPES:
            del caches[next(iter(caches))]
    else:
        cache.refresh(ssn, task)
    caches[key] = cache  # most recently used last
    if not lazy:
        cache.ensure_all(ssn, task)
    return cache


def num_nodes_to_find(ssn: Session, n: int) -> int:
    opts = ssn.options
    if n <= opts.minimum_feasible_nodes or opts.percentage_nodes_to_find >= 100:
        return n
    pct = opts.percentage_nodes_to_find
    if pct <= 0:
        pct = max(opts.minimum_percentage_nodes_to_find, 50 - n // 125)
    return max(n * pct // 100, opts.minimum_feasible_nodes)


class FitErrors:
    """Per-node failure reasons of one task, summarised Volcano's way."""

    def __init__(self, ssn: Session, codes: np.ndarray, prefix: str = "") -> None:
        self.ssn = ssn
        self.codes = codes  # one code per node row (0 where the node was not the reason)
        self.prefix = prefix

    def histogram(self) -> Counter[str]:
        counts = np.bincount(self.codes[self.codes > 0])
        texts = self.ssn.reasons.texts
        return Counter({texts[c]: int(k) for c, k in enumerate(counts) if k and c})

    def unresolvable_rows(self) -> np.ndarray:
        kinds = np.array(self.ssn.reasons.kinds, dtype=np.int32)
        return np.flatnonzero(kinds[self.codes] == Code.UNRESOLVABLE)

    def message(self) -> str:
        hist = self.histogram()
        n = len(self.ssn.node_names)
        parts = sorted(f"{count} {text}" for text, count in hist.items())
        return f"{self.prefix}0/{n} nodes are unavailable: {', '.join(parts)}."


SIBLING_FAILED = "node(s) failed for another task of the same role"


#: Rows a bounded search evaluates at least at once: numpy's per-call overhead makes smaller
#: chunks slower than evaluating a few rows too many.
MIN_CHUNK = 512


def first_chunk(task: TaskInfo, cache: ShapeCache, want: int) -> int:
    """Rows to evaluate in one pass for a search of ``want`` feasible rows.

    Sized from the shape's feasible density so far and the job's pending tasks (its siblings,
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

    @property
    def start(self) -> int:
        return self.ssn.node_cursor

    @start.setter
    def start(self, value: int) -> None:
        self.ssn.node_cursor = value

    def feasible(self, task: TaskInfo, check_resources: bool = True) -> tuple[np.ndarray, FitErrors | None]:
        """Feasible node rows in visiting order, or no rows and the reasons.

        Rows are visited from the start index in chunks, evaluated as they are reached, until
        one more than ``numNodesToFind`` feasible rows are seen (the last one is not kept, as
        Volcano cancels its workers there); the start then advances past the last kept row.
        Visiting every row ends with the start where it was.
        """
        ssn = self.ssn
        n = len(ssn.node_names)
        if n == 0:
            return np.zeros(0, dtype=np.int64), FitErrors(ssn, np.zeros(0, dtype=np.int32))
        cache = shape_cache(ssn, task, lazy=True)
        role_key = f"{task.job.uid}/{task.spec.role}" if self.cache_errors and task.spec.role else ""
        role = self.role_errors.get(role_key) if role_key else None
        start = self.start % n
        want = num_nodes_to_find(ssn, n)
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
        if scanned:
            cache.density = max(count / scanned, 1 / n)
        order = np.concatenate(found) if len(found) > 1 else found[0]
        processed = scanned if count >= want and scanned < n else n
        self.start = (start + processed) % n
        if len(order):
            return order, None
        codes = self._reason_codes(task, cache, np.arange(n), check_resources, role)
        return order, FitErrors(ssn, codes)

    def _reason_codes(self, task: TaskInfo, cache: ShapeCache, rows: np.ndarray, check_resources: bool,
                      failed: np.ndarray | None) -> np.ndarray:
        codes = cache.codes[rows].copy()
        if check_resources:
            short = ~cache.fit_future[rows]
            if short.any():
                # The resource check runs before the other predicates (allocate's predicate).
                codes[short] = cache.insufficient_reasons(self.ssn, rows[short])
        if failed is not None:
            # A node a sibling failed on that would pass now (resources freed since).
            sibling = self.ssn.reasons.code(SIBLING_FAILED, Code.UNSCHEDULABLE)
            codes[(codes == 0) & failed[rows]] = sibling
        reasons: np.ndarray = codes
        return reasons

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
