"""Cluster health as a pure state machine with an injected clock: data/health_cases.yaml."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from federation.controllers.health_state import (
    HealthConfig,
    Observation,
    Verdict,
    assess,
    merged_taints,
)
from federation.controllers.status_aggregate import stamp

CASES: list[dict[str, Any]] = yaml.safe_load((Path(__file__).parent / "data" / "health_cases.yaml").read_text())
NOW = datetime(2026, 12, 2, 12, 0, 0, tzinfo=UTC)
DEFAULTS = {"failover_grace": 300.0, "success_threshold": 30.0, "startup_grace": 60.0}


def ago(seconds: float) -> datetime:
    return NOW - timedelta(seconds=seconds)


def observation(case: dict[str, Any]) -> Observation:
    taints = tuple((f"cluster.karmada.io/{k}", e, stamp(ago(a))) for k, e, a in case.get("taints", []))
    ready = case.get("ready", "Unknown" if taints else "True")
    age = case["lease_age"]
    return Observation("member-1", ago(case.get("created_ago", 3600)), None if age is None else ago(age),
                       case.get("lease_duration", 40), ready, "ClusterReady" if ready == "True" else None, taints)


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_health_table(case: dict[str, Any]) -> None:
    config = HealthConfig(**{**DEFAULTS, **case.get("config", {})})
    recovering = ago(case["recovering_for"]) if "recovering_for" in case else None
    verdict = assess(observation(case), recovering, NOW, config)
    expect = case["expect"]
    assert verdict.undecided == expect.get("undecided", False)
    if not verdict.undecided:
        assert verdict.healthy == expect["healthy"]
        assert verdict.ready == expect["ready"] if "ready" in expect else True
    if "reason" in expect:
        assert verdict.reason == expect["reason"]
    wanted = [(f"cluster.karmada.io/{k}", e, stamp(ago(a))) for k, e, a in expect["taints"]]
    assert list(verdict.taints) == wanted
    assert (verdict.recovering_since is not None) == expect.get("recovering", False)


def test_recovery_clock_carries_over_between_rounds() -> None:
    """A flapping agent: fresh, expired again, fresh: the taints stay until a full streak of freshness."""
    config = HealthConfig(success_threshold=30.0)
    taint = (("cluster.karmada.io/unreachable", "NoSchedule", stamp(ago(500))),)

    def at(seconds: float, renewed_ago: float) -> tuple[Observation, datetime]:
        now = NOW + timedelta(seconds=seconds)
        return Observation("m", ago(3600), now - timedelta(seconds=renewed_ago), 40, "Unknown",
                           "ClusterStatusUnknown", taint), now

    first = assess(*at(0, 1)[:1], None, NOW, config)
    assert not first.healthy and first.recovering_since == NOW
    obs, now = at(20, 1)
    mid = assess(obs, first.recovering_since, now, config)
    assert not mid.healthy and mid.recovering_since == NOW
    obs, now = at(80, 45)  # the lease expires again: the recovery streak is lost
    expired = assess(obs, mid.recovering_since, now, config)
    assert not expired.healthy and expired.recovering_since is None and expired.reason == "ClusterStatusUnknown"
    obs, now = at(81, 0)
    restart = assess(obs, expired.recovering_since, now, config)
    assert not restart.healthy and restart.recovering_since == now  # a new streak starts from zero
    obs, later = at(81 + 29, 2)
    assert not assess(obs, restart.recovering_since, later, config).healthy
    obs, later = at(81 + 30, 2)
    assert assess(obs, restart.recovering_since, later, config).healthy


def test_messages_do_not_change_while_nothing_changes() -> None:
    """The controller compares what it would write; a message with a ticking age would write every round."""
    obs = Observation("m", ago(3600), ago(100), 40, "Unknown", "ClusterStatusUnknown",
                      (("cluster.karmada.io/unreachable", "NoSchedule", stamp(ago(60))),))
    a = assess(obs, None, NOW, HealthConfig())
    b = assess(obs, None, NOW + timedelta(seconds=7), HealthConfig())
    assert (a.ready, a.reason, a.message, a.taints) == (b.ready, b.reason, b.message, b.taints)


def test_merged_taints_keep_admin_taints() -> None:
    admin = {"key": "cluster.karmada.io/unschedulable", "effect": "NoSchedule"}
    ours_old = {"key": "cluster.karmada.io/unreachable", "effect": "NoSchedule", "timeAdded": "x"}
    verdict = Verdict(False, "Unknown", "r", "m", (("cluster.karmada.io/unreachable", "NoExecute", "t"),), None)
    assert merged_taints([admin, ours_old], verdict) == [
        admin, {"key": "cluster.karmada.io/unreachable", "effect": "NoExecute", "timeAdded": "t"}]
    healthy = Verdict(True, "True", "r", "m", (), 1.0)
    assert merged_taints([admin, ours_old], healthy) == [admin]
