"""The dashboard's events grouped per object, and the GANG column once a share is over (pure)."""

from __future__ import annotations

from typing import Any

import pytest

from federation.ui import data


def ev(kind: str, name: str, reason: str, time: str, type_: str = "Normal", count: int = 1) -> dict[str, Any]:
    return {"reason": reason, "type": type_, "count": count, "lastTimestamp": time, "message": reason.lower(),
            "involvedObject": {"kind": kind, "name": name, "namespace": "default"}}


def test_events_group_per_object_newest_group_first_with_counts_and_warnings() -> None:
    groups = data.event_groups([
        ev("Job", "a", "Scheduled", "2026-12-03T07:00:00Z"),
        ev("Job", "b", "Scheduled", "2026-12-03T07:00:05Z"),
        ev("Job", "a", "ShareFailed", "2026-12-03T07:00:09Z", "Warning", count=3),
        ev("Job", "a", "Released", "2026-12-03T07:00:02Z"),
    ])
    assert [g["object"] for g in groups] == ["Job/a", "Job/b"]
    first = groups[0]
    assert (first["count"], first["warnings"], first["latest"]["reason"]) == (5, 3, "ShareFailed")
    assert [e["reason"] for e in first["events"]] == ["ShareFailed", "Released", "Scheduled"]
    assert data.event_groups([ev("Job", str(i), "X", f"2026-12-03T07:00:{i:02d}Z") for i in range(9)], limit=4)[0][
        "object"] == "Job/8"


@pytest.mark.parametrize(("phase", "reported", "shown"), [
    ("Running", "Running", "Running"),
    ("Pending", "Reserved", "Reserved"),
    ("Completed", "Running", "Completed"),
    ("Failed", "Running", "Failed"),
    ("Completing", "Released", "Completing"),
    ("Pending", None, ""),
])
def test_gang_column_is_the_share_phase_once_the_share_is_over(phase: str, reported: str | None, shown: str) -> None:
    entry = {"name": "j", "namespace": "default", "clusters": [{"name": "c1", "phase": phase, "gangPhase": reported}]}
    page = data.job_page(entry, [], [])
    share = page["clusters"][0]
    assert share["gangPhase"] == shown and share["gangPhaseReported"] == reported
    assert entry["clusters"][0]["gangPhase"] == reported  # the status document itself is not changed
