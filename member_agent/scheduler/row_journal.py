"""The node rows a scheduler cache's events wrote, in order, and where the log stood at each snapshot.

A row's accounting (:mod:`node_accounts`), its folded devices (:mod:`resident_devices`) and the
roles its pods have in a session's device replay (a job's pods, or residents when their job has no
spec) change between two snapshots only through the cache's events: a pod added, changed or
deleted (written where it is accounted or folded), and a job gaining or losing its spec (its pods'
rows, ``SchedulerCache._derive_dirty_jobs``). Each of those writers appends the row it wrote to
:attr:`RowJournal.rows`, and :meth:`~RowJournal.stamp` notes the log's length for each snapshot
the cache hands out, so :meth:`~RowJournal.written` gives the rows written between two snapshots
without comparing them (``shape_carry``). A rebuild (a Node or PriorityClass event, a new resource)
starts a new journal; a snapshot stamped twice at different lengths is not vouched for.
"""

from __future__ import annotations

from typing import Any
from weakref import WeakKeyDictionary

#: Snapshots stamped and kept (by identity): the carry asks about the last session's and this one's.
MAX_STAMPS = 8
#: Entries kept before the log is trimmed to the oldest stamp still kept.
TRIM_AT = 1 << 15

#: One journal per scheduler cache, found through the QuiescentLedger it hands every snapshot.
_JOURNALS: WeakKeyDictionary[Any, RowJournal] = WeakKeyDictionary()


class RowJournal:
    """Rows written by the cache's events, and the log's position at each stamped snapshot."""

    __slots__ = ("rows", "_start", "_stamps")

    def __init__(self) -> None:
        self.rows: list[int] = []  # appended by every writer of a row's state (see the module docstring)
        self._start = 0  # the position of ``rows[0]`` (entries before the oldest stamp are trimmed)
        self._stamps: dict[int, tuple[Any, int]] = {}  # id(snapshot) -> (snapshot, position); -1: not vouched

    def stamp(self, snapshot: Any) -> None:
        """Note the log's position for ``snapshot``, just handed out by the cache."""
        position = self._start + len(self.rows)
        found = self._stamps.get(id(snapshot))
        if found is not None and found[0] is snapshot:
            if found[1] != position:  # handed out again after a write: no position is right for it
                self._stamps[id(snapshot)] = (snapshot, -1)
            return
        self._stamps[id(snapshot)] = (snapshot, position)
        if len(self._stamps) > MAX_STAMPS:
            del self._stamps[next(iter(self._stamps))]
        if len(self.rows) > TRIM_AT:
            oldest = min((p for _t, p in self._stamps.values() if p >= 0), default=position)
            del self.rows[:oldest - self._start]
            self._start = oldest

    def written(self, old: Any, new: Any) -> list[int] | None:
        """The rows written between snapshots ``old`` and ``new`` (None: not known)."""
        a = self._stamps.get(id(old))
        b = self._stamps.get(id(new))
        if a is None or b is None or a[0] is not old or b[0] is not new:
            return None
        if a[1] < self._start or b[1] < a[1]:
            return None
        return self.rows[a[1] - self._start:b[1] - self._start]


def journal_of(ledger: Any) -> RowJournal | None:
    """The journal of the scheduler cache whose snapshots share ``ledger`` (None: not from a cache)."""
    return _JOURNALS.get(ledger) if ledger is not None else None


def attach(ledger: Any, journal: RowJournal) -> None:
    _JOURNALS[ledger] = journal
