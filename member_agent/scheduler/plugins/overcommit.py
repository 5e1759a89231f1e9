"""``overcommit``: admit jobs while the cluster, inflated by a factor, has room (§6.13).

``idle = total × overcommit-factor − Σ used``; a PodGroup with ``minResources`` is
enqueueable while ``inqueue + minResources <= idle`` on the dimensions it names, where
``inqueue`` counts the full minimum of every Inqueue PodGroup.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from member_agent.scheduler.framework.arguments import Argument
from member_agent.scheduler.framework.dims import Vector, le_on_requested
from member_agent.scheduler.framework.infos import JobInfo
from member_agent.scheduler.framework.interface import Point
from member_agent.scheduler.framework.memo import LastOf
from member_agent.scheduler.framework.session import Session
from member_agent.scheduler.framework.snapshot import NodeTable
from member_agent.scheduler.framework.status import Vote
from member_agent.scheduler.plugins.queue_usage import deduct_gated, total_inqueue

NAME = "overcommit"
ARGUMENTS = (Argument("overcommit-factor", float, 1.2),)
DEFAULT_FACTOR = 1.2


class OvercommitPlugin:
    name = NAME

    def __init__(self, args: dict[str, Any]) -> None:
        factor = float(args["overcommit-factor"])
        self.factor = factor if factor >= 1.0 else DEFAULT_FACTOR

    def on_session_open(self, ssn: Session) -> None:
        self.ssn = ssn
        self._idle: Vector | None = None
        self._inqueue: Vector | None = None
        #: The opening's shared sums (``Session.open_memo``; proportion fills them after this plugin opens).
        self._memo: dict[str, Any] | None = ssn.open_memo
        if not ssn.enqueue_first:
            self._values()
        # Else worked out when enqueue first asks or admits: only its callbacks read them, it runs
        # first (so its first call sees the opening state), and about half a replay's sessions have
        # no Pending job to enqueue.
        ssn.add(Point.JOB_ENQUEUEABLE, NAME, self._enqueueable)
        ssn.add(Point.JOB_ENQUEUED, NAME, self._enqueued)

    def _values(self) -> tuple[Vector, Vector]:
        """``idle`` and ``inqueue``, both worked out from the opening state on first use."""
        if self._idle is None or self._inqueue is None:
            ssn = self.ssn
            self._idle = ssn.total * self.factor - _used(ssn)
            self._inqueue = total_inqueue(ssn, full_min_for_inqueue=True, memo=self._memo)
            self._memo = None
        return self._idle, self._inqueue

    @property
    def idle(self) -> Vector:
        return self._values()[0]

    @property
    def inqueue(self) -> Vector:
        return self._values()[1]

    @inqueue.setter
    def inqueue(self, value: Vector) -> None:
        self._inqueue = value

    def _enqueueable(self, job: JobInfo) -> Vote:
        min_req = job.spec.min_resources
        if min_req is None:
            return Vote.PERMIT
        need = self.inqueue + min_req
        dims = self.ssn.dims
        if le_on_requested(need, self.idle, min_req, dims.is_pods):
            return Vote.PERMIT
        over = [dims.names[i] for i in np.flatnonzero((min_req > 0) & ~dims.is_pods & (need > self.idle))]
        job.job_fit_error = f"resource in cluster is overused: overused {', '.join(over)}"
        return Vote.REJECT

    def _enqueued(self, job: JobInfo) -> None:
        self._values()  # worked out before enqueue moves the job to Inqueue
        if job.spec.min_resources is not None:
            self.inqueue = self.inqueue + deduct_gated(job, job.spec.min_resources)

    def on_session_close(self, ssn: Session) -> None:
        pass


def _used(ssn: Session) -> Vector:
    """``used`` summed over the nodes (read-only). The sum of the session's copy of its node table's
    ``used`` while no row changed since (every change is in ``ssn.changes``), so it is remembered
    per table: the cache hands an unchanged table to the next snapshot (about two sessions in five
    of a replay), where the sum over a thousand rows was a sixth of this plugin's opening."""
    if not len(ssn.node_names):
        return ssn.dims.zeros()
    if ssn.changes:
        summed: Vector = ssn.used.sum(axis=0)
        return summed
    return _USED.get(ssn.nodes, lambda _nodes: _frozen(ssn.used.sum(axis=0)))


def _frozen(values: Vector) -> Vector:
    values.setflags(write=False)
    return values


#: The last node table summed and its ``used`` total.
_USED: LastOf[NodeTable, Vector] = LastOf()


def new(args: dict[str, Any]) -> OvercommitPlugin:
    return OvercommitPlugin(args)
