"""A cancelled generation: every share carries cancelled: true until the backoff lets placement retry."""

from __future__ import annotations

import copy

import pytest

from federation.controllers.common import ControllerOptions, parse_time
from tests.controllers_fed.conftest import FAST, Fed, until
from tests.controllers_fed.test_two_phase_failover import setup


@pytest.fixture
def options() -> ControllerOptions:
    slow_retry = copy.copy(FAST)
    slow_retry.retry_base_seconds = 30.0
    slow_retry.retry_max_seconds = 60.0
    return slow_retry


async def test_cancel_marks_every_share_and_waits_for_the_backoff(fed: Fed) -> None:
    cancelled_before = _cancellations()
    await setup(fed, "flagged", timeout=600)

    async def shares() -> dict | None:
        works = await fed.works("flagged")
        return works if len(works) == 2 else None

    await until(shares, "two shares")
    await fed.gang("cluster-a", "flagged", 1, "Reserved")
    await fed.gang("cluster-b", "flagged", 1, "Failed")

    async def cancelled() -> dict | None:
        works = await fed.works("flagged")
        return works if works and all(w["spec"]["placement"]["cancelled"] for w in works.values()) else None

    works = await until(cancelled, "cancelled: true on every share")
    assert all(w["spec"]["placement"]["generation"] == 1 and w["spec"]["placement"]["hold"] for w in works.values())
    rb = await fed.rb("flagged")
    notes = rb["metadata"]["annotations"]
    assert notes["caldera.io/cancelled-generation"] == "1"
    assert notes["caldera.io/placement-generation"] == "1"  # the retry waits for the backoff
    wait = parse_time(notes["caldera.io/retry-after"]) - parse_time(notes["caldera.io/placed-at"])
    assert 25 <= wait <= 40
    assert _cancellations() == cancelled_before + 1


def _cancellations() -> float:
    from federation import metrics

    return metrics.REGISTRY.get_sample_value("caldera_two_phase_outcomes_total", {"outcome": "cancelled"}) or 0.0
