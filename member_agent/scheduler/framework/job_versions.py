"""A job's JobSpec carried to its next derivation when only its pods moved.

The scheduler cache derives a job again whenever one of its pods is added, bound, ends or goes
(``SchedulerCache._derive_job``), and a replay's job is derived about five times in its life.
Every field of the JobSpec but ``tasks`` is a function of the PodGroup object, the queues and the
builder alone (``_Builder._job`` reads of the tasks only their number, in a problem's text), so
while none of those moved the last spec's fields are taken as they are and only the tasks are
new: no quantities parsed again, no request vector, no timestamp, no dataclass ``__init__``.

:class:`JobHeaders` keeps the last spec derived for each job with the PodGroup object and the
queue table it came from, compared by identity; the cache drops a job's entry on every event of
its PodGroup (an object changed in place and handed again is not the same derivation) and all of
them on a rebuild (a new builder). A derivation that reported a problem is never kept.
"""

from __future__ import annotations

from dataclasses import fields
from operator import attrgetter
from typing import Any, Mapping

from member_agent.scheduler.framework.snapshot import JobSpec, QueueSpec, TaskSpec

_UID = attrgetter("uid")
#: the fields ``JobSpec.__init__`` sets (``memo`` is the spec's own, not carried)
_CARRIED = tuple(f.name for f in fields(JobSpec) if f.init and f.name != "tasks")


class JobHeaders:
    """Per job key: (PodGroup object, queue table, the spec derived from them)."""

    __slots__ = ("_kept",)

    def __init__(self) -> None:
        self._kept: dict[str, tuple[Mapping[str, Any], Mapping[str, QueueSpec], JobSpec]] = {}

    def again(self, job: str, pg: Mapping[str, Any], queues: Mapping[str, QueueSpec],
              tasks: list[TaskSpec]) -> JobSpec | None:
        """``job``'s spec with ``tasks`` when the last one kept came from ``pg`` and ``queues``
        themselves (``tasks`` sorted by uid in place, as the builder sorts them); else None."""
        kept = self._kept.get(job)
        if kept is None or kept[0] is not pg or kept[1] is not queues:
            return None
        tasks.sort(key=_UID)
        old = kept[2].__dict__
        clone = object.__new__(JobSpec)
        state = clone.__dict__
        for name in _CARRIED:
            state[name] = old[name]
        state["tasks"] = tuple(tasks)
        state["memo"] = {}  # a memo of its own, as ``dataclasses.replace`` would give
        return clone

    def keep(self, job: str, pg: Mapping[str, Any], queues: Mapping[str, QueueSpec], spec: JobSpec) -> None:
        self._kept[job] = (pg, queues, spec)

    def drop(self, job: str) -> None:
        self._kept.pop(job, None)
