"""Every scenario file under tests/data/scenarios runs one session and meets its expectation."""

from __future__ import annotations

from pathlib import Path

import pytest

from member_agent.scheduler.scenarios import check_file, scenario_files

SCENARIOS = Path(__file__).resolve().parents[1] / "data" / "scenarios"
FILES = scenario_files(SCENARIOS)


def test_there_are_enough_scenarios() -> None:
    assert len(FILES) >= 60


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(SCENARIOS)) for p in FILES])
def test_scenario(path: Path) -> None:
    outcome = check_file(path)
    assert outcome.ok, "\n".join(outcome.failures)
