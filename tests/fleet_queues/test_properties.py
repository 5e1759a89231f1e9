"""Hypothesis properties of fleet admission over random queues, jobs and event sequences.

* No queue's fleet-wide allocation (the requests of the jobs it let the federation place) ever
  exceeds its capability, nor, with hierarchy, any ancestor's.
* A job is never placed before it is admitted: a "federation" that places only what ``decide``
  allows, and jobs it restores after a restart, never holds a job its queue did not admit, and a
  job of a queue that is not Open is never newly admitted.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from federation.fleet_queues import FleetConf, FleetJob, FleetQueue, FleetQueues
from federation.fleet_queues.accounting import ancestors
from tests.fleet_queues.builders import vec

GPU = "nvidia.com/gpu"
NAMES = ("q0", "q1", "q2", "q3")


@st.composite
def queues(draw: Any, hierarchical: bool) -> list[FleetQueue]:
    out = []
    for index, name in enumerate(NAMES):
        cap = draw(st.one_of(st.none(), st.integers(0, 40)))
        guarantee = draw(st.integers(0, 8)) if cap is None else draw(st.integers(0, min(cap, 8)))
        parent = draw(st.sampled_from([None, *NAMES[:index]])) if hierarchical else None
        out.append(FleetQueue(
            name=name, weight=draw(st.integers(1, 4)), priority=draw(st.integers(0, 2)),
            state=draw(st.sampled_from(["Open", "Open", "Open", "Closed"])), parent=parent,
            capability=vec({GPU: str(cap), "cpu": str(draw(st.integers(0, 64)))} if cap is not None else {}),
            guarantee=vec({GPU: str(guarantee)} if guarantee else {}),
            deserved=vec({GPU: str(draw(st.integers(guarantee, guarantee + 20)))})))
    return out


jobs = st.lists(st.tuples(st.sampled_from(NAMES), st.integers(1, 16), st.integers(0, 8), st.integers(0, 3)),
                min_size=1, max_size=25)
events = st.lists(st.tuples(st.sampled_from(["decide", "finish", "fail", "add"]), st.integers(0, 30)),
                  min_size=1, max_size=30)
confs = st.sampled_from([
    FleetConf(plugin="proportion"), FleetConf(plugin="proportion", overcommit_factor=None),
    FleetConf(plugin="capacity"), FleetConf(plugin="capacity", hierarchical=True, overcommit_factor=None),
    FleetConf(plugin=None, overcommit_factor=1.0),
])


def _job(index: int, spec: tuple[str, int, int, int]) -> FleetJob:
    queue, gpus, extra, priority = spec
    return FleetJob(("ns", f"j{index}"), queue, vec({GPU: str(gpus), "cpu": "1"}),
                    vec({GPU: str(gpus + extra), "cpu": str(1 + extra)}), priority=priority, created=index)


def _check_caps(fleet: FleetQueues, placed: set[tuple[str, str]]) -> None:
    held: dict[str, float] = {}
    for key in placed:
        job = fleet.jobs[key]
        chain = ancestors(job.queue, fleet.queues) if fleet.conf.hierarchical else [job.queue]
        for name in chain:
            held[name] = held.get(name, 0.0) + job.request[GPU]
    for name, amount in held.items():
        queue = fleet.queues.get(name)
        if queue is not None and fleet.conf.plugin is not None:
            assert amount <= queue.capability_limit(GPU) + 1e-6, f"queue {name}: {amount} > {queue.capability}"


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), conf=confs, job_specs=jobs, steps=events, total=st.integers(0, 120))
def test_caps_hold_and_nothing_is_placed_unadmitted(data: Any, conf: FleetConf, job_specs: list[Any],
                                                   steps: list[tuple[str, int]], total: int) -> None:
    fleet = FleetQueues(conf)
    fleet.set_queues(data.draw(queues(conf.hierarchical)))
    fleet.set_capacity(vec({GPU: str(total), "cpu": "256"}))
    pending = list(enumerate(job_specs))
    for index, spec in pending[: len(pending) // 2]:
        fleet.add_job(_job(index, spec))
    pending = pending[len(pending) // 2:]
    placed: set[tuple[str, str]] = set()
    for action, pick in steps:
        if action == "add" and pending:
            index, spec = pending.pop()
            fleet.add_job(_job(index, spec))
        elif action == "decide":
            phases_before = {key: job.phase for key, job in fleet.jobs.items()}
            for key in fleet.decide():
                assert fleet.jobs[key].phase == "Allocated" and fleet.verdict(key).admitted  # type: ignore[union-attr]
                queue = fleet.queues.get(fleet.jobs[key].queue)
                if phases_before[key] == "Pending":
                    assert queue is None or queue.state == "Open", "a closed queue admitted a job"
                placed.add(key)
        elif action == "finish" and placed:
            key = sorted(placed)[pick % len(placed)]
            placed.discard(key)
            fleet.remove_job(key)
        elif action == "fail" and placed:
            key = sorted(placed)[pick % len(placed)]
            placed.discard(key)
            fleet.unplaced(key)
        for key in placed:
            assert fleet.jobs[key].phase == "Allocated", f"{key} placed without its queue's admission"
        _check_caps(fleet, placed)
