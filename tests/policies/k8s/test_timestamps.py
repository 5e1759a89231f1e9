"""policies.k8s.timestamps against its table (timestamps.yaml), and the former copies' entry points on the same rows."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from federation.controllers.common import parse_time as controller_time
from member_agent.controllers.timestamps import parse_rfc3339
from member_agent.scheduler.framework.object_fields import parse_time as scheduler_time
from policies.k8s.timestamps import epoch_seconds, instant

CASES: dict[str, Any] = yaml.safe_load((Path(__file__).parent / "timestamps.yaml").read_text())


@pytest.mark.parametrize("case", CASES["epoch"], ids=[repr(c["text"]) for c in CASES["epoch"]])
def test_every_reader_gives_the_same_epoch_seconds(case: dict[str, Any]) -> None:
    seconds = case["seconds"]
    assert epoch_seconds(case["text"]) == seconds
    moment = instant(case["text"])
    assert moment is not None and moment.tzinfo is not None and moment.timestamp() == seconds
    assert scheduler_time(case["text"]) == seconds
    assert controller_time(case["text"]) == seconds
    job_time = parse_rfc3339(case["text"])
    assert job_time is not None and job_time.timestamp() == seconds


@pytest.mark.parametrize("text", CASES["unreadable"])
def test_an_unreadable_timestamp_is_none_to_the_lenient_readers_and_an_error_to_the_strict_one(text: str) -> None:
    assert instant(text) is None and controller_time(text) is None and parse_rfc3339(text) is None
    with pytest.raises(ValueError, match="not an RFC 3339 timestamp"):
        epoch_seconds(text)


def test_an_unset_field() -> None:
    assert instant(None) is None and instant("") is None
    assert scheduler_time(None) == 0.0 and controller_time("") is None


def test_the_scheduler_reads_a_datetime_as_it_is() -> None:
    assert scheduler_time(datetime(2026, 12, 2, 10, tzinfo=UTC)) == 1796205600
