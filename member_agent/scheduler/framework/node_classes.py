"""Node rows in the same resource state, so a resource-only scorer runs once per state.

A cluster is mostly pools of identical machines, and most nodes a task visits are still in
the state the session opened with (a node the session placed a pod on is often full after
binpack, so it is no candidate). Scorers whose value on a row depends only on that row's
allocatable, used, pipelined and non-zero requests (``nodeorder``'s resource scores,
``binpack``; registered with ``by_resources=True``) are evaluated on one row per class and
the values copied to the rest: identical inputs give identical floats, so scores are exactly
those of a row-by-row evaluation.

Classes are computed once per session from those arrays (:func:`state_classes`); a touched row gets a class of its own
(it may equal another state again, but sharing is only an optimisation, never a requirement).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

import numpy as np

if TYPE_CHECKING:
    from member_agent.scheduler.framework.infos import TaskInfo
    from member_agent.scheduler.framework.session import Session

#: Below this many rows, or when classes save less than half the rows, rows are scored directly.
MIN_ROWS = 64
#: From this many rows the per-shape memo is used (a lookup is far cheaper than a scorer call).
MEMO_MIN_ROWS = 2
#: Up to this many rows outside the opening classes are scored with the scalar row functions.
ROW_BY_ROW = 8


class NodeClasses:
    __slots__ = ("ids", "next_id", "opening")

    def __init__(self, ssn: Session) -> None:
        state = np.hstack([ssn.node_allocatable, ssn.used, ssn.pipelined, ssn.nonzero_used])
        self.ids = state_classes(state)
        self.next_id = int(self.ids.max()) + 1 if len(self.ids) else 0
        self.opening = self.next_id  # ids below: states the session opened with

    def touched(self, row: int) -> None:
        self.ids[row] = self.next_id
        self.next_id += 1


def state_classes(state: np.ndarray) -> np.ndarray:
    """A class id per row of ``state``: equal rows, equal ids (labels are arbitrary).

    ``np.unique(axis=0)`` compares rows field by field (~3 ms for 1,000 nodes, paid every session).
    Instead rows are grouped by one fixed projection (:func:`_projection`), and each row is then compared
    with its group's first row: exact whatever the projection, and a collision (two different
    rows, one projection) falls back to the row comparison."""
    if not len(state):
        return np.zeros(0, dtype=np.int64)
    weights = _projection(state.shape[1])
    _, first, ids = np.unique(state @ weights, return_index=True, return_inverse=True)
    ids = np.asarray(ids, dtype=np.int64).reshape(-1)
    if not np.array_equal(state, state[first[ids]]):
        _, ids = np.unique(state, axis=0, return_inverse=True)
        ids = np.asarray(ids, dtype=np.int64).reshape(-1)
    return ids


_PROJECTIONS: dict[int, np.ndarray] = {}


def _projection(width: int) -> np.ndarray:
    weights = _PROJECTIONS.get(width)
    if weights is None:
        # Square roots of 2, 3, 4, ... scaled apart: different rows rarely project alike, and any
        # fixed weights are exact (collisions are checked). Not numpy.random, whose import costs
        # an agent ~3 MiB.
        weights = _PROJECTIONS[width] = np.sqrt(np.arange(2, width + 2, dtype=np.float64)) * (1.0 + 1e-3 * np.arange(width))
    return weights


def node_classes(ssn: Session) -> NodeClasses:
    if ssn.node_classes is None:
        ssn.node_classes = NodeClasses(ssn)
    classes: NodeClasses = ssn.node_classes
    return classes


#: Per-shape memo of class values is kept when the session opened with at most this many
#: distinct node states (8 bytes per state, scorer and shape); beyond, classes are found per call.
MAX_MEMO_CLASSES = 4096


def score_rows(ssn: Session, task: TaskInfo, rows: np.ndarray, memo: list[np.ndarray] | None) -> np.ndarray:
    """The summed NODE_ORDER scores of ``rows`` (sorted, unique), each scorer added in
    registration order as a row-by-row evaluation adds them. ``memo`` (from :func:`new_memo`)
    keeps one shape's by-resources values per class the session opened with."""
    if memo is None or len(rows) < MEMO_MIN_ROWS:
        return _score_by_call(ssn, task, rows)
    if len(memo) == 1 and all(ssn.node_order_by_resources):
        return _score_combined(ssn, task, rows, memo[0])
    classes = node_classes(ssn)
    ids = classes.ids[rows]
    opening = ids < classes.opening
    same = rows[opening]  # rows still in a state the session opened with
    same_ids = ids[opening]
    changed = rows[~opening]  # touched since: a class of their own each
    total: np.ndarray | float = 0.0
    for i, ((fn, row_fn), by_resources) in enumerate(zip(ssn.node_order_fns, ssn.node_order_by_resources,
                                                          strict=True)):
        if not by_resources:
            total = total + np.asarray(fn(task, rows), dtype=np.float64)
            continue
        known = memo[i]
        values = known[same_ids]
        missing = np.isnan(values)
        if missing.any():  # one representative row per class this shape has not scored yet
            representatives = _representatives(classes, same[missing], same_ids[missing])
            known[classes.ids[representatives]] = np.asarray(fn(task, representatives), dtype=np.float64)
            values = known[same_ids]
        column = np.empty(len(rows))
        column[opening] = values
        if 0 < len(changed) <= ROW_BY_ROW and row_fn is not None:  # numpy's per-call overhead dominates
            column[~opening] = [row_fn(task, row) for row in changed.tolist()]
        elif len(changed):
            column[~opening] = np.asarray(fn(task, changed), dtype=np.float64)
        total = total + column
    return total if isinstance(total, np.ndarray) else np.full(len(rows), total)


def _score_combined(ssn: Session, task: TaskInfo, rows: np.ndarray, known: np.ndarray) -> np.ndarray:
    """:func:`score_rows` when every scorer is by-resources: ``known`` memoises their sum."""
    classes = node_classes(ssn)
    ids = classes.ids[rows]
    opening = ids < classes.opening
    if opening.all():
        values = known[ids]
        missing = np.isnan(values)
        if missing.any():
            representatives = _representatives(classes, rows[missing], ids[missing])
            known[classes.ids[representatives]] = _total(ssn, task, representatives)
            values = known[ids]
        result: np.ndarray = values
        return result
    column = np.empty(len(rows))
    same = rows[opening]
    if len(same):
        column[opening] = _score_combined(ssn, task, same, known)
    column[~opening] = _total(ssn, task, rows[~opening])
    return column


def _representatives(classes: NodeClasses, rows: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """One of ``rows`` (sorted) per distinct opening class in ``ids``, sorted.

    Which row of a class represents it does not matter (the class's rows are in one state, so
    every scorer gives them identical values): a scatter keeps one per class in linear time,
    where ``np.unique`` would sort all of them."""
    slot = np.full(classes.opening, -1, dtype=np.int64)
    slot[ids] = np.arange(len(ids))
    picked = slot[slot >= 0]
    picked.sort()
    result: np.ndarray = rows[picked]
    return result


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
    """Per by-resources scorer, a value per opening class (NaN: not computed); None when the
    session has no such scorer or too many distinct node states."""
    if not any(ssn.node_order_by_resources):
        return None
    classes = node_classes(ssn)
    opened = classes.opening
    if opened > MAX_MEMO_CLASSES:
        return None
    if all(ssn.node_order_by_resources):  # one memo of their sum
        return [np.full(opened, np.nan)]
    return [np.full(opened, np.nan) if by else np.zeros(0) for by in ssn.node_order_by_resources]


class ClassScorer:
    """Evaluates resource-only scorers on one representative row per class of ``rows``."""

    __slots__ = ("rows", "representatives", "spread")

    def __init__(self, ssn: Session, rows: np.ndarray) -> None:
        self.rows = rows
        self.representatives: np.ndarray | None = None
        self.spread: tuple[np.ndarray, np.ndarray] | None = None
        if len(rows) < MIN_ROWS:
            return
        ids = node_classes(ssn).ids[rows]
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
