"""A job's JobSpec carried to its next derivation when only its pods and its PodGroup's status moved.

The scheduler cache derives a job again whenever one of its pods is added, bound, ends or goes, or
its PodGroup changes (``SchedulerCache._derive_job``): a replay's job about four times in its life,
each time with a new PodGroup version whose status alone moved (phase, conditions). Every field of
the JobSpec but ``tasks``, ``phase`` and ``conditions`` is a function of the PodGroup without its
status, the queues, the builder and the dimensions (``_Builder._job`` reads of the tasks only their number, in a
problem's text). So while those did not move, the last spec's fields are taken as they are and
only the tasks, the phase and the conditions are read again, as the builder reads them: no
quantities parsed again, no request vector, no timestamp, no dataclass ``__init__``.

:class:`JobHeaders` keeps the last spec derived for each job with the PodGroup and the queue table
it came from: the queue table is compared by identity (the cache makes a new one when a Queue
changes), the PodGroup by value but for ``status`` (as ``pod_versions.task_again`` compares a pod's
versions; objects handed to the cache are not changed in place by their senders but for a status).
The cache drops every entry on a rebuild (a new builder and dimensions); a derivation that reported a problem is
never kept.
"""

from __future__ import annotations

from operator import attrgetter
from typing import Any, Mapping

from member_agent.scheduler.framework.pod_versions import same_but
from member_agent.scheduler.framework.snapshot import JobSpec, QueueSpec, TaskSpec

_UID = attrgetter("uid")
_STATUS = frozenset({"status"})


class JobHeaders:
    """Per job key: (PodGroup object, queue table, the spec derived from them)."""

    __slots__ = ("_kept",)

    def __init__(self) -> None:
        self._kept: dict[str, tuple[Mapping[str, Any], Mapping[str, QueueSpec], JobSpec]] = {}

    def again(self, job: str, pg: Mapping[str, Any], queues: Mapping[str, QueueSpec],
              tasks: list[TaskSpec]) -> JobSpec | None:
        """``job``'s spec with ``tasks`` when the last one kept came from ``queues`` itself and a
        PodGroup equal to ``pg`` but for its status (``tasks`` sorted by uid in place, as the
        builder sorts them; the phase and conditions read from ``pg``'s status); else None."""
        kept = self._kept.get(job)
        if kept is None or kept[1] is not queues or not same_but(kept[0], pg, _STATUS):
            return None
        tasks.sort(key=_UID)
        # the frozen dataclass's fields (in their order) with the moved ones replaced: the generated
        # __init__ sets each of its 17 fields through object.__setattr__
        clone = object.__new__(JobSpec)
        state = clone.__dict__
        state.update(kept[2].__dict__)
        status = pg.get("status") or {}
        state["phase"] = str(status.get("phase") or "")
        state["conditions"] = tuple(status.get("conditions") or ())
        state["tasks"] = tuple(tasks)
        state["memo"] = {}  # a memo of its own, as ``dataclasses.replace`` would give
        return clone

    def keep(self, job: str, pg: Mapping[str, Any], queues: Mapping[str, QueueSpec], spec: JobSpec) -> None:
        self._kept[job] = (pg, queues, spec)

    def drop(self, job: str) -> None:
        self._kept.pop(job, None)
