"""``deadline``: the seed's deadline SLO — jobs nearest their deadline are served first.

A job opts in with the annotation ``scheduling.volcano.sh/slo-deadline`` (RFC 3339) on its
Volcano Job, which the job controller copies to the PodGroup. Its expected run time is
``scheduling.volcano.sh/slo-expected-duration`` (Go duration) or the plugin argument
``deadline.default-duration`` (default ``1h``).

* remaining work ``W`` = expected run time × (tasks not yet started / tasks);
* urgency = ``W / (deadline − now)`` (infinite once the deadline has passed with work left);
* slack factor ``s = min(1, urgency)``: 0 with plenty of slack, 1 with none left;
* priority score = fair-share score × (1 − s), lower first, where the fair-share score is
  the job's dominant share of the cluster (allocated + pending requests over the total).

``JobOrder`` compares priority scores when at least one of the two jobs has a deadline (a
job without one has ``s = 0``); ``QueueOrder`` does the same for queues (the queue's
dominant allocated share × (1 − the largest s of its jobs)) when a queue has SLO jobs, so
the SLO weight overrides fair share between queues. Put ``deadline`` in a tier before
``drf``/``proportion`` for that. The clock is the session's (``ssn.now``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from member_agent.scheduler.framework.arguments import Argument
from member_agent.scheduler.framework.infos import JobInfo
from member_agent.scheduler.framework.interface import Point
from member_agent.scheduler.framework.session import Session
from member_agent.scheduler.framework.status import ALLOCATED_STATUSES, READY_STATUSES, TaskStatus
from member_agent.scheduler.plugins.slo_time import parse_duration, parse_instant

NAME = "deadline"
ARGUMENTS = (Argument("deadline.default-duration", str, "1h"),)
DEADLINE = "scheduling.volcano.sh/slo-deadline"
EXPECTED = "scheduling.volcano.sh/slo-expected-duration"
S = TaskStatus


def slack_factor(remaining_work: float, deadline: float, now: float) -> float:
    """``min(1, W / (deadline − now))``; 1 when the deadline passed with work left."""
    if remaining_work <= 0:
        return 0.0
    left = deadline - now
    if left <= 0:
        return 1.0
    return min(1.0, remaining_work / left)


class DeadlinePlugin:
    name = NAME

    def __init__(self, args: dict[str, Any]) -> None:
        self.default_text = str(args["deadline.default-duration"])
        self.slack: dict[str, float] = {}
        self.share: dict[str, float] = {}
        self.queue_score: dict[str, float] = {}
        self.queue_slack: dict[str, float] = {}

    def on_session_open(self, ssn: Session) -> None:
        try:
            default = parse_duration(self.default_text)
        except ValueError as exc:
            ssn.warn(f"plugin {NAME}: argument deadline.default-duration: {exc}; using 1h")
            default = 3600.0
        total = np.where(ssn.total > 0, ssn.total, np.inf)
        total[ssn.dims.PODS] = np.inf
        queue_alloc: dict[str, np.ndarray] = {}
        queue_slack: dict[str, float] = {}
        for job in ssn.jobs.values():
            held = ssn.dims.zeros()
            wanted = ssn.dims.zeros()
            for task in job.tasks:
                if task.status in ALLOCATED_STATUSES:
                    held += task.spec.request
                elif task.status in (S.PENDING, S.PIPELINED):
                    wanted += task.spec.request
            queue_alloc[job.queue] = queue_alloc.get(job.queue, ssn.dims.zeros()) + held
            self.share[job.uid] = float(np.max((held + wanted) / total))
            text = job.spec.annotations.get(DEADLINE)
            if not text:
                continue
            try:
                deadline = parse_instant(text)
                expected_text = job.spec.annotations.get(EXPECTED)
                expected = parse_duration(expected_text) if expected_text else default
            except ValueError as exc:
                ssn.warn(f"PodGroup {job.uid}: {exc}; deadline SLO ignored")
                continue
            started = sum(1 for t in job.tasks if t.status in READY_STATUSES)
            remaining = expected * (len(job.tasks) - started) / max(1, len(job.tasks))
            s = slack_factor(remaining, deadline, ssn.now)
            self.slack[job.uid] = s
            queue_slack[job.queue] = max(queue_slack.get(job.queue, 0.0), s)
            ssn.log(4, f"Job <{job.uid}> deadline SLO: remaining work {remaining:.0f}s, "
                       f"{deadline - ssn.now:.0f}s to deadline, slack factor {s:.3f}")
        self.queue_slack = queue_slack
        if queue_slack:  # every queue gets a score once some queue has SLO jobs
            for queue, alloc in queue_alloc.items():
                self.queue_score[queue] = float(np.max(alloc / total)) * (1.0 - queue_slack.get(queue, 0.0))
        if self.slack:
            ssn.add(Point.JOB_ORDER, NAME, self._job_order)
            ssn.add(Point.QUEUE_ORDER, NAME, self._queue_order)

    def score(self, job: JobInfo) -> float:
        return self.share.get(job.uid, 0.0) * (1.0 - self.slack.get(job.uid, 0.0))

    def _job_order(self, left: JobInfo, right: JobInfo) -> int:
        if left.uid not in self.slack and right.uid not in self.slack:
            return 0
        ls, rs = self.score(left), self.score(right)
        if ls != rs:
            return -1 if ls < rs else 1
        lk, rk = self.slack.get(left.uid, 0.0), self.slack.get(right.uid, 0.0)
        return 0 if lk == rk else (-1 if lk > rk else 1)

    def _queue_order(self, left: str, right: str) -> int:
        ls, rs = self.queue_score.get(left), self.queue_score.get(right)
        if ls is None or rs is None:
            return 0
        if ls == rs:  # equal shares: the queue with less slack first
            lk, rk = self.queue_slack.get(left, 0.0), self.queue_slack.get(right, 0.0)
            return 0 if lk == rk else (-1 if lk > rk else 1)
        return -1 if ls < rs else 1

    def on_session_close(self, ssn: Session) -> None:
        pass


def new(args: dict[str, Any]) -> DeadlinePlugin:
    return DeadlinePlugin(args)
