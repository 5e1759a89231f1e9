"""Fleet admission scenarios as data (tests/data/fleet_queues/admission.yaml)."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from tests.conftest import DATA
from tests.fleet_queues.builders import fleet

CASES: list[dict[str, Any]] = yaml.safe_load((DATA / "fleet_queues" / "admission.yaml").read_text())


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_scenario(case: dict[str, Any]) -> None:
    queues = fleet(case)
    for number, step in enumerate(case["steps"]):
        for name in step.get("finish") or []:
            assert queues.remove_job(("ns", name)), f"step {number}: {name} unknown"
        allowed = [name for _, name in queues.decide()]
        assert allowed == step["allowed"], f"step {number}"
        for name, (reason, text) in (step.get("waiting") or {}).items():
            verdict = queues.verdict(("ns", name))
            assert verdict is not None and not verdict.admitted, f"step {number}: {name} was admitted"
            assert verdict.reason == reason, f"step {number}: {name}: {verdict}"
            assert text in verdict.message, f"step {number}: {name}: {verdict.message}"


def test_a_failed_placement_returns_the_job_to_inqueue_holding_its_minimum() -> None:
    queues = fleet({"total": {"nvidia.com/gpu": "64"},
                    "queues": [{"metadata": {"name": "q"}, "spec": {"capability": {"nvidia.com/gpu": "8"}}}],
                    "jobs": [{"name": "a", "queue": "q", "min": {"nvidia.com/gpu": "8"}},
                             {"name": "b", "queue": "q", "min": {"nvidia.com/gpu": "8"}, "created": 1}]})
    assert queues.decide() == [("ns", "a")]
    queues.unplaced(("ns", "a"))
    assert queues.jobs[("ns", "a")].phase == "Inqueue"
    assert queues.usage["q"].inqueue["nvidia.com/gpu"] == 8000
    assert queues.decide() == [("ns", "a")]  # the next session lets it try again; b still waits
    assert queues.verdict(("ns", "b")).reason == "QueueCapped"  # type: ignore[union-attr]


def test_a_job_placed_before_a_restart_counts_when_the_ledger_is_rebuilt() -> None:
    queues = fleet({"total": {"nvidia.com/gpu": "64"},
                    "queues": [{"metadata": {"name": "q"}, "spec": {"capability": {"nvidia.com/gpu": "8"}}}],
                    "jobs": [{"name": "placed", "queue": "q", "min": {"nvidia.com/gpu": "8"}, "created": 5},
                             {"name": "new", "queue": "q", "min": {"nvidia.com/gpu": "8"}, "created": 1}]})
    queues.mark_allocated(("ns", "placed"))
    assert queues.decide() == []
    assert queues.verdict(("ns", "new")).reason == "QueueCapped"  # type: ignore[union-attr]
