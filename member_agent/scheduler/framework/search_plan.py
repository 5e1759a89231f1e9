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
way, with the same answer. A shape with at most twice ``numNodesToFind`` feasible rows wraps at
once: :class:`RingPlan` plans its windows round the ring, evaluating a placed node again when a
window reaches it; :class:`StandingWindow` covers a shape whose window holds every feasible row.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

import numpy as np

if TYPE_CHECKING:
    from member_agent.scheduler.framework.infos import TaskInfo
    from member_agent.scheduler.framework.session import Session
    from member_agent.scheduler.framework.shape_cache import ShapeCache


class NodeSearch(Protocol):
    """What a plan uses of ``node_search.NodeSearch`` (which imports this module)."""

    ssn: Session
    role_errors: dict[str, np.ndarray]

    def _role_key(self, job: str, role: str) -> str: ...

    def _mark_failed(self, role_key: str, role: np.ndarray | None, cache: ShapeCache, start: int,
                     scanned: int) -> np.ndarray | None: ...

    def best_feasible(self, task: TaskInfo, candidates: np.ndarray) -> tuple[int, bool]: ...

    def top(self, task: TaskInfo, group: np.ndarray, scores: np.ndarray) -> int: ...


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

    def search(self, search: NodeSearch, task: TaskInfo) -> tuple[int, bool] | None:
        """The next planned search's node for ``task`` and whether it fits the node's Idle, with the
        start moved and the failures marked; None when the session is not as the plan assumed."""
        ssn = search.ssn
        j = self.next
        changes = ssn.changes
        if (j >= self.count or len(changes) != self.changes or (self.last >= 0 and changes[-1] != self.last)
                or task.spec.shape != self.shape or task.job.uid != self.job or task.spec.role != self.role
                or ssn.node_cursor != self.start(j) or ssn.shape_caches.get(task.spec.shape) is not self.cache):
            return None
        want = self.want
        lo = j * want
        start, end = ssn.node_cursor, int(self.span[lo + want])  # the cursor is the window's start (checked)
        n = len(ssn.node_names)
        scanned = (end - start) % n
        role_key = search._role_key(self.job, self.role)
        if role_key:
            search._mark_failed(role_key, search.role_errors.get(role_key), self.cache, start, scanned)
        self.cache.density = max(want / scanned, 1 / n)  # as the search sets it (only its cost depends on it)
        ssn.node_cursor = end
        row, fit_idle = search.best_feasible(task, self.span[lo:lo + want])
        self.next = j + 1
        self.changes = len(changes) + 1
        self.last = row
        return row, fit_idle


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


class RingPlan:
    """The searches after one whose window took ``want`` of a shape's T sorted feasible rows when
    ``want`` < T <= 2 * ``want`` (:func:`plan_span` plans none: the second window already wraps onto
    the first). Each window is the next ``want`` rows of those sorted rows round the ring, with the
    sentinel after them, as long as every row this plan's tasks were placed on that lies in a window
    or on its sentinel is still feasible: rows nobody touched keep their entries, so the ordinary
    search (which evaluates every placed row again, locates the start and slices) finds the same
    window, start and marks. A placed row is evaluated again only when a window reaches it (or its
    sentinel); one that left the feasible rows there leaves the plan's rows too, and the window
    reaches one row further, as the ordinary search's does over the shape's sorted feasible rows.
    Made only after a trusted search; the rows evaluated again were feasible when their tasks were
    placed, so none turns feasible (``rises`` stands) and the role's marks stay trusted, as the
    ordinary search would find them.
    """

    __slots__ = ("job", "role", "shape", "cache", "rows", "at", "want", "count", "next", "changes", "last",
                 "placed")

    def __init__(self, job: str, role: str, shape: object, cache: ShapeCache, at: int, want: int, count: int,
                 changes: int) -> None:
        self.job, self.role, self.shape = job, role, shape
        self.cache = cache
        self.rows = cache.ok_rows  # the sorted feasible rows the plan was made on (never changed in place)
        self.at = (at + want) % len(self.rows)  # where the next window starts, in ``rows``
        self.want = want
        self.count = count
        self.next = 0
        self.changes = changes  # ``len(ssn.changes)`` expected: the previous search's placement only
        self.last = -1  # the row the previous planned search answered (-1: the search that made the plan)
        #: Indices in ``rows`` of the nodes this job's searches were placed on that no window reached since.
        self.placed: list[int] = []

    def search(self, search: NodeSearch, task: TaskInfo) -> tuple[int, bool] | None:
        ssn = search.ssn
        changes = ssn.changes
        cache, rows, at, want = self.cache, self.rows, self.at, self.want
        if (self.next >= self.count or len(changes) != self.changes or (self.last >= 0 and changes[-1] != self.last)
                or task.spec.shape != self.shape or task.job.uid != self.job or task.spec.role != self.role
                or ssn.node_cursor != rows[at] or ssn.shape_caches.get(self.shape) is not cache):
            return None
        total = len(rows)
        row = changes[-1]
        index = int(rows.searchsorted(row))
        if index == total or rows[index] != row:  # placed off the planned rows: the ordinary search answers
            return None
        placed = self.placed
        placed.append(index)
        cache.refresh(ssn, task)  # the placed row marked stale, evaluated when a window reaches it
        ok = cache.ok
        gone_rows: list[int] = []
        i = 0
        while i < len(placed):
            if (placed[i] - at) % total > want:  # beyond this window and its sentinel: left stale
                i += 1
                continue
            gone = placed.pop(i)
            row = int(rows[gone])
            cache.ensure_span(ssn, task, row, row + 1)  # (nothing to do for a node placed on twice)
            if ok[row]:  # current and feasible, until placed on again
                continue
            # Full for the shape now: out of the rows, and the window reaches one row further.
            gone_rows.append(row)
            rows = np.concatenate((rows[:gone], rows[gone + 1:]))
            total -= 1
            if total <= want:  # the window holds every feasible row: the ordinary search (standing)
                return None
            at = (at - 1 if gone < at else at) % total
            placed = [j - (j > gone) for j in placed if j != gone]
            i = 0  # the span moved: check the placed rows again
        self.rows, self.placed = rows, placed
        start = ssn.node_cursor
        end = int(rows[(at + want) % total])
        n = len(ok)
        scanned = (end - start) % n
        role_key = search._role_key(self.job, self.role)
        if role_key:
            role = search.role_errors.get(role_key)
            # The first search's window and this one's took 2 * want >= T feasible rows: together their
            # spans went round the ring. After them every row's failure is marked but those of the
            # placed rows, which only this loop finds (each once, then out of the rows).
            if self.next == 0 or role is None:
                search._mark_failed(role_key, role, cache, start, scanned)
            elif gone_rows:
                role[gone_rows] = True
        cache.density = max(want / scanned, 1 / n)  # as the search sets it (only its cost depends on it)
        ssn.node_cursor = end
        window = rows[at:at + want] if at + want <= total else np.concatenate((rows[at:], rows[:at + want - total]))
        best, fit_idle = search.best_feasible(task, window)
        self.at = (at + want) % total
        self.next += 1
        self.changes = len(changes) + 1
        self.last = best
        return best, fit_idle


class StandingWindow:
    """The searches after one whose window held every feasible row of the shape (a shape with at
    most ``numNodesToFind`` of them, e.g. a small pool): such a search visits every row, so the
    start stays where it was and the window is the shape's sorted feasible rows from it, wrapping.

    Placing the task changes only its own node, a row of that window. So the next sibling's
    search (same job, role and shape cache, the cursor unchanged, nothing else changed since)
    takes the same window less that node if it is no longer feasible, once the node is evaluated
    again; the role's failure marks gain at most that node. The ordinary search would locate the
    start in the sorted rows, slice and rotate them and mark every row again, for the same answer.
    Made only after a search that checked no sibling failures on the window (``trusted``): the
    node it drops was feasible, so no row turns feasible and the window needs no check later.
    """

    __slots__ = ("job", "role", "shape", "cache", "start", "order", "changes", "role_key", "group", "scores", "at",
                 "best")

    def __init__(self, job: str, role: str, shape: object, cache: ShapeCache, start: int, order: np.ndarray,
                 changes: int, role_key: str) -> None:
        self.job, self.role, self.shape = job, role, shape
        self.cache = cache
        self.start = start
        self.order = order  # the window: every feasible row, in visiting order from ``start``
        self.changes = changes  # ``len(ssn.changes)`` expected: one placement since the last search
        self.role_key = role_key
        #: The last ranking (:meth:`_rank`): the window's rows that fit Idle (two or more), their
        #: row-local scores, and the index and row of the best; None until a standing search ranked.
        self.group: np.ndarray | None = None
        self.scores: np.ndarray = order[:0]
        self.at = self.best = -1

    def search(self, search: NodeSearch, task: TaskInfo) -> tuple[int, bool] | None:
        ssn = search.ssn
        changes = ssn.changes
        cache = self.cache
        if (len(changes) != self.changes or task.spec.shape != self.shape or task.job.uid != self.job
                or task.spec.role != self.role or ssn.node_cursor != self.start
                or ssn.shape_caches.get(self.shape) is not cache or cache.missing):
            return None
        row = changes[-1]
        if not cache.ok[row]:  # not a row of the window: the ordinary search answers
            return None
        cache.refresh(ssn, task)  # the one change: the row marked stale, evaluated next
        cache.ensure_span(ssn, task, row, row + 1)
        order = self.order
        if not cache.ok[row]:  # the node is full for the shape now: out of the window, a failure for siblings
            order = order[order != row]
            if self.role_key:
                search._mark_failed(self.role_key, search.role_errors.get(self.role_key), cache, self.start,
                                    len(cache.ok))
            if not len(order):  # nothing left: the ordinary search reports why (the same marks)
                return None
            self.order = order
        cache.density = max(len(order), 1) / len(cache.ok)  # as the search sets it (only its cost depends on it)
        best, fit_idle = self._rank(search, task, order, row)
        self.changes = len(changes) + 1
        return best, fit_idle

    def _rank(self, search: NodeSearch, task: TaskInfo, order: np.ndarray, row: int) -> tuple[int, bool]:
        """``search.best_feasible(task, order)``. When the last task went to the node this window
        ranked best, only that row of the Idle group changed: its score is updated, or it leaves
        the group, instead of gathering the group and its scores again."""
        cache = self.cache
        group = self.group
        if group is not None and row == self.best:
            at = self.at
            if cache.ok[row] and cache.fit_idle[row]:
                self.scores[at] = cache.score[row]
            else:
                group = np.concatenate((group[:at], group[at + 1:]))  # slices joined: np.delete costs more
                self.scores = np.concatenate((self.scores[:at], self.scores[at + 1:]))
        elif len(order) >= 2:
            group = order[cache.fit_idle[order]]
            self.scores = cache.score[group]
        if group is None or len(group) < 2 or len(order) < 2:  # best_feasible's other cases
            self.group = None
            return search.best_feasible(task, order)
        self.at = at = search.top(task, group, self.scores)
        self.group = group
        self.best = int(group[at])
        return self.best, True
