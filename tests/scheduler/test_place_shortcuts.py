"""Placing a task does less per task (issue 41, round 9); each shortcut must give what the plain
computation gives, at every step of a session:

* drf's job shares and proportion's queue shares worked out when read equal the share an update
  per placement kept, after every placement and undo, and a share read before a change is not
  answered after it;
* the votes asked per task or comparison (job and queue order, JobReady, Allocatable,
  PrePredicate) read a flat tuple of the callbacks: equal to the tier rules over the table, and
  flattened again when a callback is registered after a vote;
* ``sorted_tasks``'s column-built sort tuples order tasks as the comparator does;
* ``JobInfo.set_status`` written out for one task moves the counters as ``_count`` (old -1, new
  +1) does, keys in the same order; the copied counters are a job's own;
* an allocate handler removed with ``remove_event_handler`` is no longer called.
"""

from __future__ import annotations

import itertools
from functools import cmp_to_key
from types import SimpleNamespace
from typing import Any

import pytest

from member_agent.scheduler.cycle import open_session, run_cycle
from member_agent.scheduler.framework import tiers as votes
from member_agent.scheduler.framework.builder import build_snapshot
from member_agent.scheduler.framework.clock import FixedClock
from member_agent.scheduler.framework.infos import JobInfo, TaskInfo
from member_agent.scheduler.framework.points import Point
from member_agent.scheduler.framework.session import Session
from member_agent.scheduler.framework.status import TaskStatus
from member_agent.scheduler.plugins.drf_shares import largest_product
from tests.scheduler.test_node_search_bound import CONF
from tests.scheduler.test_search_shortcuts import _decisions, over_full

S = TaskStatus


def queued_over_full() -> list[dict[str, Any]]:
    """``over_full`` with its gangs (minMember: every pod) in three weighted queues: proportion's shares
    move and differ, and gangs that do not fit are discarded (their placements undone)."""
    objects = over_full()
    groups = [o for o in objects if o["kind"] == "PodGroup"]
    sizes = {o["metadata"]["annotations"]["scheduling.k8s.io/group-name"] for o in objects if o["kind"] == "Pod"}
    assert len(sizes) == len(groups)
    for i, group in enumerate(groups):
        group["spec"]["queue"] = f"q{i % 3}"
        group["spec"]["minMember"] = sum(1 for o in objects if o["kind"] == "Pod" and
                                         o["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == group["metadata"]["name"])
    queues = [{"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": f"q{i}"},
               "spec": {"weight": i + 1}} for i in range(3)]
    return queues + objects


def _eager_queue_share(attr: Any) -> float:
    inv = attr.inv_deserved
    return largest_product(attr.allocated.tolist(), inv.tolist()) if inv is not None and attr.inv_any else 0.0


def _check_shares(ssn: Session) -> None:
    drf, proportion = ssn.plugins["drf"], ssn.plugins["proportion"]
    for uid, allocated in drf.shares.allocated.items():
        assert drf.shares.current(uid) == drf.shares.share_of(allocated)
    for attr in proportion.attrs.values():
        if attr.stale:  # the opening's share is water filling's, not the formula's: only changed ones
            assert attr.share == _eager_queue_share(attr)
            assert not attr.stale


def test_shares_worked_out_when_read_equal_the_shares_kept_per_placement(monkeypatch: pytest.MonkeyPatch) -> None:
    checked: list[int] = []
    place, unplace = Session.place, Session.unplace

    def placing(self: Session, task: TaskInfo, row: int, status: TaskStatus) -> None:
        place(self, task, row, status)
        _check_shares(self)
        checked.append(1)

    def unplacing(self: Session, task: TaskInfo) -> None:
        unplace(self, task)
        _check_shares(self)
        checked.append(-1)

    monkeypatch.setattr(Session, "place", placing)
    monkeypatch.setattr(Session, "unplace", unplacing)
    result = run_cycle(build_snapshot(queued_over_full()), CONF, FixedClock())
    assert checked.count(1) > 100 and checked.count(-1) > 10  # placements, and discarded gangs undone
    assert result.bindings


def test_a_share_read_before_a_change_is_not_the_answer_after_it() -> None:
    ssn = open_session(build_snapshot(queued_over_full()), CONF, FixedClock())
    drf, proportion = ssn.plugins["drf"], ssn.plugins["proportion"]
    job = next(j for j in ssn.jobs.values() if j.queue == "q1")
    task = job.tasks[0]
    before = drf.shares.current(job.uid)
    attr = proportion.attrs["q1"]
    queue_before = attr.share
    ssn.place(task, 0, S.ALLOCATED)
    assert drf.shares.current(job.uid) == drf.shares.share_of(drf.shares.allocated[job.uid]) > before
    assert attr.share == _eager_queue_share(attr) != queue_before
    ssn.unplace(task)
    assert drf.shares.current(job.uid) == before
    attr.share = 0.25  # a share set (water filling's) is read back as set, until the next change
    assert attr.share == 0.25 and not attr.stale
    ssn.dispose()


def _job_order(ssn: Session, left: JobInfo, right: JobInfo) -> int:
    """Session.job_order as it read the table before round 9: the tiers' first non-zero, then creation and uid."""
    result = votes.first_nonzero(ssn.callbacks[Point.JOB_ORDER], left, right)
    if result:
        return result
    if left.spec.creation != right.spec.creation:
        return -1 if left.spec.creation < right.spec.creation else 1
    return -1 if left.uid < right.uid else (1 if left.uid > right.uid else 0)


def test_flat_votes_equal_the_tier_rules_and_follow_a_late_registration() -> None:
    ssn = open_session(build_snapshot(queued_over_full()), CONF, FixedClock())
    jobs = list(ssn.jobs.values())[:8]
    jobs[0].set_statuses(list(jobs[0].tasks), S.ALLOCATED)  # one job ready: gang's order tells it apart
    tasks = [j.tasks[-1] for j in jobs[1:]]
    table = ssn.callbacks
    for left, right in itertools.product(jobs, jobs):
        assert ssn.job_order(left, right) == _job_order(ssn, left, right)
    for job in jobs:
        assert ssn.job_ready(job) == votes.all_true(table[Point.JOB_READY], job)
    for task in tasks:
        assert ssn.allocatable(task.job.queue, task) == votes.all_true(table[Point.ALLOCATABLE], task.job.queue, task)
    for left, right in itertools.product(ssn.queues, ssn.queues):
        expected = votes.first_nonzero(table[Point.QUEUE_ORDER], left, right)
        if expected:
            assert ssn.queue_order(left, right) == expected
    ready = [j for j in jobs if ssn.job_ready(j)]
    assert ready and any(ssn.allocatable(t.job.queue, t) for t in tasks) and not ssn.pre_predicate(tasks[0])
    tied = [(a, b) for a, b in itertools.product(jobs, jobs) if a is not b and not votes.first_nonzero(
        table[Point.JOB_ORDER], a, b)]
    assert tied
    # registered after the votes were flattened: the next vote must see it
    ssn.add(Point.JOB_READY, "late", lambda job: False)
    ssn.add(Point.ALLOCATABLE, "late", lambda queue, task: False)
    ssn.add(Point.PRE_PREDICATE, "late", lambda task: "late says no")
    ssn.add(Point.JOB_ORDER, "late", lambda left, right: -1 if left.uid > right.uid else 1)
    assert not any(ssn.job_ready(j) for j in ready)
    assert not any(ssn.allocatable(t.job.queue, t) for t in tasks)
    assert ssn.pre_predicate(tasks[0]) == "late says no"
    for a, b in tied:  # only the late callback tells them apart now (the reverse of the uid fallback)
        assert ssn.job_order(a, b) == (-1 if a.uid > b.uid else 1)
    ssn.dispose()


def _task(job: JobInfo, name: str, priority: int, creation: float, uid: str, index: int) -> TaskInfo:
    spec: Any = SimpleNamespace(name=name, priority=priority, creation=creation, uid=uid, role="worker",
                                best_effort=False, status=S.PENDING, key=f"b/{name}")
    return TaskInfo(spec, job, None, index)


@pytest.mark.parametrize("conf_tasks", ["priority", "none"])
def test_sorted_tasks_orders_as_the_comparator(conf_tasks: str) -> None:
    ssn = open_session(build_snapshot(queued_over_full()), CONF, FixedClock())
    if conf_tasks == "none":  # no task-order callback: an empty key tuple per task
        ssn.callbacks[Point.TASK_ORDER] = [[] for _ in ssn.callbacks[Point.TASK_ORDER]]
    job = next(iter(ssn.jobs.values()))
    tasks = [_task(job, f"w-{name}-{i % 5}", p, float(c), f"u{u}", i)
             for i, (name, p, c, u) in enumerate(itertools.product("ab", (0, 3), (2, 1), (1, 0)))]
    tasks.reverse()
    by_keys = ssn.sorted_tasks(tasks)
    assert by_keys == sorted(tasks, key=cmp_to_key(ssn.task_order))
    assert by_keys != tasks  # the order moved
    ssn.dispose()


def _job(roles: list[tuple[str, bool, TaskStatus]]) -> JobInfo:
    spec: Any = SimpleNamespace(uid="b/j", name="j", queue="q", min_available=1, min_task_member={}, priority=0,
                                phase="Inqueue", conditions=())
    job = JobInfo(spec)
    for i, (role, best_effort, status) in enumerate(roles):
        job.add(TaskInfo(SimpleNamespace(role=role, best_effort=best_effort, status=status, name=f"t{i}"),  # type: ignore[arg-type]
                         job, None, i))
    return job


def _counters(job: JobInfo) -> tuple[Any, ...]:
    return (list(job.counts.items()), {r: list(c.items()) for r, c in job.role_counts.items()},
            list(job.role_valid.items()), list(job.role_ready.items()), list(job.role_pending_best_effort.items()),
            job.pending_best_effort, job.ready_num, job.valid_num, job.scheduled_num)


@pytest.mark.parametrize("best_effort", [False, True])
def test_set_status_moves_the_counters_as_count_down_then_up(best_effort: bool) -> None:
    for old, new in itertools.product(TaskStatus, TaskStatus):
        roles = [("ps", False, S.RUNNING), ("worker", best_effort, old), ("worker", False, S.PENDING)]
        fast, plain = _job(roles), _job(roles)
        fast.set_status(fast.tasks[1], new)
        task = plain.tasks[1]
        if old != new:
            plain._count(task, old, -1)
            task.status = new
            plain._count(task, new, 1)
        assert _counters(fast) == _counters(plain), (old, new)
        assert fast.status_changes == (old != new)


def test_a_jobs_first_change_copies_the_counters_it_shared() -> None:
    ssn = open_session(build_snapshot(queued_over_full()), CONF, FixedClock())
    job = next(iter(ssn.jobs.values()))
    twin = JobInfo(job.spec)
    twin.adopt([TaskInfo(spec, twin, None, i) for i, spec in enumerate(job.spec.tasks)])
    shared = _counters(twin)
    assert twin.counts is job.counts  # both read the spec's tally
    job.set_status(job.tasks[0], S.ALLOCATED)
    assert _counters(twin) == shared and job.counts is not twin.counts
    assert type(job.counts) is type(twin.counts) and job.counts[S.UNKNOWN] == 0  # a Counter still
    assert job.counts[S.ALLOCATED] == 1 and twin.counts[S.ALLOCATED] == 0
    ssn.dispose()


def test_a_removed_handler_is_not_called() -> None:
    ssn = open_session(build_snapshot(queued_over_full()), CONF, FixedClock())
    seen: list[str] = []

    def on(task: TaskInfo) -> None:
        seen.append(task.spec.key)

    def off(task: TaskInfo) -> None:
        seen.append("-" + task.spec.key)

    tasks = [t for j in ssn.jobs.values() for t in j.tasks][:2]
    ssn.add_event_handler("spy", on, off)
    ssn.place(tasks[0], 0, S.ALLOCATED)
    ssn.remove_event_handler("spy", on, off)
    ssn.place(tasks[1], 1, S.ALLOCATED)
    ssn.unplace(tasks[1])
    assert seen == [tasks[0].spec.key]
    ssn.dispose()


def test_decisions_unchanged_with_every_share_worked_out_per_placement(monkeypatch: pytest.MonkeyPatch) -> None:
    lazy = run_cycle(build_snapshot(queued_over_full()), CONF, FixedClock())
    from member_agent.scheduler.plugins import drf_shares, proportion

    def current(self: Any, uid: str) -> float:
        return float(self.share_of(self.allocated[uid]))

    monkeypatch.setattr(drf_shares.DominantShares, "current", current)
    share = proportion.QueueAttr.share

    def always(self: Any) -> float:
        if self.stale:
            self.share = _eager_queue_share(self)
        return float(share.fget(self))  # type: ignore[union-attr]

    monkeypatch.setattr(proportion.QueueAttr, "share", property(always, share.fset))
    eager = run_cycle(build_snapshot(queued_over_full()), CONF, FixedClock())
    assert _decisions(lazy) == _decisions(eager)


@pytest.mark.parametrize("seed", range(4))
def test_a_tally_counted_at_once_equals_adding_the_tasks_one_by_one(seed: int) -> None:
    import random

    from member_agent.scheduler.framework.job_tally import Tally

    rng = random.Random(seed)
    roles = [(rng.choice(["ps", "worker", "chief", ""]), rng.random() < 0.3, rng.choice(list(TaskStatus)))
             for _ in range(rng.randint(1, 40))]
    added = _job(roles)  # JobInfo.add per task: _count, the walk the tally replaced
    probe = _job([])
    tally = Tally.counted([TaskInfo(t.spec, probe, None, i) for i, t in enumerate(added.tasks)])
    probe._share(tally)
    assert _counters(probe) == _counters(added)
