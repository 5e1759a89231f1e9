"""``sla``: a job waiting longer than its limit is admitted and started first (volcano.md §6.12).

The limit is the PodGroup annotation ``volcano.sh/sla-waiting-time`` (or ``sla-waiting-time``),
else the plugin argument ``sla-waiting-time`` (Go duration, e.g. ``30m``). Jobs with a limit
sort before jobs without, earlier deadline (creation + limit) first. Once a job has waited
at least its limit (the session clock minus its creation time), ``JobEnqueueable`` and
``JobPipelined`` vote Permit: in sla's tier that admits the job even if later tiers
(overcommit, proportion) would refuse; a Reject earlier in the same tier still wins.
"""

from __future__ import annotations

from typing import Any

from member_agent.scheduler.framework.arguments import Argument
from member_agent.scheduler.framework.infos import JobInfo
from member_agent.scheduler.framework.interface import Point
from member_agent.scheduler.framework.session import Session
from member_agent.scheduler.framework.status import Vote
from member_agent.scheduler.plugins.slo_time import parse_duration

NAME = "sla"
ARGUMENTS = (Argument("sla-waiting-time", str, ""),)
ANNOTATIONS = ("volcano.sh/sla-waiting-time", "sla-waiting-time")


class SlaPlugin:
    name = NAME

    def __init__(self, args: dict[str, Any]) -> None:
        self.default_text = str(args["sla-waiting-time"])
        self.limits: dict[str, float] = {}

    def on_session_open(self, ssn: Session) -> None:
        self.now = ssn.now
        default: float | None = None
        if self.default_text:
            try:
                default = parse_duration(self.default_text)
            except ValueError as exc:
                ssn.warn(f"plugin {NAME}: argument sla-waiting-time: {exc}; ignored")
        for job in ssn.jobs.values():
            limit = default
            for key in ANNOTATIONS:
                text = job.spec.annotations.get(key)
                if text:
                    try:
                        limit = parse_duration(text)
                    except ValueError as exc:
                        ssn.warn(f"PodGroup {job.uid}: annotation {key}: {exc}; ignored")
                    break
            if limit is not None:
                self.limits[job.uid] = limit
        ssn.add(Point.JOB_ORDER, NAME, self._job_order)
        ssn.add(Point.JOB_ENQUEUEABLE, NAME, self._permit_when_late)
        ssn.add(Point.JOB_PIPELINED, NAME, self._permit_when_late)

    def _job_order(self, left: JobInfo, right: JobInfo) -> int:
        ll, rl = self.limits.get(left.uid), self.limits.get(right.uid)
        if ll is None and rl is None:
            return 0
        if ll is None or rl is None:
            return -1 if rl is None else 1
        ld, rd = left.spec.creation + ll, right.spec.creation + rl
        return 0 if ld == rd else (-1 if ld < rd else 1)

    def _permit_when_late(self, job: JobInfo) -> Vote:
        limit = self.limits.get(job.uid)
        if limit is None or self.now - job.spec.creation < limit:
            return Vote.ABSTAIN
        return Vote.PERMIT

    def on_session_close(self, ssn: Session) -> None:
        pass


def new(args: dict[str, Any]) -> SlaPlugin:
    return SlaPlugin(args)
