"""``job_runner.to_datetime`` is memoised (issue 41 round 9): it must equal a fresh conversion, for the
same instant written as an int or a float, and follow a new instant."""

from __future__ import annotations

from datetime import UTC, datetime

from member_agent.job_runner import to_datetime


def test_to_datetime_equals_a_fresh_conversion() -> None:
    for epoch in (1700000000, 1700000000.0, 1700000000.25, 1700000001.0, -0.0, 0.0):
        assert to_datetime(epoch) == datetime.fromtimestamp(epoch, tz=UTC)
        assert to_datetime(epoch).tzinfo is UTC
    assert to_datetime(1700000000.0) is to_datetime(1700000000.0)  # remembered
    assert to_datetime(1700000000.5) != to_datetime(1700000000.0)
