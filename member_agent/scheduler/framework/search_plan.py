"""The windows of a job's next searches, known from the search of its first task (issue 41).

Volcano searches once per task: ``numNodesToFind`` feasible nodes from the rotating start, the
best of them by score, and the start moves past the window. For tasks of one shape over a shape
current on every row, consecutive windows are consecutive slices of the shape's sorted feasible
rows (:meth:`NodeSearch._by_index`). Placing a task changes only its own node, which lies in a
window already passed; so until the windows come round to those rows again, the windows of the
following searches, and where each leaves the start, are known after the first search:
one slice of the sorted rows instead of a search per task (refreshing the shape's touched rows,
locating the start, slicing the window). Each window is still ranked when its task comes, by
:meth:`NodeSearch.best_feasible`, on the session as it is then.

A :class:`SearchPlan` is used only while the session is exactly as it assumed: the same job,
role and shape cache, the cursor where the previous planned search left it, and nothing changed
since but one placement on each node picked. Anything else (another job's search, a handler
touching other nodes, a discarded statement) drops it, and the next task searches the ordinary
way, with the same answer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from member_agent.scheduler.framework.shape_cache import ShapeCache


class SearchPlan:
    """Up to ``count`` searches after the one that made the plan: search ``j`` takes the window
    ``span[j * want:(j + 1) * want]`` and leaves the cursor at ``span[(j + 1) * want]``."""

    __slots__ = ("job", "role", "shape", "cache", "span", "want", "count", "next", "changes", "last")

    def __init__(self, job: str, role: str, shape: object, cache: ShapeCache, span: np.ndarray, want: int,
                 count: int, changes: int) -> None:
        self.job, self.role, self.shape = job, role, shape
        self.cache = cache
        self.span = span
        self.want = want
        self.count = count
        self.next = 0
        #: ``len(ssn.changes)`` expected when the next planned search is asked for: the search
        #: before it placed its task (on ``last``, once known) and nothing else changed.
        self.changes = changes
        self.last = -1

    def start(self, j: int) -> int:
        return int(self.span[j * self.want])


def plan_span(cache: ShapeCache, at: int, want: int, searches: int) -> tuple[np.ndarray, int] | None:
    """The sorted feasible rows of up to ``searches`` searches after the one whose window began
    at index ``at`` of the shape's sorted feasible rows and took ``want`` of them, with the
    sentinel of the last (where it leaves the start), and how many searches that is; or None.

    Windows follow each other round the sorted rows, wrapping as the search wraps: each starts at
    the previous one's sentinel. They and their sentinels stop short of the first window's rows
    (where its task goes), so no planned window holds a node a planned task was placed on.
    """
    ok_rows = cache.ok_rows
    total = len(ok_rows)
    count = min(searches, (total - want - 1) // want)
    if count < 1:
        return None
    first = at + want
    return ok_rows.take(np.arange(first, first + count * want + 1), mode="wrap"), count
