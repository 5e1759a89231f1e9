"""The snapshot's jobs in key order, and each queue's first job, kept as jobs come and go.

A snapshot lists its jobs sorted by key and its queues by their first job (``Snapshot.queue_order``).
Sorting every job at every snapshot cost more than deriving the one or two jobs a replay event
changed, so :class:`JobRoster` keeps both orders by insertion (``bisect``) and hands every snapshot
the same tuple until a job changes.
"""

from __future__ import annotations

import bisect

from member_agent.scheduler.framework.snapshot import JobSpec


class JobRoster:
    """Jobs with a spec, sorted by key, and the jobs of each queue, sorted."""

    __slots__ = ("order", "specs", "listed", "queue_jobs", "jobs", "queue_order", "_firsts_moved")

    def __init__(self) -> None:
        self.order: list[str] = []  # the keys of the jobs that have a spec, sorted
        self.specs: dict[str, JobSpec] = {}
        #: ``order``'s specs, kept beside it: the snapshot's tuple is one copy of this list (a lookup
        #: per job every snapshot was most of deriving a replay's one or two changed jobs)
        self.listed: list[JobSpec] = []
        self.queue_jobs: dict[str, list[str]] = {}  # queue -> its jobs' keys, sorted
        self.jobs: tuple[JobSpec, ...] = ()  # the snapshot's job tuple, as of the last :meth:`settle`
        self.queue_order: tuple[str, ...] = ()  # queues by their first job, as of the last :meth:`settle`
        #: whether a queue's first job changed since the last :meth:`settle` (most puts replace a
        #: job's spec in place, or add or drop one behind its queue's first)
        self._firsts_moved = False

    def put(self, job: str, new: JobSpec | None) -> JobSpec | None:
        """Record ``job``'s spec (None: it has none now, or is gone); returns the spec it had."""
        order, listed, specs = self.order, self.listed, self.specs
        old = specs.get(job)
        if old is not None:
            members = self.queue_jobs[old.queue]
            at = bisect.bisect_left(members, job)
            del members[at]
            self._firsts_moved |= at == 0
        if new is not None:
            members = self.queue_jobs.setdefault(new.queue, [])
            at = bisect.bisect_left(members, job)
            members.insert(at, job)
            self._firsts_moved |= at == 0
            at = bisect.bisect_left(order, job)
            if old is None:
                order.insert(at, job)
                listed.insert(at, new)
            else:
                listed[at] = new
            specs[job] = new
        elif old is not None:
            at = bisect.bisect_left(order, job)
            del order[at], listed[at], specs[job]
        return old

    def settle(self) -> None:
        """Make :attr:`jobs` and :attr:`queue_order` current after a round of :meth:`put`."""
        self.jobs = tuple(self.listed)
        if self._firsts_moved:
            firsts = {queue: members[0] for queue, members in self.queue_jobs.items() if members}
            self.queue_order = tuple(sorted(firsts, key=firsts.__getitem__))
            self._firsts_moved = False
