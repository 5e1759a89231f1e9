"""Idle and FutureIdle of every node as contiguous columns, shared by the shapes' span evaluations."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from member_agent.scheduler.framework.rows import unique_rows

if TYPE_CHECKING:
    from member_agent.scheduler.framework.session import Session


#: Up to this many changed rows are copied without removing repeats.
FEW = 64


class ResourceColumns:
    """Idle and FutureIdle (idle + releasing - pipelined) of every node, one contiguous row
    per dimension, shared by every shape's cache.

    A fresh shape compares a whole span of nodes against its request; reading a dimension of
    the row-major session arrays is a strided gather and FutureIdle would be summed again per
    shape. Every change to those arrays goes through :meth:`Session.touch`, so the columns are
    kept current by copying the rows touched since the last read.
    """

    __slots__ = ("idle", "future", "pos", "moved", "moved_count")

    def __init__(self, ssn: Session) -> None:
        self.idle = np.ascontiguousarray(ssn.idle.T)
        self.future = np.ascontiguousarray((ssn.idle + ssn.releasing - ssn.pipelined).T)
        self.pos = len(ssn.changes)
        #: Rows with something Releasing or Pipelined (any dimension), and how many: on every other row
        #: FutureIdle is Idle exactly (``idle + 0.0 - 0.0``; only a ``-0.0`` turns ``0.0``, which
        #: compares alike), so a span without them takes its FutureIdle fit from its Idle fit.
        self.moved: np.ndarray = np.logical_or(ssn.releasing.any(axis=1), ssn.pipelined.any(axis=1))
        self.moved_count = int(np.count_nonzero(self.moved))

    def current(self, ssn: Session) -> tuple[np.ndarray, np.ndarray]:
        changes = ssn.changes
        if self.pos < len(changes):
            changed = changes[self.pos:]
            # A few rows (the last placements) are copied as listed: a repeated row is written twice
            # with the same value, cheaper than sorting the repeats out.
            rows = np.array(changed, dtype=np.int64) if len(changed) <= FEW else unique_rows(changed, self.idle.shape[1])
            self.pos = len(changes)
            self.idle[:, rows] = ssn.idle[rows].T
            releasing, pipelined = ssn.releasing[rows], ssn.pipelined[rows]
            self.future[:, rows] = (ssn.idle[rows] + releasing - pipelined).T
            if self.moved_count or releasing.any() or pipelined.any():  # usually neither: nothing moved
                self.moved[rows] = releasing.any(axis=1) | pipelined.any(axis=1)
                self.moved_count = int(np.count_nonzero(self.moved))
        return self.idle, self.future

    def fit_span(self, ssn: Session, checked: list[tuple[int, float]], span: slice, fit_idle: np.ndarray,
                 fit_future: np.ndarray) -> None:
        """Whether a request fits Idle and FutureIdle on each row of ``span``, written into ``fit_idle`` and
        ``fit_future`` (``checked``: the dims compared and their limits, ``ShapeCache.checked``).

        One contiguous column at a time, comparing into one scratch buffer and AND-ing in place: 1-D
        comparisons are much cheaper than ``all(axis=1)`` over a short second axis or strided reads, and
        every fresh shape passes over most of the cluster (jobs x nodes rows in a session), so
        temporaries per dimension were a third of this pass's cost. A span without anything Releasing or
        Pipelined (see ``moved``) copies its Idle fit as its FutureIdle fit."""
        if not checked:
            fit_idle[:] = fit_future[:] = True
            return
        idle_t, future_t = self.current(ssn)
        same = not self.moved_count or not self.moved[span].any()
        (d, lim), rest = checked[0], checked[1:]
        np.greater(idle_t[d][span], lim, out=fit_idle)
        if not same:
            np.greater(future_t[d][span], lim, out=fit_future)
        if rest:
            scratch = np.empty(len(fit_idle), dtype=bool)
            for d, lim in rest:
                fit_idle &= np.greater(idle_t[d][span], lim, out=scratch)
                if not same:
                    fit_future &= np.greater(future_t[d][span], lim, out=scratch)
        if same:
            fit_future[:] = fit_idle


def resource_columns(ssn: Session) -> ResourceColumns:
    columns: ResourceColumns | None = ssn.resource_columns
    if columns is None or columns.idle.shape[1] != len(ssn.idle):
        columns = ssn.resource_columns = ResourceColumns(ssn)
    return columns
