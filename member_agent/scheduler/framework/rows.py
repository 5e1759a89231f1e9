"""Row selections for the vectorised plugin callbacks.

A predicate or node-order callback gets node rows sorted and unique (the shape cache
evaluates spans of the visiting order and the rows touched since). A contiguous run of rows,
the common case once the node search evaluates chunks, is read as a slice: a view, no copy;
other selections are gathered with ``np.take`` (several times faster than fancy indexing on
2-D arrays).
"""

from __future__ import annotations

import numpy as np


def selector(rows: np.ndarray) -> slice | np.ndarray:
    """``rows`` as a slice when they are one contiguous run (``rows`` sorted and unique)."""
    if len(rows) and int(rows[-1]) - int(rows[0]) + 1 == len(rows):
        return slice(int(rows[0]), int(rows[-1]) + 1)
    return rows


def take(values: np.ndarray, rows: slice | np.ndarray) -> np.ndarray:
    """The selected rows of ``values`` (a view for a slice)."""
    if isinstance(rows, slice):
        return values[rows]
    return np.take(values, rows, axis=0)


def unique_rows(changed: list[int], n: int) -> np.ndarray:
    """The rows of ``changed`` (row numbers below ``n``, repeats allowed) sorted and unique, as
    ``np.unique`` gives them: a long list through a mark per row (a linear pass instead of a sort)."""
    rows = np.array(changed, dtype=np.int64)
    if len(rows) * 8 < n:  # sorted, repeats dropped: np.unique's result without its per-call checks
        rows.sort()
        if len(rows) > 1:
            rows = rows[np.concatenate(((True,), rows[1:] != rows[:-1]))]
        return rows
    mark = np.zeros(n, dtype=bool)
    mark[rows] = True
    return np.flatnonzero(mark)


#: A run of consecutive rows at least this long is evaluated as a span (slices and views).
MIN_RUN = 64


def runs(rows: np.ndarray) -> list[tuple[np.ndarray, slice | np.ndarray]]:
    """``rows`` (sorted, unique, not one run) in parts with their selectors: each run of ``MIN_RUN``
    consecutive rows or more as a slice, the other rows together as one gathered part (a shape
    evaluates a span around rows it evaluated before as spans, not as one gather)."""
    bounds = np.concatenate(((0,), np.flatnonzero(np.diff(rows) != 1) + 1, (len(rows),)))
    lengths = np.diff(bounds)
    long = lengths >= MIN_RUN
    if not long.any():
        return [(rows, rows)]
    parts: list[tuple[np.ndarray, slice | np.ndarray]] = []
    for a, b in zip(bounds[:-1][long].tolist(), bounds[1:][long].tolist(), strict=True):
        parts.append((rows[a:b], slice(int(rows[a]), int(rows[b - 1]) + 1)))
    if not long.all():
        rest = rows[~np.repeat(long, lengths)]
        parts.append((rest, selector(rest)))
    return parts
