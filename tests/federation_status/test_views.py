"""``caldera describe job`` shows shares and why pending; ``caldera serve`` health flags parse."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime

import pytest

from federation.cli.describe import describe_text
from federation.controllers.health import config_from
from federation.controllers.status_aggregate import aggregate
from federation.health_options import add_health_flags, health_options
from tests.federation_status.builders import binding, job, work

NOW = datetime(2026, 12, 2, 10, 5, 0, tzinfo=UTC)


def test_describe_job_lists_shares_and_why_pending() -> None:
    rb = binding("train", 1, {"a": {"worker": [4, 4]}, "b": {"master": [1, 1], "worker": [4, 4]}})
    works = [work("train", "a", 1, "Running", running=4),
             work("train", "b", 1, "Pending", pending=5, gang={"phase": "Pending", "reason": "gang: 2/5 fit"})]
    obj = job()
    obj["status"] = aggregate(obj, rb, works, NOW).status
    text = describe_text(obj, [], NOW)
    lines = text.splitlines()
    why = [line for line in lines if line.startswith("Why Pending:")]
    assert why and "WaitingForReservation" in why[0] and "b: gang: 2/5 fit" in why[0]
    start = lines.index("Clusters:")
    header, _rule, row_a, row_b = lines[start + 1:start + 5]
    assert header.split() == ["Cluster", "Replicas", "MinAvailable", "Phase", "Running", "Succeeded", "Failed",
                              "Gang", "Reason"]
    assert row_a.split()[:5] == ["a", "4", "4", "Running", "4"]
    assert row_b.split()[:8] == ["b", "5", "5", "Pending", "0", "0", "0", "Pending"]
    assert "gang: 2/5 fit" in row_b
    assert "clusters:" not in text  # not repeated inside the Status block


def test_running_job_has_no_why_pending() -> None:
    rb = binding("train", 1, {"a": {"worker": [2, 2]}})
    obj = job()
    obj["status"] = aggregate(obj, rb, [work("train", "a", 1, "Running", running=2)], NOW).status
    assert "Why Pending" not in describe_text(obj, [], NOW)


def test_health_flags_reach_the_controller_config() -> None:
    parser = argparse.ArgumentParser()
    add_health_flags(parser)
    args = parser.parse_args(["--cluster-lease-grace", "8", "--cluster-failover-grace", "20"])
    options = health_options(args)
    assert options == {"cluster_lease_grace": 8.0, "cluster_failover_grace": 20.0}
    config = config_from(options)
    assert (config.lease_grace, config.failover_grace, config.success_threshold) == (8.0, 20.0, 30.0)
    with pytest.raises(SystemExit, match="must be >= 0"):
        health_options(parser.parse_args(["--cluster-failover-grace", "-1"]))
