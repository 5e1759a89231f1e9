"""Scores shared by node rows in the same state, so a resource-only scorer runs once per state.

A cluster is mostly pools of identical machines, and most nodes a task visits are in one of few
states (:mod:`node_groups`). Scorers whose value on a row depends only on that row's
allocatable, used, pipelined and non-zero requests (``nodeorder``'s resource scores,
``binpack``; registered with ``by_resources=True``) are evaluated on one row per group and
the values copied to the rest: identical inputs give identical floats, so scores are exactly
those of a row-by-row evaluation. A shape keeps the values per group id (:func:`new_memo`) up to
``MAX_MEMO_CLASSES`` ids; rows in groups past it are scored one by one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from member_agent.scheduler.framework.node_groups import node_groups
from member_agent.scheduler.framework.rows import selector, take

if TYPE_CHECKING:
    from member_agent.scheduler.framework.infos import TaskInfo
    from member_agent.scheduler.framework.session import Session

#: Below this many rows, or when groups save less than half the rows, rows are scored directly.
MIN_ROWS = 64
#: From this many rows the per-shape memo is used (a lookup is far cheaper than a scorer call).
MEMO_MIN_ROWS = 2
#: Up to this many rows without a value are scored with the scalar row functions: the vectorised
#: scorers cost ~60 numpy calls whatever the rows (about as much as 20-25 rows one by one); 8 before.
#: One shape per job scores ~15 rows of new states per span (a node each), mostly past the memo.
ROW_BY_ROW = 20
#: With fewer rows than this to score and no node groups yet, the scorers run on the rows instead of
#: the session grouping every node first (a replay session of 1,000 nodes scoring a shape or two: the
#: grouping cost more than the scores; ``NodeGroups`` was built in half the sessions for it alone).
GROUPS_MIN_ROWS = 4096
#: Group ids a shape's memo keeps values for (8 bytes per id, scorer and shape; one scorer's sum
#: usually): sessions that make a new state per placement have tens of thousands of ids.
MAX_MEMO_CLASSES = 1024


def score_rows(ssn: Session, task: TaskInfo, rows: np.ndarray, memo: list[np.ndarray] | None,
               sel: slice | np.ndarray | None = None, want: np.ndarray | None = None,
               out: np.ndarray | None = None) -> np.ndarray:
    """The summed NODE_ORDER scores of ``rows`` (sorted, unique), each scorer added in
    registration order as a row-by-row evaluation adds them. ``memo`` (from :func:`new_memo`)
    keeps one shape's by-resources values per group id. ``sel`` is ``selector(rows)`` when the
    caller has it. ``want`` (with a memo of the scorers' sum only, see :func:`masks`): the rows
    that need a score; the others get any value (a memo value or NaN); ``out``: where to write
    them (a view of the shape's scores)."""
    if want is not None and (len(rows) < MEMO_MIN_ROWS or not masks(ssn, memo)):
        values = np.full(len(rows), np.nan) if out is None else out
        values[want] = score_rows(ssn, task, rows[want], memo)
        return values
    assert out is None or want is not None, "out is written only with want"
    if memo is None or len(rows) < MEMO_MIN_ROWS:
        return _score_by_call(ssn, task, rows)
    if ssn.node_classes is None and len(rows) < GROUPS_MIN_ROWS:  # not worth grouping every node first
        if want is None:
            return _total(ssn, task, rows)
        values = np.full(len(rows), np.nan) if out is None else out
        values[want] = _total(ssn, task, rows[want])
        return values
    groups = node_groups(ssn)
    ids = take(groups.current(), selector(rows) if sel is None else sel)  # a view for a span
    size = min(groups.next_id, MAX_MEMO_CLASSES)
    if masks(ssn, memo):
        return _shared(memo, 0, size, rows, ids, lambda some: _total(ssn, task, some), want, out)
    total: np.ndarray | float = 0.0
    for i, ((fn, row_fn), by_resources) in enumerate(zip(ssn.node_order_fns, ssn.node_order_by_resources,
                                                          strict=True)):
        if not by_resources:
            total = total + np.asarray(fn(task, rows), dtype=np.float64)
            continue
        total = total + _shared(memo, i, size, rows, ids, _scorer(task, fn, row_fn))
    return total if isinstance(total, np.ndarray) else np.full(len(rows), total)


def masks(ssn: Session, memo: list[np.ndarray] | None) -> bool:
    """Whether :func:`score_rows` takes ``want``: every scorer is by-resources, one memo of their sum."""
    return memo is not None and len(memo) == 1 and all(ssn.node_order_by_resources)


def _shared(memo: list[np.ndarray], i: int, size: int, rows: np.ndarray, ids: np.ndarray,
            compute: Callable[[np.ndarray], np.ndarray], want: np.ndarray | None = None,
            out: np.ndarray | None = None) -> np.ndarray:
    """One value per row of ``rows`` (group ``ids``; only where ``want``, if given; written into
    ``out``, if given), ``compute`` called once, on one row per group whose value ``memo[i]`` does
    not hold (grown to ``size`` ids first) and on every row of a group past the memo.

    A memo array holds its ids' values and one more slot, always NaN, that ids past the memo read
    (clipped to it): one lookup finds every row without a value, in or past the memo, and one call
    computes them all (rows past the memo, new states that rarely repeat, used to take a second
    pass over the rows and a second call)."""
    known = memo[i]
    capacity = len(known) - 1
    if capacity < size:  # grown by doubling: a session making a state per placement adds ids all along
        grown = np.full(min(MAX_MEMO_CLASSES, max(size, 2 * capacity, 64)) + 1, np.nan)
        if capacity > 0:
            grown[:capacity] = known[:capacity]
        known = memo[i] = grown
        capacity = len(known) - 1
    # ids past the memo read its last slot (NaN): a clipped take, no pass to find or clip them
    values: np.ndarray = np.take(known, ids, mode="clip", out=out)
    missing = np.isnan(values)
    if want is not None:
        missing &= want
    if not missing.any():
        return values
    at = np.flatnonzero(missing)
    at_ids = ids[at]
    inside = at_ids < capacity
    if not inside.any():  # every row without a value is past the memo (a state per placement): its own
        values[at] = compute(rows[at])
        return values
    if inside.all():
        picked = at[_representatives(capacity, at_ids)]
    else:  # rows past the memo are their own representatives
        picked = np.concatenate((at[inside][_representatives(capacity, at_ids[inside])], at[~inside]))
        picked.sort()
    computed = compute(rows[picked])
    picked_ids = ids[picked]
    kept = picked_ids < capacity
    known[picked_ids[kept]] = computed[kept]
    values[at] = np.take(known, at_ids, mode="clip")  # the memo's new values; NaN past it
    if not kept.all():
        values[picked[~kept]] = computed[~kept]
    return values


def _representatives(size: int, ids: np.ndarray) -> np.ndarray:
    """Positions in ``ids`` of one entry per distinct id (ids below ``size``), ascending.

    Which row of a group represents it does not matter (its rows are in one state, so every
    scorer gives them identical values): a scatter keeps one per group in linear time, where
    ``np.unique`` would sort all of them."""
    slot = np.full(size, -1, dtype=np.int64)
    slot[ids] = np.arange(len(ids))
    picked = slot[slot >= 0]
    picked.sort()
    return picked


def _scorer(task: TaskInfo, fn: Callable[..., Any], row_fn: Callable[..., Any] | None) -> Callable[[np.ndarray], np.ndarray]:
    """One scorer's values on some rows (scalar code for a few)."""
    def values(rows: np.ndarray) -> np.ndarray:
        if len(rows) <= ROW_BY_ROW and row_fn is not None:  # numpy's per-call overhead dominates
            return np.array([float(row_fn(task, row)) for row in rows.tolist()])
        return np.asarray(fn(task, rows), dtype=np.float64)
    return values


def _total(ssn: Session, task: TaskInfo, rows: np.ndarray) -> np.ndarray:
    """Every NODE_ORDER scorer on ``rows``, added in registration order."""
    fns = ssn.node_order_fns
    if len(rows) <= ROW_BY_ROW and all(row_fn is not None for _, row_fn in fns):
        totals = []
        for row in rows.tolist():
            score = 0.0
            for _, row_fn in fns:
                score += float(row_fn(task, row))  # type: ignore[misc]
            totals.append(score)
        return np.array(totals)
    total: np.ndarray | float = 0.0
    for fn, _ in fns:
        total = total + np.asarray(fn(task, rows), dtype=np.float64)
    return total if isinstance(total, np.ndarray) else np.full(len(rows), total)


def _score_by_call(ssn: Session, task: TaskInfo, rows: np.ndarray) -> np.ndarray:
    if len(rows) <= ROW_BY_ROW and all(row_fn is not None for _, row_fn in ssn.node_order_fns):
        # A few rows (usually the one feasible row of a refreshed span): the row functions, as
        # ``_evaluate_row`` scores, added in the same order (a vectorised call per scorer costs more)
        return _total(ssn, task, rows)
    total: np.ndarray | float = 0.0
    classes: ClassScorer | None = None
    for (fn, _), by_resources in zip(ssn.node_order_fns, ssn.node_order_by_resources, strict=True):
        if by_resources:
            classes = classes or ClassScorer(ssn, rows)
            total = total + classes.values(fn, task)
        else:
            total = total + np.asarray(fn(task, rows), dtype=np.float64)
    return total if isinstance(total, np.ndarray) else np.full(len(rows), total)


def new_memo(ssn: Session) -> list[np.ndarray] | None:
    """Per by-resources scorer, a value per group id (NaN: not computed; the arrays grow with the
    ids); None when the session has no such scorer."""
    if not any(ssn.node_order_by_resources) or MAX_MEMO_CLASSES <= 0:
        return None
    # Empty: one NaN slot, the value of every id past the memo (:func:`_shared`).
    if all(ssn.node_order_by_resources):  # one memo of their sum
        return [np.full(1, np.nan)]
    return [np.full(1, np.nan) for _ in ssn.node_order_by_resources]


class ClassScorer:
    """Evaluates resource-only scorers on one representative row per class of ``rows``."""

    __slots__ = ("rows", "representatives", "spread")

    def __init__(self, ssn: Session, rows: np.ndarray) -> None:
        self.rows = rows
        self.representatives: np.ndarray | None = None
        self.spread: tuple[np.ndarray, np.ndarray] | None = None
        if len(rows) < MIN_ROWS:
            return
        ids = node_groups(ssn).current()[rows]
        _, first, inverse = np.unique(ids, return_index=True, return_inverse=True)
        if 2 * len(first) > len(rows):
            return
        order = np.argsort(first)  # representatives in row order (rows are sorted)
        self.representatives = rows[first[order]]
        place = np.empty(len(order), dtype=np.int64)
        place[order] = np.arange(len(order))
        self.spread = (place, inverse.reshape(-1))

    def values(self, fn: Callable[..., Any], task: TaskInfo) -> np.ndarray:
        if self.representatives is None or self.spread is None:
            return np.asarray(fn(task, self.rows), dtype=np.float64)
        per_rep = np.asarray(fn(task, self.representatives), dtype=np.float64)
        if per_rep.ndim == 0:
            return per_rep
        place, inverse = self.spread
        spread: np.ndarray = per_rep[place[inverse]]
        return spread
