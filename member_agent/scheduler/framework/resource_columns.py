"""Idle and FutureIdle of every node as contiguous columns, shared by the shapes' span evaluations."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from member_agent.scheduler.framework.rows import unique_rows

if TYPE_CHECKING:
    from member_agent.scheduler.framework.session import Session


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
            rows = unique_rows(changes[self.pos:], self.idle.shape[1])
            self.pos = len(changes)
            self.idle[:, rows] = ssn.idle[rows].T
            self.future[:, rows] = (ssn.idle[rows] + ssn.releasing[rows] - ssn.pipelined[rows]).T
        return self.idle, self.future


def resource_columns(ssn: Session) -> ResourceColumns:
    columns: ResourceColumns | None = ssn.resource_columns
    if columns is None or columns.idle.shape[1] != len(ssn.idle):
        columns = ssn.resource_columns = ResourceColumns(ssn)
    return columns
