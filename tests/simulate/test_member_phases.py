"""The replay hands a session's PodGroup phases to the runs (``Member._note_phases``, issue 41 round 9):
the moved PodGroups found by a set difference give the runs the calls, in the order that matters,
and the dirty jobs a walk over every PodGroup gives."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from simulator.member import Member


class _Run:
    def __init__(self, log: list[tuple[str, str]], job: str, phase: str) -> None:
        self.log, self.job, self.phase = log, job, phase

    def set_pod_group_phase(self, phase: str, conditions: Any = None) -> bool:
        self.log.append((self.job, phase))
        changed, self.phase = phase != self.phase, phase
        return changed


def _member(groups: dict[str, str], phases: dict[str, str], log: list[tuple[str, str]]) -> Member:
    member = object.__new__(Member)  # only what _note_phases reads
    member._by_group = dict(groups)
    member.shares = {job: SimpleNamespace(run=_Run(log, job, phases.get(job, "Pending"))) for job in set(groups.values())}
    member._dirty = set()
    return member


def _walk(member: Member, result: Any) -> None:
    """The walk the set difference replaces."""
    for key, phase in result.pod_groups.items():
        if key in result.steady_pod_groups:
            continue
        job = member._by_group.get(key)
        if job is not None and member.shares[job].run.set_pod_group_phase(phase, result.conditions.get(key)):
            member._dirty.add(job)


@pytest.mark.parametrize("groups", [
    {f"sim/g{i}": f"job-{i}" for i in range(30)},  # one PodGroup per share
    {**{f"sim/g{i}": f"job-{i}" for i in range(30)}, "sim/old-g3": "job-3"},  # two of one share: in order
])
def test_moved_phases_equal_the_walk(groups: dict[str, str]) -> None:
    pod_groups = {key: ("Running" if i % 3 else "Inqueue") for i, key in enumerate(groups)}
    pod_groups["sim/unknown"] = "Pending"  # no share of this member
    if "sim/old-g3" in pod_groups:
        pod_groups["sim/old-g3"] = "Completed"  # after g3's Inqueue in the result: the share ends Completed
    result = SimpleNamespace(pod_groups=pod_groups, conditions={},
                             steady_pod_groups={key for i, key in enumerate(groups) if i % 4 == 0})
    start = {f"job-{i}": "Running" for i in range(0, 30, 2)}
    fast_log: list[tuple[str, str]] = []
    walk_log: list[tuple[str, str]] = []
    fast, walked = _member(groups, start, fast_log), _member(groups, start, walk_log)
    fast._note_phases(result)
    _walk(walked, result)
    assert fast._dirty == walked._dirty != set()
    assert sorted(fast_log) == sorted(walk_log) and len(fast_log) > 10
    assert {job: s.run.phase for job, s in fast.shares.items()} == {job: s.run.phase for job, s in walked.shares.items()}
    if "sim/old-g3" in groups:  # the share's two PodGroups reach it in the result's order
        assert [p for j, p in fast_log if j == "job-3"] == [p for j, p in walk_log if j == "job-3"] == ["Inqueue", "Completed"]
