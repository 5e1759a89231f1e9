"""JobInfo's per-role gang counts, kept incrementally, agree with a walk over the job's tasks.

``check_task_valid`` / ``check_task_ready`` / ``check_task_pipelined`` and ``allocated_in_role``
read counts updated in ``JobInfo._count``; any sequence of status changes must give what
counting the tasks afresh (Volcano's ``CheckTaskValid``/``CheckTaskReady``) gives.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from member_agent.scheduler.framework.infos import JobInfo, TaskInfo
from member_agent.scheduler.framework.status import ALLOCATED_STATUSES, TaskStatus

S = TaskStatus
ROLES = ("ps", "worker", "chief")
VALID = ALLOCATED_STATUSES | {S.SUCCEEDED, S.PIPELINED, S.PENDING}
READY = ALLOCATED_STATUSES | {S.SUCCEEDED}


def _walk_roles_hold(job: JobInfo, statuses: frozenset[TaskStatus], best_effort_pending: bool) -> bool:
    if not job.spec.min_task_member or job.min_available < job.task_min_total:
        return True
    for role, need in job.spec.min_task_member.items():
        if need <= 0:
            continue
        have = sum(1 for t in job.tasks if t.spec.role == role and t.status in statuses)
        if best_effort_pending:
            have += sum(1 for t in job.tasks if t.spec.role == role and t.status == S.PENDING and t.spec.best_effort)
        if have < need:
            return False
    return True


def _job(min_available: int, min_task_member: dict[str, int], tasks: list[tuple[str, bool, TaskStatus]]) -> JobInfo:
    spec: Any = SimpleNamespace(uid="ns/j", name="j", queue="default", min_available=min_available,
                                min_task_member=min_task_member, priority=0, phase="Inqueue", conditions=())
    job = JobInfo(spec)
    for i, (role, best_effort, status) in enumerate(tasks):
        tspec: Any = SimpleNamespace(role=role, best_effort=best_effort, status=status, name=f"t{i}")
        job.add(TaskInfo(tspec, job, None, i))
    return job


statuses = st.sampled_from(list(TaskStatus))
tasks = st.lists(st.tuples(st.sampled_from(ROLES), st.booleans(), statuses), min_size=1, max_size=8)


@settings(max_examples=200, deadline=None)
@given(tasks=tasks, min_available=st.integers(0, 8),
       min_task_member=st.dictionaries(st.sampled_from(ROLES), st.integers(0, 3), max_size=3),
       changes=st.lists(st.tuples(st.integers(0, 7), statuses), max_size=20))
def test_role_counts_match_a_walk_after_any_status_changes(tasks: list[tuple[str, bool, TaskStatus]], min_available: int,
                                                            min_task_member: dict[str, int],
                                                            changes: list[tuple[int, TaskStatus]]) -> None:
    job = _job(min_available, min_task_member, tasks)
    for index, status in [(-1, S.PENDING), *changes]:
        if index >= 0:
            job.set_status(job.tasks[index % len(job.tasks)], status)
        assert job.check_task_valid() == _walk_roles_hold(job, VALID, False)
        assert job.check_task_ready() == _walk_roles_hold(job, READY, True)
        assert job.check_task_pipelined() == _walk_roles_hold(job, READY | {S.PIPELINED}, True)
        for role in ROLES:
            assert job.allocated_in_role(role) == sum(1 for t in job.tasks if t.spec.role == role and t.status in READY)


def test_a_role_short_of_its_min_task_member_is_invalid_until_a_pod_is_pending_again() -> None:
    job = _job(2, {"worker": 2}, [("worker", False, S.RUNNING), ("worker", False, S.FAILED)])
    assert not job.check_task_valid()
    job.set_status(job.tasks[1], S.PENDING)
    assert job.check_task_valid()
    assert not job.check_task_ready()
    job.set_status(job.tasks[1], S.PIPELINED)
    assert job.check_task_pipelined() and not job.check_task_ready()


def _counters(job: JobInfo) -> tuple[Any, ...]:
    return (list(job.counts.items()), {r: list(c.items()) for r, c in job.role_counts.items()}, job.role_valid,
            job.role_ready, job.role_pending_best_effort, job.pending_best_effort, job.ready_num, job.valid_num,
            job.scheduled_num, job.status_changes, [t.status for t in job.tasks])


@settings(max_examples=200, deadline=None)
@given(tasks=tasks, picked=st.lists(st.integers(0, 7), unique=True, max_size=8), status=statuses,
       uniform=st.sampled_from([None, S.ALLOCATED, S.PIPELINED, S.PENDING]))
def test_statuses_set_together_count_as_set_one_by_one(tasks: list[tuple[str, bool, TaskStatus]], picked: list[int],
                                                       status: TaskStatus, uniform: TaskStatus | None) -> None:
    # round 8: a commit moves a gang Allocated -> Binding in one call (JobInfo.set_statuses); any mix
    # of statuses before, Pending included, must count (and order the counters' keys) as one by one
    if uniform is not None:
        tasks = [(role, best_effort, uniform) for role, best_effort, _ in tasks]
    together, one_by_one = _job(2, {}, tasks), _job(2, {}, tasks)
    chosen = sorted({i % len(tasks) for i in picked})
    together.set_statuses([together.tasks[i] for i in chosen], status)
    for i in chosen:
        one_by_one.set_status(one_by_one.tasks[i], status)
    assert _counters(together) == _counters(one_by_one)
