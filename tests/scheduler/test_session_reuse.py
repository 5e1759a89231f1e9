"""What a session reuses from earlier ones must give what computing afresh gives.

* ``JobSpec.memo``: a job's counters at its snapshot statuses (shared, copied on the first
  change) and ``queue_usage``'s per-job task sums are computed once per spec;
* ``state_classes``: the node-state classes found by one projection partition the rows as
  ``np.unique(axis=0)`` does, and a projection collision falls back to it;
* ``Session.dispose``: a finished session is freed by refcounting, without the cyclic collector.
"""

from __future__ import annotations

import gc
import weakref
from types import SimpleNamespace
from typing import Any

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from member_agent.scheduler.cycle import run_cycle
from member_agent.scheduler.framework import node_groups, quiescent
from member_agent.scheduler.framework import session as session_module
from member_agent.scheduler.framework.builder import build_snapshot
from member_agent.scheduler.framework.clock import FixedClock
from member_agent.scheduler.framework.infos import JobInfo, TaskInfo
from member_agent.scheduler.framework.status import ALLOCATED_STATUSES, TaskStatus
from member_agent.scheduler.plugins.queue_terms import _task_sums
from policies.scheduler_conf import parse_scheduler_conf
from tests.scheduler.test_node_search_bound import CONF, job, nodes

S = TaskStatus
ROLES = ("ps", "worker")
COUNTERS = ("counts", "role_counts", "role_valid", "role_ready", "role_pending_best_effort",
            "pending_best_effort", "ready_num", "valid_num", "scheduled_num")


def _spec(tasks: list[tuple[str, bool, TaskStatus]], min_available: int = 1, workers: int = 1) -> Any:
    task_specs = tuple(SimpleNamespace(role=role, best_effort=best_effort, status=status, name=f"t{i}",
                                       request=np.array([1.0, float(i)]), gated=False)
                       for i, (role, best_effort, status) in enumerate(tasks))
    return SimpleNamespace(uid="ns/j", name="j", queue="default", min_available=min_available,
                           min_task_member={"worker": workers},
                           priority=0, phase="Inqueue", conditions=(), tasks=task_specs, memo={},
                           min_resources=None)


def _adopted(spec: Any) -> JobInfo:
    job = JobInfo(spec)
    job.adopt([TaskInfo(t, job, None, i) for i, t in enumerate(spec.tasks)])
    return job


def _counted(spec: Any) -> JobInfo:
    job = JobInfo(spec)
    for i, t in enumerate(spec.tasks):
        job.add(TaskInfo(t, job, None, i))
    return job


def _counters(job: JobInfo) -> tuple[Any, ...]:
    # Counter equality ignores zero entries, which is what the gang checks see as well; the role
    # checks are memoised on the tally while the counters are shared.
    return (*(getattr(job, name) for name in COUNTERS),
            job.check_task_valid(), job.check_task_ready(), job.check_task_pipelined())


statuses = st.sampled_from(list(TaskStatus))
task_lists = st.lists(st.tuples(st.sampled_from(ROLES), st.booleans(), statuses), min_size=0, max_size=6)


@settings(max_examples=150, deadline=None)
@given(tasks=task_lists, changes=st.lists(st.tuples(st.integers(0, 5), statuses), max_size=12),
       min_available=st.integers(0, 4), workers=st.integers(0, 3))
def test_jobs_sharing_a_spec_tally_count_as_a_fresh_walk_and_never_change_it(
        tasks: list[tuple[str, bool, TaskStatus]], changes: list[tuple[int, TaskStatus]], min_available: int,
        workers: int) -> None:
    spec = _spec(tasks, min_available, workers)
    first = _adopted(spec)  # computes the tally
    second = _adopted(spec)  # reads it
    walked = _counted(spec)
    assert _counters(first) == _counters(walked) == _counters(second)
    for index, status in changes if tasks else ():
        second.set_status(second.tasks[index % len(tasks)], status)
        walked.set_status(walked.tasks[index % len(tasks)], status)
        assert _counters(second) == _counters(walked)
    # The first job and the memo still hold the snapshot's counts.
    assert _counters(first) == _counters(_counted(spec)) == _counters(_adopted(spec))


@settings(max_examples=100, deadline=None)
@given(tasks=task_lists, changes=st.lists(st.tuples(st.integers(0, 5), statuses), max_size=6))
def test_queue_usage_task_sums_from_the_memo_equal_a_walk(tasks: list[tuple[str, bool, TaskStatus]],
                                                          changes: list[tuple[int, TaskStatus]]) -> None:
    spec = _spec(tasks)
    zeros = np.zeros(2)
    for info in (_adopted(spec), _adopted(spec)):  # the second reads the memo the first filled
        for index, status in changes if tasks else ():
            info.set_status(info.tasks[index % len(tasks)], status)
        sums = _task_sums(info, zeros)
        allocated = [t.spec.request for t in info.tasks if t.status in ALLOCATED_STATUSES]
        np.testing.assert_array_equal(sums.allocated, sum(allocated, zeros.copy()))
        assert [list(r) for r in sums.pending] == [list(t.spec.request) for t in info.tasks if t.status == S.PENDING]
        assert sums.allocated_count == len(allocated)


def _same_partition(a: np.ndarray, b: np.ndarray) -> bool:
    return len({*zip(a.tolist(), b.tolist(), strict=True)}) == len(set(a.tolist())) == len(set(b.tolist()))


@settings(max_examples=100, deadline=None)
@given(rows=st.lists(st.lists(st.sampled_from([0.0, 0.5, 1.0, 4.0, 1e9]), min_size=3, max_size=3), max_size=40))
def test_state_classes_partition_rows_as_unique_does(rows: list[list[float]]) -> None:
    state = np.array(rows, dtype=np.float64).reshape(len(rows), 3)
    ids = node_groups.state_classes(state)
    if len(rows):
        _, expected = np.unique(state, axis=0, return_inverse=True)
        assert _same_partition(ids, np.asarray(expected).reshape(-1))
    else:
        assert len(ids) == 0


def test_a_projection_collision_falls_back_to_comparing_rows(monkeypatch: Any) -> None:
    monkeypatch.setattr(node_groups, "_projection", lambda width: np.zeros(width))  # every row collides
    state = np.array([[1.0, 2.0], [2.0, 1.0], [1.0, 2.0]])
    ids = node_groups.state_classes(state)
    assert ids[0] == ids[2] and ids[0] != ids[1]


def test_a_finished_session_is_freed_without_the_cyclic_collector(monkeypatch: Any) -> None:
    objects = [*nodes(8), *job("a", 3), *job("b", 2, gpus=1)]
    snapshot = build_snapshot(objects)
    sessions: list[weakref.ref[Any]] = []
    original = session_module.Session.dispose

    def keep(self: Any) -> None:
        original(self)
        sessions.append(weakref.ref(self))

    monkeypatch.setattr(session_module.Session, "dispose", keep)
    gc.disable()
    try:
        result = run_cycle(snapshot, CONF, FixedClock())
        assert len(result.bindings) == 5
        assert sessions and sessions[0]() is None
    finally:
        gc.enable()


def _walked_usage(ssn: Any, full_min_for_inqueue: bool) -> dict[str, Any]:
    """Proportion's queue usage as a plain walk over every task (the reference)."""
    from member_agent.scheduler.plugins.queue_usage import Usage, inqueue_resource

    zeros = ssn.dims.zeros()
    out: dict[str, Usage] = {}
    # every job in snapshot order, the ones a session left out (quiescent) wrapped here
    for info in (ssn.jobs.get(spec.uid) or _adopted(spec) for spec in ssn.snapshot.jobs):
        usage = out.setdefault(info.queue, Usage(zeros.copy(), zeros.copy(), zeros.copy(), zeros.copy()))
        allocated = sum((t.spec.request for t in info.tasks if t.status in ALLOCATED_STATUSES), zeros.copy())
        gated = sum((t.spec.request for t in info.tasks if t.spec.gated and t.status == S.PENDING), zeros.copy())
        usage.allocated += allocated
        usage.request += allocated
        for t in info.tasks:
            if t.status == S.PENDING:
                usage.request += t.spec.request
        min_res = info.spec.min_resources
        usage.elastic += np.maximum(allocated - (min_res if min_res is not None else zeros), 0.0)
        placed = sum(1 for t in info.tasks if t.status in ALLOCATED_STATUSES)
        if min_res is not None and info.phase == "Inqueue":
            reserve = min_res if full_min_for_inqueue else inqueue_resource(info, allocated)
            usage.inqueue += np.maximum(reserve - gated, 0.0)
        elif min_res is not None and info.phase == "Running" and placed >= info.min_available:
            usage.inqueue += np.maximum(inqueue_resource(info, allocated) - gated, 0.0)
    return out


def _objects(jobs: list[tuple[str, str, int, list[str]]], node_count: int = 4, cpu: str = "1") -> list[dict[str, Any]]:
    objects: list[dict[str, Any]] = [*nodes(node_count)]
    for queue in ("q1", "q2"):
        objects.append({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": queue},
                        "spec": {"weight": 1}, "status": {"state": "Open"}})
    for i, (queue, phase, min_member, pods) in enumerate(jobs):
        name = f"j{i}"
        objects.append({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                        "metadata": {"name": name, "namespace": "b"},
                        "spec": {"minMember": min_member, "queue": queue, "minTaskMember": {"worker": min_member},
                                 "minResources": {"cpu": str(min_member), "memory": f"{min_member}Gi"}},
                        "status": {"phase": phase}})
        for k, pod_phase in enumerate(pods):
            objects.append({"apiVersion": "v1", "kind": "Pod",
                            "metadata": {"name": f"{name}-{k}", "namespace": "b",
                                         "annotations": {"scheduling.k8s.io/group-name": name,
                                                         "volcano.sh/task-spec": "worker" if k % 3 else "ps"}},
                            "spec": {"containers": [{"name": "c", "resources": {"requests": {
                                "cpu": "0.1" if k % 2 else cpu, "memory": "1Gi"}}}],
                                     **({"nodeName": f"n{k % node_count:05d}"} if pod_phase == "Running" else {})},
                            "status": {"phase": pod_phase}})
    return objects


jobs_strategy = st.lists(st.tuples(st.sampled_from(["q1", "q2"]), st.sampled_from(["Pending", "Inqueue", "Running"]),
                                   st.integers(0, 3), st.lists(st.sampled_from(["Pending", "Running"]), max_size=4)),
                         min_size=1, max_size=6)


@settings(max_examples=60, deadline=None)
@given(jobs=jobs_strategy, full_min=st.booleans(), moves=st.lists(st.integers(0, 30), max_size=4),
       scatter=st.booleans(), fraction=st.booleans())
def test_queue_usage_equals_a_walk_over_every_task(jobs: list[tuple[str, str, int, list[str]]], full_min: bool,
                                                    moves: list[int], scatter: bool, fraction: bool) -> None:
    """Both ways of summing (the sequential loop, and the scatter-add of whole numbers, which a
    fractional request turns off) give the walk's floats exactly."""
    from member_agent.scheduler.plugins import queue_usage as module

    objects = _objects(jobs)
    if fraction:  # a fractional extended resource on the first pod: no whole-number shortcut
        for pod in [o for o in objects if o["kind"] == "Pod"][:1]:
            pod["spec"]["containers"][0]["resources"]["requests"]["example.com/share"] = "0.3"
    snapshot = build_snapshot(objects)
    saved = module.SCATTER_FROM
    module.SCATTER_FROM = 0 if scatter else 10**9
    try:
        _check_usage(snapshot, full_min, moves)
    finally:
        module.SCATTER_FROM = saved


def _check_usage(snapshot: Any, full_min: bool, moves: list[int]) -> None:
    from member_agent.scheduler.cycle import open_session
    from member_agent.scheduler.plugins.queue_usage import queue_usage

    for conf in (CONF, FIFO, FIFO):  # FIFO leaves running gangs out; the second FIFO reads the memos
        ssn = open_session(snapshot, conf, FixedClock())
        tasks = [t for info in ssn.jobs.values() for t in info.tasks]
        for move in moves if tasks else ():  # statuses changed in the session: walked again
            task = tasks[move % len(tasks)]
            task.job.set_status(task, S.ALLOCATED if task.status == S.PENDING else S.PENDING)
        got, expected = queue_usage(ssn, full_min_for_inqueue=full_min), _walked_usage(ssn, full_min)
        assert list(got) == list(expected)  # the same queues, in the same order
        for queue, usage in expected.items():
            for field in ("allocated", "request", "inqueue", "elastic"):
                np.testing.assert_array_equal(getattr(got[queue], field), getattr(usage, field), err_msg=f"{queue}.{field}")


@settings(max_examples=60, deadline=None)
@given(jobs=jobs_strategy)
def test_a_session_over_warm_memos_decides_as_one_over_a_fresh_snapshot(jobs: list[tuple[str, str, int, list[str]]]) -> None:
    objects = _objects(jobs)
    warm = build_snapshot(objects)
    run_cycle(warm, CONF, FixedClock())  # fills every spec's memo (counters, role checks, close walk)
    again = run_cycle(warm, CONF, FixedClock())
    fresh = run_cycle(build_snapshot(objects), CONF, FixedClock())
    assert again == fresh


FIFO = parse_scheduler_conf("""
actions: "enqueue, allocate"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: predicates}, {name: proportion}, {name: nodeorder}]
""")


def _cycle_without_quiescent(snapshot: Any, conf: Any) -> Any:
    """The reference: every job wrapped and walked, as Volcano does."""
    saved = quiescent.conf_allows
    quiescent.conf_allows = lambda _conf: False  # type: ignore[assignment]
    try:
        return run_cycle(snapshot, conf, FixedClock())
    finally:
        quiescent.conf_allows = saved  # type: ignore[assignment]


@settings(max_examples=40, deadline=None)
@given(jobs=jobs_strategy, fifo=st.booleans())
@example(jobs=[("q1", "Running", 1, ["Running", "Running", "Running"]), ("q1", "Inqueue", 1, ["Pending"])], fifo=False)
@example(jobs=[("q1", "Running", 1, ["Running", "Running", "Running"]), ("q2", "Running", 1, ["Running"]),
               ("q1", "Inqueue", 1, ["Pending"]), ("q2", "Pending", 1, ["Pending"])], fifo=True)
def test_sessions_over_the_incremental_cache_decide_as_sessions_over_fresh_snapshots(
        jobs: list[tuple[str, str, int, list[str]]], fifo: bool) -> None:
    """The agent's loop: a session, its bindings applied as Running pods, the next session. Jobs
    the bindings did not touch keep their specs (and memos) in the cache, and running gangs are
    left out of the session under an allocate-only conf (framework/quiescent.py); each session
    must decide what a session over a snapshot built afresh, walking every job, decides."""
    import copy

    from member_agent.scheduler.scheduler_cache import SchedulerCache

    conf = FIFO if fifo else CONF

    objects = _objects(jobs, node_count=1, cpu="7")  # one 16-cpu node: jobs wait for room
    cache = SchedulerCache()
    for obj in objects:
        cache.upsert(copy.deepcopy(obj))
    pods = {f"{o['metadata']['namespace']}/{o['metadata']['name']}": o for o in objects if o["kind"] == "Pod"}
    for _ in range(4):
        result = run_cycle(cache.snapshot(), conf, FixedClock())
        assert result == _cycle_without_quiescent(build_snapshot(copy.deepcopy(objects)), conf)
        end_oldest_and_write_back(cache, objects, pods, result)


def end_oldest_and_write_back(cache: Any, objects: list[dict[str, Any]], pods: dict[str, dict[str, Any]],
                              result: Any) -> None:
    """Between two sessions of the agent's loop: the oldest running pod ends (room for a job that
    waited), then the session's bindings (with their pod annotations) and moved PodGroup phases are
    written back, to ``objects`` and to the cache alike."""
    import copy

    running = sorted(key for key, pod in pods.items() if pod["status"]["phase"] == "Running")
    if running:
        gone = pods.pop(running[0])
        objects.remove(gone)
        cache.delete(copy.deepcopy(gone))
    for key, node in result.bindings.items():
        pod = pods[key]
        pod["spec"]["nodeName"], pod["status"] = node, {"phase": "Running"}
        pod["metadata"].setdefault("annotations", {}).update(result.pod_annotations.get(key, {}))
        cache.upsert(copy.deepcopy(pod))
    for key, phase in result.pod_groups.items():
        # Written back only when the phase moved (as the agent writes a PodGroup status), so the
        # other jobs keep their specs, and their memos, into the next session.
        group = next(o for o in objects if o["kind"] == "PodGroup" and f"b/{o['metadata']['name']}" == key)
        if group["status"].get("phase") != phase:
            group["status"] = {"phase": phase, "conditions": result.conditions[key]}
            cache.upsert(copy.deepcopy(group))


def test_a_left_out_job_whose_status_moves_only_in_transition_id_is_reported_steady() -> None:
    """Volcano's job updater skips a PodGroup status that changed only in transition ids and
    times; the result names those PodGroups so a consumer can skip them too."""
    scheduled = {"type": "Scheduled", "status": "True", "reason": "tasks in gang are ready to be scheduled",
                 "message": "", "transitionID": "an-older-session"}
    objects = _objects([("q1", "Running", 1, ["Running", "Running"]), ("q1", "Running", 1, ["Running", "Running"]),
                        ("q2", "Running", 1, ["Running", "Running"]), ("q1", "Inqueue", 1, ["Pending"])])
    groups = [o for o in objects if o["kind"] == "PodGroup"]
    groups[0]["status"]["conditions"] = [scheduled]
    groups[1]["status"]["conditions"] = [{**scheduled, "reason": "something else"}]  # gang would rewrite it
    result = run_cycle(build_snapshot(objects), FIFO, FixedClock())
    assert result.steady_pod_groups == {"b/j0"}
    written = result.conditions["b/j0"]
    assert [{k: v for k, v in c.items() if k != "transitionID"} for c in written] == [
        {k: v for k, v in scheduled.items() if k != "transitionID"}]
    assert written[0]["transitionID"] == result.session_uid and result.pod_groups["b/j0"] == "Running"
    assert result == _cycle_without_quiescent(build_snapshot(objects), FIFO)
