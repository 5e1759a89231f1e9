"""Per task shape, the predicate codes, fits and scores of node rows, over numpy rows.

Tasks with the same shape (request, node selector, affinity, tolerations: pods of one
template) see the same predicate results and row-local scores on a node in the same state.
:class:`ShapeCache` keeps, per shape, the predicate code of every node, whether the request
fits Idle and FutureIdle, and the summed row-local scores. When a node changes
(:meth:`Session.touch`), only that row is re-evaluated the next time the shape is used,
so the cost of a session grows with nodes x distinct shapes, not nodes x pods; and when every
callback reads only the row's state (``Session.rows_by_state``), a re-evaluated row takes the
answer the shape already has for its node group (:mod:`node_groups`), if any.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

import numpy as np

from member_agent.scheduler.framework.node_classes import masks, new_memo, score_rows
from member_agent.scheduler.framework.node_groups import node_groups
from member_agent.scheduler.framework.resource_columns import ResourceColumns as ResourceColumns
from member_agent.scheduler.framework.resource_columns import resource_columns
from member_agent.scheduler.framework.rows import MIN_RUN, runs, selector, take, unique_rows
from policies.resources import TOLERANCE

if TYPE_CHECKING:
    from member_agent.scheduler.framework.infos import TaskInfo
    from member_agent.scheduler.framework.session import Session

_SERIALS = itertools.count()

#: Group answers a shape keeps from its row-by-row evaluations (``ShapeCache.by_group``).
MAX_GROUPS = 512
#: Up to this many changed rows are re-evaluated with scalar code: a gathered vectorised pass costs
#: about 40 rows that take their node group's answer one by one (8 before: ~4 % more CPU per-job).
SMALL_ROWS = 32


class ShapeCache:
    """Per-shape predicate codes, fits and scores of the node rows evaluated so far.

    Evaluation is lazy: a search evaluates only the rows it visits (:meth:`ensure_span`); a row
    touched since it was evaluated is evaluated again (see :meth:`refresh`).
    :func:`shape_cache` (callers that read every row) completes the evaluation first.
    """

    __slots__ = ("codes", "fit_idle", "fit_future", "ok", "_ok_rows", "score", "pos", "limit", "checked",
                 "evaluated", "scored", "missing", "memo", "density", "stale", "by_group", "static_ok", "rises", "serial", "seen",
                 "seen_any", "witness")

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
        #: Node group id -> (code, fits Idle, fits FutureIdle, score) of a row evaluated one by one
        #: where the static codes pass (``Session.rows_by_state``): the group's other rows take it.
        self.by_group: dict[int, tuple[int, bool, bool, float]] = {}
        #: Rows where every predicate's static code for this shape is 0 (built on first use): one
        #: read per re-evaluated row instead of a generator over the static codes.
        self.static_ok: np.ndarray | None = None
        #: Counts evaluations that turned a row's ``ok`` from False to True: while it stands still,
        #: a row found not ok is still not ok. A row's first evaluation does not count: a search's
        #: sibling-failure marks are only ever on rows it evaluated (node_search.py), so a row seen
        #: for the first time cannot be one of them, and a fresh shape evaluated a chunk at a time
        #: keeps its marks trusted (each new chunk used to move the counter).
        self.rises = 0
        self.seen = np.zeros(n, dtype=bool)  # rows evaluated at least once
        self.seen_any = False  # whether ``seen`` holds a row
        #: Names this cache object without holding it (a dropped cache is rebuilt with a new one).
        self.serial = next(_SERIALS)
        #: What the entries read of the task (``shape_carry``: a shape id is a builder's).
        self.witness = shape_witness(task)

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
            if len(inside) > SMALL_ROWS:
                inside.sort()
                self._evaluate(ssn, task, np.array(inside, dtype=np.int64))
            elif inside:  # the usual case (the row the previous task took): no array round trip
                inside.sort()
                self._evaluate_few(ssn, task, inside)
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
        rows = unique_rows(changes[self.pos:], len(self.ok))
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
        if len(rows) <= SMALL_ROWS:
            self._evaluate_few(ssn, task, rows.tolist())
            return
        self.missing -= len(rows)
        sel = selector(rows)  # a contiguous span: views and slice writes, no gathers
        self.evaluated[sel] = True
        if self.stale:
            evaluated = self.evaluated
            self.stale = {row for row in self.stale if not evaluated[row]}
        if isinstance(sel, slice) or len(rows) < MIN_RUN:  # a span, or too few rows to hold a long run
            rose = self._evaluate_part(ssn, task, rows, sel)
        else:  # long runs as spans (a search's span around the rows it evaluated before), the rest gathered
            rose = False
            for part, part_sel in runs(rows):
                rose = self._evaluate_part(ssn, task, part, part_sel) or rose
        if rose:  # once per call, as one pass over all the rows counts it
            self.rises += 1
        self._ok_rows = None

    def _evaluate_part(self, ssn: Session, task: TaskInfo, rows: np.ndarray, sel: slice | np.ndarray) -> bool:
        """Fits, predicate codes, ``ok`` and scores of ``rows`` (``sel``: their selector); whether a
        row seen before turned ok (a rise, see ``rises``)."""
        fit_idle: np.ndarray | bool = True
        fit_future: np.ndarray | bool = True
        if isinstance(sel, slice):  # a span (a fresh shape's pass): slices of the shared columns, into place
            fit_idle, fit_future = self.fit_idle[sel], self.fit_future[sel]  # views: the results go in place
            resource_columns(ssn).fit_span(ssn, self.checked, sel, fit_idle, fit_future)
        else:  # scattered touched rows: one gather of each array is cheaper than refreshing columns
            idle, releasing, pipelined = take(ssn.idle, sel), take(ssn.releasing, sel), take(ssn.pipelined, sel)
            for d, lim in self.checked:
                column = idle[:, d]
                fit_idle = fit_idle & (column > lim)
                fit_future = fit_future & ((column + releasing[:, d] - pipelined[:, d]) > lim)
            self.fit_idle[sel] = fit_idle
            self.fit_future[sel] = fit_future
        codes: np.ndarray | None = None
        single = len(ssn.predicate_fns) == 1  # codes only read: no copy of the plugin's answer
        for fn, _ in ssn.predicate_fns:
            if codes is None:
                codes = np.asarray(fn(task, rows), dtype=np.int32) if single else np.array(fn(task, rows), dtype=np.int32)
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
        risen = False
        if self.seen_any:  # a fresh shape's first pass sees no row again (skip the two passes)
            rose = ok > self.ok[sel]
            risen = bool(rose.any() and (rose & self.seen[sel]).any())  # a first evaluation is no rise (see ``seen``)
        self.seen_any = True
        self.seen[sel] = True
        self.ok[sel] = ok
        if ok.all():
            self._score_rows(ssn, task, rows, sel)
        elif not ok.any():
            self.scored[sel] = False
        elif isinstance(sel, slice) and self._masks(ssn):
            # A span scored in place where ok: no gather of its ok rows and their group ids, no
            # scatter of their scores (rows not ok get a value or NaN, and are not ``scored``).
            score_rows(ssn, task, rows, self.memo, sel, ok, out=self.score[sel])
            self.scored[sel] = ok
        else:
            self.scored[sel] = False
            self._score_rows(ssn, task, rows[ok])
        return risen

    def _evaluate_few(self, ssn: Session, task: TaskInfo, rows: list[int]) -> None:
        """:meth:`_evaluate` of a few sorted rows, one by one in scalar code."""
        self.missing -= len(rows)
        evaluated, stale = self.evaluated, self.stale
        for row in rows:
            evaluated[row] = True
            stale.discard(row)
            self._evaluate_row(ssn, task, row)

    def _memo(self, ssn: Session) -> list[np.ndarray] | None:
        """The shape's by-resources score memo (node_classes.new_memo), made on first use."""
        if self.memo is None:
            self.memo = new_memo(ssn) or []
        return self.memo or None

    def _masks(self, ssn: Session) -> bool:
        """Whether the shape's scores can be computed for a mask of a span (node_classes.masks)."""
        return masks(ssn, self._memo(ssn))

    def _score_rows(self, ssn: Session, task: TaskInfo, rows: np.ndarray, sel: slice | np.ndarray | None = None) -> None:
        if sel is None:
            sel = selector(rows)
        self.score[sel] = score_rows(ssn, task, rows, self._memo(ssn), sel)
        self.scored[sel] = True

    def scores(self, ssn: Session, task: TaskInfo, rows: np.ndarray) -> np.ndarray:
        """The row-local scores of evaluated ``rows`` (in their order), computing those not
        scored yet (rows where the task did not fit: preemption ranks them too)."""
        scored = self.scored[rows]
        if not scored.all():
            self._score_rows(ssn, task, np.unique(rows[~scored]))
        scores: np.ndarray = self.score[rows]
        return scores

    def _evaluate_row(self, ssn: Session, task: TaskInfo, row: int) -> None:
        """The same evaluation for one node, in scalar code (numpy per-call overhead dominates);
        taken from another row of its node group when the shape evaluated one already."""
        group = -1
        if ssn.rows_by_state and self._static_pass(ssn, task, row):
            groups = node_groups(ssn)
            if groups.worth_looking():
                group = groups.id_of(row)
                known = self.by_group.get(group)
                groups.looked(known is not None)
                if known is not None:
                    self._set_row(row, *known)
                    return
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
        code = 0
        for fn, row_fn in ssn.predicate_fns:
            code = int(row_fn(task, row)) if row_fn is not None else int(fn(task, np.array([row]))[0])
            if code:
                break
        score = np.nan
        if code == 0 and fit_future:  # else scored on demand (:meth:`scores`): a full node is usually never ranked
            score = 0.0
            for fn, row_fn in ssn.node_order_fns:
                score += float(row_fn(task, row)) if row_fn is not None else float(fn(task, np.array([row]))[0])
        self._set_row(row, code, fit_idle, fit_future, score)
        if group >= 0:
            if len(self.by_group) >= MAX_GROUPS:
                self.by_group.clear()
            self.by_group[group] = (code, fit_idle, fit_future, score)

    def _static_pass(self, ssn: Session, task: TaskInfo, row: int) -> bool:
        static_ok = self.static_ok
        if static_ok is None:
            static_ok = self.static_ok = np.ones(len(self.codes), dtype=bool)
            for static in ssn.predicate_statics:
                static_ok &= static(task) == 0
        return bool(static_ok[row])

    def _set_row(self, row: int, code: int, fit_idle: bool, fit_future: bool, score: float) -> None:
        self.fit_idle[row] = fit_idle
        self.fit_future[row] = fit_future
        self.codes[row] = code
        ok = code == 0 and fit_future
        if ok != bool(self.ok[row]):  # a numpy bool compared costs ~15x its conversion
            self.ok[row] = ok
            if ok and self.seen[row]:  # a first evaluation is no rise (see ``seen``)
                self.rises += 1
            rows = self._ok_rows
            if rows is not None:  # slices joined: np.insert/np.delete cost several times more
                at = int(rows.searchsorted(row))
                self._ok_rows = np.concatenate((rows[:at], (row,), rows[at:]) if ok else (rows[:at], rows[at + 1:]))
        if ok:
            self.score[row] = score
        self.scored[row] = ok
        self.seen[row] = True
        self.seen_any = True

    def insufficient_reasons(self, ssn: Session, rows: np.ndarray) -> np.ndarray:
        """Reason codes ("Insufficient <resource>") for rows whose FutureIdle is short."""
        future = ssn.idle[rows] + ssn.releasing[rows] - ssn.pipelined[rows]
        first = np.argmax(~(future > self.limit), axis=1)
        codes: np.ndarray = dim_reason_codes(ssn)[first]
        return codes


def shape_witness(task: TaskInfo) -> tuple[object, ...]:
    """What a shape's entries read of its task: request, non-zero request, selector, affinity, tolerations."""
    spec = task.spec
    return spec.request.tobytes(), spec.nonzero, spec.node_selector, spec.affinity, spec.tolerations


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
#: Shapes, the most recently used, that keep their sorted feasible rows (``ShapeCache.ok_rows``).
KEEP_OK_ROWS = 16


def shape_cache(ssn: Session, task: TaskInfo, lazy: bool = False) -> ShapeCache:
    """The task shape's cache, current on every row (``lazy``: current only where evaluated;
    the caller evaluates what it reads with ``ensure_*``)."""
    caches = ssn.shape_caches
    key = task.spec.shape
    cache: ShapeCache | None = caches.pop(key, None)
    if cache is not None:
        cache.refresh(ssn, task)
    else:
        while len(caches) >= MAX_SHAPES:
            del caches[next(iter(caches))]
        if ssn.shape_carry is not None:  # the last session's, moved rows not current
            cache = ssn.shape_carry.take(ssn, task)
    if cache is None:
        cache = ShapeCache(ssn, task)
        # Sorted feasible rows are kept by the recently used shapes only (8 bytes per row each;
        # one shape per job would keep them for every cached shape); others rebuild them if used.
        # Swept at every KEEP_OK_ROWS-th new cache, not at each (a walk over every cached shape per new
        # shape was ~1.5 % of the per-job session): between sweeps the shapes used since keep theirs
        # too, at most KEEP_OK_ROWS more than before. Only memory depends on it (None: rebuilt).
        if cache.serial % KEEP_OK_ROWS == 0:
            for old in list(caches.values())[:-KEEP_OK_ROWS]:
                old._ok_rows = None
    caches[key] = cache  # most recently used last
    if not lazy:
        cache.ensure_all(ssn, task)
    return cache
