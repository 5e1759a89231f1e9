"""The dashboard's GPU-use series: totals from the Clusters, one sample per step, bounded."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from federation.ui.history import GpuHistory, gpu_totals

T0 = datetime(2026, 12, 3, 7, 0, 0, tzinfo=UTC)


def test_totals_sum_the_clusters_reported_gpus() -> None:
    clusters = [{"status": {"gpus": [{"total": 8, "free": 2}, {"total": 4, "free": 4}]}}, {"status": {}},
                {"status": {"gpus": [{"total": 16, "free": 1}]}}]
    assert gpu_totals(clusters) == (6 + 0 + 15, 28)


def test_samples_within_a_step_update_the_last_and_the_series_is_bounded() -> None:
    history = GpuHistory(capacity=3, step_seconds=5)
    history.record(T0, 1, 8)
    history.record(T0 + timedelta(seconds=2), 3, 8)  # same step: updates the sample at T0
    assert history.points() == [{"time": "2026-12-03T07:00:00Z", "used": 3, "total": 8}]
    for i in range(1, 5):
        history.record(T0 + timedelta(seconds=5 * i), i, 8)
    assert [p["used"] for p in history.points()] == [2, 3, 4]
    assert history.points()[0]["time"] == "2026-12-03T07:00:10Z"
