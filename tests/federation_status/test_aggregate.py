"""Status aggregation as a pure function: the table in data/aggregate_cases.yaml, plus stability rules."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from federation.controllers.status_aggregate import aggregate, aggregate_phase, go_duration
from policies.models.volcano_batch import Job
from tests.federation_status.builders import binding, job, work

CASES: list[dict[str, Any]] = yaml.safe_load((Path(__file__).parent / "data" / "aggregate_cases.yaml").read_text())
NOW = datetime(2026, 12, 2, 10, 5, 0, tzinfo=UTC)


def build(case: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any] | None, list[dict[str, Any]]]:
    spec = case["binding"]
    rb = None
    generation = 0
    if spec is not None:
        generation = spec["generation"]
        rb = binding("train", generation, spec["placement"], spec.get("scheduled"))
        rb["metadata"]["annotations"].update(spec.get("annotations") or {})
    works = []
    for w in case["works"]:
        w = dict(w)
        cluster, phase = w.pop("cluster"), w.pop("phase", None)
        works.append(work("train", cluster, w.pop("gen", generation), phase, **w))
    return job(), rb, works


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_aggregation_table(case: dict[str, Any]) -> None:
    the_job, rb, works = build(case)
    result = aggregate(the_job, rb, works, NOW)
    status, expect = result.status, case["expect"]
    assert status["state"]["phase"] == expect["phase"]
    if "reason" in expect:
        assert status["state"]["reason"] == expect["reason"]
    for fragment in expect.get("message_has", []):
        assert fragment in status["state"]["message"]
    for key in ("running", "pending", "succeeded", "failed", "terminating", "minAvailable"):
        if key in expect:
            assert status[key] == expect[key], key
    typed = {c["type"]: c["status"] for c in status["conditions"] if c.get("type")}
    for type_, value in expect.get("conditions", {}).items():
        assert typed.get(type_) == value, (type_, typed)
    if "clusters" in expect:
        got = [[c["name"], c["phase"], c["replicas"], *([c.get("gangPhase")] if len(e) > 3 else [])]
               for c, e in zip(status["clusters"], expect["clusters"], strict=False)]
        assert got == expect["clusters"]
        assert len(status["clusters"]) == len(expect["clusters"])
    # the status the controller writes must pass the Job model (the API server validates it)
    Job.model_validate(dict(the_job, status=status))
    # the first aggregation is a phase change from nothing, recorded once in the Volcano history
    assert [c["status"] for c in status["conditions"] if not c.get("type")] == [expect["phase"]]


def test_same_inputs_give_the_same_status_later() -> None:
    """No write loops: re-aggregating unchanged inputs later changes nothing (timestamps included)."""
    the_job, rb, works = build(CASES[3])
    first = aggregate(the_job, rb, works, NOW)
    again = aggregate(dict(the_job, status=first.status), rb, works, NOW + timedelta(minutes=7))
    assert again.status == first.status
    assert not again.phase_changed
    assert first.phase_changed and first.old_phase is None


def test_phase_change_appends_history_and_moves_timestamps() -> None:
    the_job, rb, works = build(CASES[2])  # one share missing: Pending
    pending = aggregate(the_job, rb, works, NOW)
    assert pending.new_phase == "Pending"
    _job, rb2, works2 = build(CASES[3])  # all running
    later = NOW + timedelta(seconds=90)
    running = aggregate(dict(the_job, status=pending.status), rb2, works2, later)
    assert running.phase_changed and running.old_phase == "Pending" and running.new_phase == "Running"
    history = [c for c in running.status["conditions"] if not c.get("type")]
    assert [c["status"] for c in history] == ["Pending", "Running"]
    assert history[-1]["lastTransitionTime"] == "2026-12-02T10:06:30Z"
    assert running.status["state"]["lastTransitionTime"] == "2026-12-02T10:06:30Z"
    assert running.status["runningDuration"] == go_duration((later - datetime(2026, 12, 2, 10, tzinfo=UTC))
                                                            .total_seconds()) == "6m30s"
    # Scheduled stayed True: its transition time is kept from the binding, not moved
    scheduled = [c for c in running.status["conditions"] if c.get("type") == "Scheduled"]
    assert scheduled[0]["lastTransitionTime"] == "2026-12-02T10:00:01Z"
    # Dispatched flipped False -> True: its transition time moved
    dispatched = [c for c in running.status["conditions"] if c.get("type") == "Dispatched"][0]
    assert dispatched["status"] == "True" and dispatched["lastTransitionTime"] == "2026-12-02T10:06:30Z"


def test_counts_and_task_counts_are_summed() -> None:
    rb = binding("train", 1, {"a": {"worker": [2, 2]}, "b": {"worker": [3, 3]}})
    works = [work("train", "a", 1, "Running", running=2, taskStatusCount={"worker": {"phase": {"Running": 2}}}),
             work("train", "b", 1, "Running", running=2, pending=1,
                  taskStatusCount={"worker": {"phase": {"Running": 2, "Pending": 1}}}, retryCount=2)]
    status = aggregate(job(min_available=None), rb, works, NOW).status
    assert (status["running"], status["pending"]) == (4, 1)
    assert status["taskStatusCount"] == {"worker": {"phase": {"Pending": 1, "Running": 4}}}
    assert status["retryCount"] == 2
    assert status["minAvailable"] == 5  # no spec.minAvailable: the shares' minAvailable summed


@pytest.mark.parametrize(("phases", "expected"), [
    ([], "Pending"), (["Running", "Pending"], "Pending"), (["Running", "Running"], "Running"),
    (["Completed", "Running"], "Running"), (["Completed", "Completed"], "Completed"),
    (["Completed", "Completing"], "Completing"), (["Failed", "Completed"], "Failed"),
    (["Aborted", "Completed"], "Aborted"), (["Aborting", "Running"], "Aborting"),
    (["Terminated", "Terminated"], "Terminated"), (["Terminating", "Running"], "Terminating"),
    (["Restarting", "Running"], "Restarting"), (["Failed", "Aborting"], "Failed"),
])
def test_aggregate_phase(phases: list[str], expected: str) -> None:
    assert aggregate_phase(phases) == expected
