"""``tdm``: time-division multiplexing of revocable nodes (volcano.md §6.14).

Nodes labelled ``volcano.sh/revocable-zone: <zone>`` belong to a zone that batch work may use
only inside its window, ``tdm.revocable-zone.<zone>: "HH:MM-HH:MM"`` (UTC on the session clock;
an end at or before the start runs into the next day). Pods opt in with the annotation
``volcano.sh/revocable-zone`` (``*`` or the zone name).

* Predicate: non-revocable nodes pass; a revocable node fails (unresolvable) when its zone has
  no window or is outside it, or when the pod did not opt in.
* Node order: 100 for a usable revocable node in its window (fill borrowed capacity first).
* Preemptable: a preemptable pod or a revocable-zone pod never preempts through tdm; victims
  are Running preemptable pods on non-revocable nodes, at most ``ready − minMember`` per job.
* Job order: non-preemptable jobs first. JobPipelined: Permit iff pipelined, else Reject.
  JobStarving: never for preemptable jobs.

``tdm.evict.period`` is accepted (the eviction of pods from closed windows needs the
``shuffle`` action, which is not implemented).
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from member_agent.scheduler.framework.arguments import Argument
from member_agent.scheduler.framework.infos import JobInfo, TaskInfo
from member_agent.scheduler.framework.interface import Point
from member_agent.scheduler.framework.session import Session
from member_agent.scheduler.framework.status import Code, TaskStatus, Vote
from member_agent.scheduler.framework.topology import REVOCABLE_ZONE_ANNOTATION

NAME = "tdm"
ARGUMENTS = (Argument("tdm.evict.period", str, "1m"),)
PREFIXED = {"tdm.revocable-zone.": str}
ZONE_PREFIX = "tdm.revocable-zone."
_WINDOW = re.compile(r"^\s*(\d{1,2}):(\d{2})\s*-\s*(\d{1,2}):(\d{2})\s*$")
DAY = 24 * 60


def parse_window(text: str) -> tuple[int, int]:
    """Minutes after midnight of ``HH:MM-HH:MM``; ValueError naming the text otherwise."""
    match = _WINDOW.match(text)
    if match is None:
        raise ValueError(f"not a window like 08:00-20:00: {text!r}")
    sh, sm, eh, em = (int(g) for g in match.groups())
    if sh > 23 or eh > 23 or sm > 59 or em > 59:
        raise ValueError(f"not a valid time of day in {text!r}")
    return sh * 60 + sm, eh * 60 + em


def in_window(window: tuple[int, int], minute: int) -> bool:
    start, end = window
    if end <= start:  # runs past midnight
        return minute >= start or minute < end
    return start <= minute < end


class TdmPlugin:
    name = NAME

    def __init__(self, args: dict[str, Any]) -> None:
        self.raw = {k[len(ZONE_PREFIX):]: str(v) for k, v in args.items() if k.startswith(ZONE_PREFIX)}

    def on_session_open(self, ssn: Session) -> None:
        minute = int(ssn.now // 60) % DAY
        self.active: dict[str, bool] = {}
        for zone, text in self.raw.items():
            try:
                self.active[zone] = in_window(parse_window(text), minute)
            except ValueError as exc:
                ssn.warn(f"plugin {NAME}: argument {ZONE_PREFIX}{zone}: {exc}; the zone stays closed")
                self.active[zone] = False
        self.zones = [labels.get(REVOCABLE_ZONE_ANNOTATION, "") for labels in ssn.nodes.labels]
        self.closed = ssn.reasons.code("revocable zone is not active now", Code.UNRESOLVABLE)
        self.refused = ssn.reasons.code("not allow to dispatch to revocable node", Code.UNRESOLVABLE)
        ssn.add(Point.PREDICATE, NAME, self._predicate, row=self._predicate_row)
        ssn.add(Point.NODE_ORDER, NAME, self._scores, row=self._score_row)
        ssn.add(Point.PREEMPTABLE, NAME, self._preemptable)
        ssn.add(Point.JOB_ORDER, NAME, self._job_order)
        ssn.add(Point.JOB_PIPELINED, NAME, lambda j: Vote.PERMIT if j.is_pipelined() else Vote.REJECT)
        ssn.add(Point.JOB_STARVING, NAME, lambda j: not j.spec.preemptable and j.counts[TaskStatus.PENDING] > 0)

    @staticmethod
    def _task_zone(task: TaskInfo) -> str:
        return task.spec.extras.annotations.get(REVOCABLE_ZONE_ANNOTATION, "")

    def _predicate_row(self, task: TaskInfo, row: int) -> int:
        zone = self.zones[row]
        if not zone:
            return 0
        if not self.active.get(zone, False):
            return self.closed
        wanted = self._task_zone(task)
        return 0 if wanted in ("*", zone) else self.refused

    def _predicate(self, task: TaskInfo, rows: np.ndarray) -> np.ndarray:
        return np.fromiter((self._predicate_row(task, r) for r in rows.tolist()), dtype=np.int32, count=len(rows))

    def _score_row(self, task: TaskInfo, row: int) -> float:
        zone = self.zones[row]
        usable = bool(zone) and self.active.get(zone, False) and self._task_zone(task) in ("*", zone)
        return 100.0 if usable else 0.0

    def _scores(self, task: TaskInfo, rows: np.ndarray) -> np.ndarray:
        return np.fromiter((self._score_row(task, r) for r in rows.tolist()), dtype=np.float64, count=len(rows))

    def _preemptable(self, preemptor: TaskInfo, preemptees: list[TaskInfo]) -> tuple[list[TaskInfo], Vote]:
        if preemptor.spec.preemptable or self._task_zone(preemptor):
            return [], Vote.REJECT
        left: dict[str, int] = {}
        victims = []
        for task in preemptees:
            if task.status != TaskStatus.RUNNING or not task.spec.preemptable or task.node is None:
                continue
            if self.zones[task.node]:
                continue
            job = task.job
            budget = left.setdefault(job.uid, max(job.ready_num - job.min_available, 0))
            if budget > 0:
                left[job.uid] = budget - 1
                victims.append(task)
        return victims, Vote.PERMIT

    @staticmethod
    def _job_order(left: JobInfo, right: JobInfo) -> int:
        if left.spec.preemptable == right.spec.preemptable:
            return 0
        return 1 if left.spec.preemptable else -1

    def on_session_close(self, ssn: Session) -> None:
        pass


def new(args: dict[str, Any]) -> TdmPlugin:
    return TdmPlugin(args)
