"""A settled share's PodGroup moved by the scheduler where its controller cannot see it
(``JobRun.settled_through``, ``simulator/member.py``): the member keeps it without a pass, and that
pass would have planned nothing."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any, Optional

import pytest

from member_agent.controllers.reconcile import pod_group_resync_view
from member_agent.job_runner import JobRun, RunPlan
from member_agent.job_settled import hides_phase_move
from policies.models.volcano_scheduling import PodGroup
from simulator.cli import main
from simulator.member import Member
from tests.simulate.test_job_models import REPLAY

PHASES: list[Optional[str]] = [None, "Pending", "Inqueue", "Running", "Unknown", "Completed"]
CONDITIONS: list[list[dict[str, Any]]] = [
    [], [{"type": "Unschedulable", "status": "True", "message": "0/3 nodes are available"}],
    [{"type": "Unschedulable", "status": "True", "message": "other"}, {"type": "Scheduled", "status": "True"}],
]


def _group(phase: Optional[str], conditions: list[dict[str, Any]]) -> PodGroup:
    status: dict[str, Any] = {"conditions": conditions}
    if phase is not None:
        status["phase"] = phase
    return PodGroup.model_validate({"spec": {}, "status": status})


def test_a_hidden_move_reads_the_same_to_a_sync_job_whatever_the_conditions() -> None:
    hidden = 0
    for before in PHASES:
        for after in PHASES:
            views = {pod_group_resync_view(_group(phase, c)) for phase in (before, after) for c in CONDITIONS}
            if hides_phase_move(before, after):
                hidden += 1
                assert len(views) == 1
            elif before != after:
                assert len(views) > 1  # the SyncJob may read it otherwise: a pass runs
    assert hidden == 16  # Inqueue, Running, Unknown and Completed among themselves


def _summary(tmp_path: Path, name: str) -> Any:
    out = tmp_path / name
    assert main([*REPLAY, "--no-wall-clock", "-o", str(out)]) == 0
    return json.loads((out / "summary.json").read_text())


def test_each_kept_move_was_a_pass_planning_nothing_and_the_replay_is_unchanged(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    quiet: list[str] = []
    reconcile = Member.reconcile

    def checked(member: Member) -> None:
        for job in sorted(member._quiet - member._dirty):  # the passes the member does not run
            share = member.shares[job]
            run = copy.deepcopy(share.run)
            plan = run.plan(share.record, list(share.pods.values()), member.clock.now(), member.controller,
                            member.priority_classes)
            assert plan == RunPlan() and run._settled is not None and run.requeue_at is None
            quiet.append(job)
        reconcile(member)

    with monkeypatch.context() as patched:
        patched.setattr(Member, "reconcile", checked)
        kept = _summary(tmp_path, "kept")
    assert len(quiet) >= 100  # most jobs: their PodGroup goes from Inqueue to Running after the pass
    with monkeypatch.context() as patched:
        patched.setattr(JobRun, "settled_through", lambda run, before: False)
        passes = _summary(tmp_path, "passes")
    assert kept == passes


def test_each_follow_up_settled_without_a_pass_was_a_pass_planning_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    settled: list[int] = []
    settle = JobRun.settle_followup

    def checked(run: JobRun, pods: list[dict[str, Any]], now: float, config: Any, classes: Any) -> None:
        record = next(s.record for m in members for s in m.shares.values() if s.run is run)
        probe = copy.deepcopy(run)
        plan = probe.plan(record, copy.deepcopy(pods), now, config, classes)
        settle(run, pods, now, config, classes)
        assert plan == RunPlan() and probe._settled == run._settled and probe._fingerprint == run._fingerprint
        assert probe.requeue_at is None and run.requeue_at is None and not run.pending_followup
        settled.append(1)

    members: list[Member] = []
    member_init = Member.__init__

    def remembered(member: Member, *args: Any, **kwargs: Any) -> None:
        member_init(member, *args, **kwargs)
        members.append(member)

    with monkeypatch.context() as patched:
        patched.setattr(JobRun, "settle_followup", checked)
        patched.setattr(Member, "__init__", remembered)
        kept = _summary(tmp_path, "kept")
    assert len(settled) >= 250  # two of a job's three follow-ups: after the PodGroup and after its pods
    with monkeypatch.context() as patched:
        patched.setattr(JobRun, "followup_settles", property(lambda run: False))
        passes = _summary(tmp_path, "passes")
    assert kept == passes
