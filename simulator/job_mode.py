"""The job mode of ``caldera simulate``: jobs arrive, run for their duration and leave, in virtual time.

A discrete-event loop over three kinds of events: a job's arrival, a pod's end (``duration``
seconds after it started), and a scheduling period that has work to do. Time advances on the
scheduling period's grid (``period`` seconds, Volcano's ``schedulePeriod`` is 1 s): everything
that happened up to a tick is seen by that tick's session, so arrivals within one period are
coalesced into one session, as they would be in a live cluster. When a session changed
nothing and no event is due, the clock jumps to the next event: idle periods cost nothing.

Each job is divided over the member clusters by a :data:`Divider` (one cluster: the whole job;
several: the federation's placement, :mod:`simulator.federated`); each share runs in a
:class:`~simulator.member.Member` through the agent's job controller and session scheduler.
A job no cluster could ever hold (a pod larger than every node, a gang above the capacity) is
reported as ``Unfittable`` at its arrival; a job still pending when no event is left that
could free room is reported as ``Unschedulable``; neither is left pending for ever.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Protocol

from member_agent.session_gc import relaxed_gc
from simulator.clock import VirtualClock
from simulator.member import Member, Share
from simulator.trace import TraceJob

EPOCH = 1_700_000_000.0
@dataclass
class JobResult:
    """One trace job's outcome; times are seconds from the start of the trace."""

    name: str
    queue: str
    gpus: float
    submit: float
    duration: float
    start: Optional[float] = None
    end: Optional[float] = None
    status: str = "Pending"
    reason: str = ""
    clusters: dict[str, int] = field(default_factory=dict)  # cluster -> pods of the job there
    share_starts: dict[str, float] = field(default_factory=dict)  # cluster -> when its share ran
    open_shares: int = 0

    @property
    def jct(self) -> Optional[float]:
        return None if self.end is None or self.start is None else self.end - self.submit

    @property
    def queueing_delay(self) -> Optional[float]:
        return None if self.start is None else self.start - self.submit


@dataclass
class JobRun:
    """What one job-mode replay measured."""

    jobs: list[JobResult]
    gpus_total: float
    queues: tuple[str, ...]
    #: one row per session: (seconds, GPUs allocated, pending jobs per queue in ``queues`` order)
    series: list[tuple[float, float, tuple[int, ...]]] = field(default_factory=list)
    sessions: int = 0
    #: jobs whose shares spanned several clusters (a two-phase start); None with one cluster
    cross_cluster_jobs: Optional[int] = None
    simulated_seconds: float = 0.0
    wall_seconds: float = 0.0
    #: with ``--queues``: the :class:`simulator.fleet_replay.QueueReplay` (per-queue series, reclaims)
    queue_replay: Optional[Any] = None
    #: simulator/topology.py's summary (tiers spanned), when the clusters have HyperNodes
    topology: Optional[dict[str, Any]] = None


class Divider(Protocol):
    """Splits one job over the members: (member, share manifest, hold for a two-phase start) per
    share, or a reason why no cluster can ever hold it."""

    def __call__(self, job: TraceJob, manifest: dict) -> list[tuple[Member, dict, bool]] | str: ...


class Releaser(Protocol):
    """After a tick's sessions: release (or cancel) held shares, the federation's two-phase start;
    returns the jobs that waited at the federation and were divided now."""

    def __call__(self, now: float) -> list[tuple[TraceJob, list[tuple[Member, dict, bool]]]]: ...


def _tick(t: float, period: float) -> float:
    if math.isinf(t):
        return t
    return math.ceil(t / period - 1e-9) * period


def run_jobs(jobs: list[TraceJob], members: list[Member], divide: Divider, clock: VirtualClock, *,
             period: float = 1.0, coalesce: Optional[float] = None, until: Optional[float] = None,
             release: Optional[Releaser] = None, progress: Optional[Callable[[int, int], None]] = None) -> JobRun:
    """Replay ``jobs`` (sorted by arrival) over ``members`` until every job ended or ``until``.

    Arrivals, pod ends and controller requeues are seen on a grid of ``coalesce`` seconds (default:
    ``period``); a session that leaves work pending is followed by another ``period`` later."""
    with relaxed_gc():  # millions of short-lived objects over the trace's long-lived heap (member_agent/session_gc.py)
        return _replay(jobs, members, divide, clock, period=period, coalesce=coalesce, until=until,
                       release=release, progress=progress)


def _replay(jobs: list[TraceJob], members: list[Member], divide: Divider, clock: VirtualClock, *,
            period: float, coalesce: Optional[float], until: Optional[float], release: Optional[Releaser],
            progress: Optional[Callable[[int, int], None]]) -> JobRun:
    started = time.perf_counter()
    grid = coalesce or period
    queues = tuple(sorted({j.queue for j in jobs} | {"default"}))
    run = JobRun([], sum(m.gpus_total for m in members), queues)
    pending = {q: 0 for q in queues}
    by_share: dict[tuple[str, str], JobResult] = {}
    results: dict[str, JobResult] = {}

    def on_change(member: Member, share: Share, what: str) -> None:
        result = by_share.get((member.name, share.job))
        if result is None:
            return
        now = clock.now() - EPOCH
        if what == "started":
            result.share_starts.setdefault(member.name, now)
        if what == "started" and result.start is None:
            result.start = now  # the first share running; a gang's shares are released together
            result.status = "Running"
            pending[result.queue] -= 1
        elif what in ("ended", "error"):
            result.open_shares -= 1
            if what == "error":
                result.status, result.reason = "Error", share.phase
            if result.open_shares <= 0:
                if result.start is None:
                    pending[result.queue] -= 1
                result.end = now
                result.status = share.phase if result.status != "Error" else "Error"
                done[0] += 1

    for member in members:
        member.on_change = lambda share, what, m=member: on_change(m, share, what)
    done = [0]
    unfittable = 0
    i, t = 0, 0.0
    changed = False
    while True:
        next_arrival = _tick(jobs[i].arrival, grid) if i < len(jobs) else math.inf
        next_finish = min((m.next_finish() - EPOCH for m in members), default=math.inf)
        due = min(next_arrival, _tick(next_finish, grid), _requeue(members, grid))
        if changed:
            due = min(due, t + period)
        if math.isinf(due) or (until is not None and due > until):
            break
        t = max(due, t)
        clock.advance_to(EPOCH + t)
        while i < len(jobs) and jobs[i].arrival <= t + 1e-9:
            submitted = results[jobs[i].name] = _submit(jobs[i], i, divide, run, by_share, pending)
            unfittable += submitted.status == "Unfittable"  # counted here, not walked per tick
            i += 1
        for member in members:
            member.finish_due(EPOCH + t)
            member.reconcile()
        changed = False
        for member in members:
            if member.changed and member.has_pending():
                member.schedule()
                run.sessions += 1
        if release is not None:
            for job, shares in release(EPOCH + t):
                _assign(results[job.name], shares, by_share)
            for member in members:
                member.reconcile()
        # A session (or a release) changed what the next one sees while work is pending: the
        # next period runs one; otherwise the clock jumps to the next event.
        changed = any(m.changed and m.has_pending() for m in members)
        run.series.append((t, sum(m.gpus_allocated for m in members), tuple(pending[q] for q in queues)))
        if progress is not None:
            progress(done[0] + unfittable, len(jobs))
    run.simulated_seconds = t
    _close(run, until)
    run.wall_seconds = time.perf_counter() - started
    return run


def _requeue(members: list[Member], period: float) -> float:
    """The earliest controller requeue (a delayed retry, a TTL) of any share."""
    due = min((m.next_requeue() for m in members), default=math.inf)
    return _tick(due - EPOCH, period) if not math.isinf(due) else math.inf


def _submit(job: TraceJob, index: int, divide: Divider, run: JobRun, by_share: dict[tuple[str, str], JobResult],
            pending: dict[str, int]) -> JobResult:
    result = JobResult(job.name, job.queue, job.gpus, job.arrival, job.duration)
    run.jobs.append(result)
    manifest = job.manifest(uid=f"job-{index:06d}")
    shares = divide(job, manifest)
    if isinstance(shares, str):
        result.status, result.reason, result.end = "Unfittable", shares, None
        return result
    pending[job.queue] += 1
    _assign(result, shares, by_share)  # [] : waits in the federation's queue
    return result


def _assign(result: JobResult, shares: list[tuple[Member, dict, bool]],
            by_share: dict[tuple[str, str], JobResult]) -> None:
    """The job's shares go to their members (again, after a cancelled two-phase start)."""
    result.open_shares = len(shares)
    result.clusters, result.share_starts = {}, {}
    for member, share_manifest, hold in shares:
        by_share[(member.name, result.name)] = result
        result.clusters[member.name] = sum(int(t.get("replicas", 1)) for t in share_manifest["spec"]["tasks"])
        member.submit(result.name, share_manifest, result.duration, hold=hold, clusters=len(shares))


def _close(run: JobRun, until: Optional[float]) -> None:
    """Jobs that never started and never will (no event left that could free room), or cut by --until."""
    for result in run.jobs:
        if result.status == "Pending":
            if until is None:
                result.status = "Unschedulable"
                result.reason = "still pending when no event was left that could free room"
            else:
                result.reason = f"still pending at --until {until:g} s"


def single_cluster(member: Member) -> Divider:
    """The whole job goes to the one cluster, if it could ever hold it."""

    def divide(job: TraceJob, manifest: dict) -> list[tuple[Member, dict, bool]] | str:
        why = member.never_fits(job)
        return why if why else [(member, manifest, False)]

    return divide
