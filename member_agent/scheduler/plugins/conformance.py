"""``conformance``: never evict critical pods or kube-system pods (volcano.md §6.3)."""

from __future__ import annotations

from typing import Any

from member_agent.scheduler.framework.infos import TaskInfo
from member_agent.scheduler.framework.interface import Point
from member_agent.scheduler.framework.session import Session
from member_agent.scheduler.framework.status import Vote

NAME = "conformance"
ARGUMENTS = ()
CRITICAL = frozenset({"system-cluster-critical", "system-node-critical"})


def evictable(_preemptor: TaskInfo, candidates: list[TaskInfo]) -> tuple[list[TaskInfo], Vote]:
    keep = [
        t for t in candidates
        if t.spec.priority_class_name not in CRITICAL and t.spec.namespace != "kube-system"
    ]
    return keep, Vote.PERMIT


class ConformancePlugin:
    name = NAME

    def on_session_open(self, ssn: Session) -> None:
        ssn.add(Point.PREEMPTABLE, NAME, evictable)
        ssn.add(Point.RECLAIMABLE, NAME, evictable)

    def on_session_close(self, ssn: Session) -> None:
        pass


def new(args: dict[str, Any]) -> ConformancePlugin:
    return ConformancePlugin()
