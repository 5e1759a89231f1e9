"""What a replay session's opening works out later, or more cheaply, than it did (issue 41, round 11),
must give what the eager computation gives, and must not defer where the state may have moved:

* overcommit's idle and total inqueue worked out when enqueue first asks or admits, only when
  ``run_cycle``'s first and only ``enqueue`` runs first (``Session.enqueue_first``), from the opening's
  shared sums kept past ``finish_open``;
* proportion's shares from a remembered fill worked out per queue when its attributes are built;
* a quiescent fragment's gang readiness read from the spec (``quiescent.settled_ready``);
* the cache's frozen node table made from the last one's ``__dict__`` (``node_accounts.with_arrays``);
* whether a plugin option's switches let it register on a point, kept per option object.
"""

from __future__ import annotations

import copy
import dataclasses
from types import SimpleNamespace
from typing import Any
from unittest.mock import patch

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from member_agent.scheduler import cycle
from member_agent.scheduler.actions.enqueue import Enqueue
from member_agent.scheduler.cycle import open_session, run_cycle
from member_agent.scheduler.framework import plugin_switches, quiescent
from member_agent.scheduler.framework.clock import FixedClock
from member_agent.scheduler.framework.infos import JobInfo
from member_agent.scheduler.framework.pod_affinity import NO_POD_AFFINITY
from member_agent.scheduler.framework.points import Point
from member_agent.scheduler.framework.session import SessionOptions
from member_agent.scheduler.framework.status import TaskStatus
from member_agent.scheduler.node_accounts import with_arrays
from member_agent.scheduler.plugins import proportion_opening, queue_usage
from member_agent.scheduler.scheduler_cache import ARRAYS
from policies.scheduler_conf import PluginOption, parse_scheduler_conf
from tests.scheduler.test_open_carry import CONF, _attrs, _cache, _forget
from tests.scheduler.test_session_reuse import _objects, jobs_strategy

MIXED = [("q1", "Running", 1, ["Running", "Running"]), ("q2", "Running", 1, ["Running"]),
         ("q1", "Inqueue", 1, ["Pending", "Pending"]), ("q2", "Pending", 2, ["Pending", "Pending"]),
         ("q1", "Pending", 1, ["Pending"])]


# ---------------------------------------------------------------- overcommit worked out when enqueue asks
def _eager(snapshot: Any) -> Any:
    return open_session(snapshot, CONF, FixedClock())


def test_only_a_first_and_only_enqueue_defers_overcommit() -> None:
    enqueue, allocate = Enqueue(), object()  # any other action
    assert cycle._enqueue_first([enqueue, allocate])
    assert not cycle._enqueue_first([allocate, enqueue])  # allocate moves the state before enqueue asks
    assert not cycle._enqueue_first([enqueue, allocate, enqueue])  # the second would ask after allocate
    assert not cycle._enqueue_first([])


def test_deferred_overcommit_values_equal_the_eager_ones_and_survive_finish_open() -> None:
    cache = _cache(_objects(MIXED))
    snapshot = cache.snapshot()
    eager = _eager(snapshot).plugins["overcommit"]
    ssn = open_session(snapshot, CONF, FixedClock(), enqueue_first=True)
    plugin = ssn.plugins["overcommit"]
    assert plugin._inqueue is None and plugin._idle is None  # not worked out at opening
    assert ssn.open_memo == {} and plugin._memo  # the opening's sums kept past finish_open
    np.testing.assert_array_equal(plugin.inqueue, eager.inqueue)
    np.testing.assert_array_equal(plugin.idle, eager.idle)


def test_an_admission_works_overcommit_out_before_the_job_moves_to_inqueue() -> None:
    snapshot = _cache(_objects(MIXED)).snapshot()
    eager, deferred = _eager(snapshot), open_session(snapshot, CONF, FixedClock(), enqueue_first=True)
    for ssn in (eager, deferred):
        job = next(j for j in ssn.jobs.values() if j.is_pending() and j.spec.min_resources is not None)
        ssn.job_enqueued(job)  # as Enqueue._admit: the callbacks, then the phase
        job.phase = "Inqueue"
    np.testing.assert_array_equal(deferred.plugins["overcommit"].inqueue, eager.plugins["overcommit"].inqueue)


@settings(max_examples=40, deadline=None)
@given(jobs=jobs_strategy, cpu=st.sampled_from(["1", "2", "4"]))
def test_a_cycle_with_overcommit_deferred_decides_as_one_that_works_it_out_at_opening(jobs: Any, cpu: str) -> None:
    objects = _objects(jobs, cpu=cpu)
    deferred = run_cycle(_cache(objects).snapshot(), CONF, FixedClock())
    with patch.object(cycle, "_enqueue_first", lambda _actions: False):
        eager = run_cycle(_cache(objects).snapshot(), CONF, FixedClock())
    assert dataclasses.asdict(deferred) == dataclasses.asdict(eager)


# ---------------------------------------------------------------- proportion's shares per queue
def test_a_remembered_fills_shares_worked_out_per_queue_equal_a_fresh_fills() -> None:
    objects = _objects(MIXED)
    cache = _cache(objects)
    _forget()
    open_session(cache.snapshot(), CONF, FixedClock())
    pod = next(o for o in objects if o["kind"] == "Pod" and o["status"]["phase"] == "Pending")
    pod["spec"]["nodeName"], pod["status"] = "n00003", {"phase": "Running"}  # allocated moves, requests do not
    cache.upsert(copy.deepcopy(pod))
    moved = cache.snapshot()
    remembered = open_session(moved, CONF, FixedClock())
    assert len(proportion_opening._OPENED) == 1 and remembered.plugins["proportion"]._shares is None
    _forget()
    fresh = open_session(moved, CONF, FixedClock())
    assert fresh.plugins["proportion"]._shares is not None
    assert _attrs(remembered) == _attrs(fresh)
    assert any(attrs[3] != 0.0 for attrs in _attrs(fresh).values())


def test_an_allocated_outside_the_floats_domain_fills_again() -> None:
    rows = {"q": np.array([[1.0, -0.0], [2.0, 2.0], [0.0, 0.0], [0.0, 0.0]])}
    assert not proportion_opening._in_domain(rows)
    rows["q"][0, 1] = 0.0
    assert proportion_opening._in_domain(rows)
    rows["q"][0, 0] = np.nan
    assert not proportion_opening._in_domain(rows)
    assert proportion_opening.share_of([1.0, 3.0], [2.0, 0.05]) == 0.5  # dims deserving < 0.1 skipped
    assert proportion_opening.share_of([1.0], [0.0]) == 0.0


# ---------------------------------------------------------------- a settled job's readiness from its spec
@settings(max_examples=300, deadline=None)
@given(roles=st.lists(st.sampled_from(["ps", "worker", "chief"]), max_size=5),
       statuses=st.lists(st.sampled_from([TaskStatus.RUNNING, TaskStatus.BOUND]), min_size=5, max_size=5),
       minimums=st.dictionaries(st.sampled_from(["ps", "worker", "chief", "other"]), st.integers(-1, 3), max_size=3),
       min_available=st.integers(0, 6), best_effort=st.booleans())
def test_a_settled_jobs_readiness_read_from_its_spec_equals_the_wrapped_jobs(
        roles: list[str], statuses: list[TaskStatus], minimums: dict[str, int], min_available: int,
        best_effort: bool) -> None:
    tasks = tuple(SimpleNamespace(role=role, best_effort=best_effort, status=status, name=f"t{i}", node="n0",
                                  nominated_node="", pod_affinity=NO_POD_AFFINITY, key=f"ns/t{i}")
                  for i, (role, status) in enumerate(zip(roles, statuses, strict=False)))
    spec: Any = SimpleNamespace(uid="ns/j", name="j", queue="q", min_available=min_available, min_task_member=minimums,
                                priority=0, phase="Running", conditions=(), tasks=tasks, memo={}, min_resources=None)
    probe = JobInfo.at_snapshot(spec)
    assert quiescent.settled_ready(spec) == (probe.check_task_ready() and probe.is_ready())


# ---------------------------------------------------------------- the frozen table's copy
def test_a_table_with_arrays_equals_dataclasses_replace_and_leaves_the_table_alone() -> None:
    table = _cache(_objects(MIXED)).snapshot().nodes
    arrays = {name: getattr(table, name).copy() + 1 for name in ARRAYS[:3]}
    made, replaced = with_arrays(table, arrays), dataclasses.replace(table, **arrays)
    assert type(made) is type(replaced)
    for field in dataclasses.fields(table):
        assert getattr(made, field.name) is getattr(replaced, field.name)
    assert all(getattr(table, name) is not array for name, array in arrays.items())


# ---------------------------------------------------------------- a plugin option's switches per option
switch_values = st.dictionaries(st.sampled_from(sorted({p.switch for p in Point if p.switch})), st.booleans(), max_size=6)


@settings(max_examples=100, deadline=None)
@given(switches=switch_values, changed=switch_values)
def test_the_kept_switch_answers_equal_the_options_and_follow_a_change_in_place(
        switches: dict[str, bool], changed: dict[str, bool]) -> None:
    mapping = dict(switches)
    option = PluginOption("drf", mapping)
    answers = plugin_switches.switch_answers(option)
    for point in Point:
        assert plugin_switches.allows(option, answers, point) == (point.switch is None or option.enabled(point.switch))
    assert plugin_switches.switch_answers(option) is answers  # kept for the same option
    mapping.clear()
    mapping.update(changed)  # changed in place: answered again
    again = plugin_switches.switch_answers(option)
    for point in Point:
        assert plugin_switches.allows(option, again, point) == (point.switch is None or option.enabled(point.switch))
    assert plugin_switches.switch_answers(PluginOption("drf", dict(changed))) is not again  # another option object


def test_a_switched_off_point_is_not_registered() -> None:
    conf = parse_scheduler_conf('actions: "enqueue, allocate"\ntiers:\n- plugins:\n  - name: drf\n'
                                '    enableJobOrder: false\n  - name: proportion\n')
    snapshot = _cache(_objects(MIXED)).snapshot()
    for _ in range(2):  # the second session reads the kept answers
        ssn = open_session(snapshot, conf, FixedClock())
        assert [name for tier in ssn.callbacks[Point.JOB_ORDER] for name, _fn in tier] == []
        assert [name for tier in ssn.callbacks[Point.QUEUE_ORDER] for name, _fn in tier] == ["proportion"]


def test_the_open_and_close_lines_are_kept_from_their_verbosity_on() -> None:
    snapshot = _cache(_objects(MIXED)).snapshot()
    lines = {v: run_cycle(snapshot, CONF, FixedClock(), options=SessionOptions(verbosity=v)).logs for v in (0, 2, 3)}
    opening, closing = ("Open Session ", "Session Open "), ("Close Session ", "Session Close ")
    assert not any(line.startswith((*opening, *closing, "Session ")) for line in lines[0])
    assert [line.split(" ")[1] for line in lines[2] if line.startswith("Session ")] == ["Open", "Close", lines[2][-1].split(" ")[1]]
    assert lines[2][-1].endswith("s") and " duration: " in lines[2][-1]
    for prefix in (*opening, *closing):
        assert sum(line.startswith(prefix) for line in lines[3]) == 1
    assert any(line.startswith("PodGroup ") and "pending reason" in line for line in lines[3])


@settings(max_examples=200, deadline=None)
@given(values=st.lists(st.sampled_from([0.0, 1.0, 3.0, 2.0 ** 53 - 1, 2.0 ** 53, 2.0 ** 60, np.inf]), max_size=12),
       width=st.sampled_from([1, 2, 3]))
def test_the_exact_range_check_on_floats_equals_numpys(values: list[float], width: int) -> None:
    """queue_usage._past_exact reads the carried sums' absolute values (finite or inf, never NaN) as
    ``max(initial=0.0)`` does."""
    rows = np.array(values[:len(values) // width * width], dtype=float).reshape(-1, width)
    assert queue_usage._past_exact(rows) == (rows.max(initial=0.0) >= 2.0 ** 53)
