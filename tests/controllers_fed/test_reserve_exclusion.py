"""A cluster that keeps failing to reserve a job's share is left out of that job's placements."""

from __future__ import annotations

import json
from typing import Any

import pytest

from federation.controllers.assumed import excluded_clusters, reserve_caps
from federation.controllers.two_phase import exclusion_note, merge_caps, newly_excluded
from tests.controllers_fed.conftest import Fed, until
from tests.controllers_fed.test_placement_dispatch import _reasons, _works_of_generation
from tests.controllers_fed.test_two_phase_failover import setup

TTL = 900.0
SHARES = {"a": {"tasks": {"worker": {"replicas": 3}}}, "b": {"tasks": {"worker": {"replicas": 5}}}}

# Each case is a run of cancelled attempts: (time, clusters of the attempt, clusters that failed);
# expect: per cluster, (consecutive failures, excluded) after the last attempt (absent: no entry).
EXCLUSION_CASES: list[dict[str, Any]] = [
    {"name": "one failure only lowers the estimate",
     "attempts": [(0, "ab", "b")], "expect": {"b": (1, False)}},
    {"name": "two failures in a row exclude",
     "attempts": [(0, "ab", "b"), (10, "ab", "b")], "expect": {"b": (2, True)}},
    {"name": "a reserved attempt in between resets the count",
     "attempts": [(0, "ab", "b"), (10, "ab", "a"), (20, "ab", "b")], "expect": {"a": (0, False), "b": (1, False)}},
    {"name": "not being placed does not reset the count",
     "attempts": [(0, "ab", "b"), (10, "a", "a"), (20, "ab", "b")], "expect": {"a": (0, False), "b": (2, True)}},
    {"name": "a failure older than the cap's lifetime does not count",
     "attempts": [(0, "ab", "b"), (TTL + 1, "ab", "b")], "expect": {"b": (1, False)}},
    {"name": "both clusters failing twice are both excluded",
     "attempts": [(0, "ab", "ab"), (10, "ab", "ab")], "expect": {"a": (2, True), "b": (2, True)}},
    {"name": "an excluded cluster stays excluded when it fails again",
     "attempts": [(0, "ab", "b"), (10, "ab", "b"), (20, "ab", "ab")], "expect": {"a": (1, False), "b": (3, True)}},
]


@pytest.mark.parametrize("case", EXCLUSION_CASES, ids=[c["name"] for c in EXCLUSION_CASES])
def test_exclusion_table(case: dict[str, Any]) -> None:
    caps: dict[str, Any] | None = None
    for now, placed, failed in case["attempts"]:
        shares = {cl: SHARES[cl] for cl in placed}
        caps = merge_caps(caps, shares, tuple(failed), now + TTL, now=now, exclude_after=2)
    assert caps is not None
    got = {cl: (entry["failures"], bool(entry.get("excluded"))) for cl, entry in caps.items()}
    assert got == case["expect"]


def test_exclusion_off_when_exclude_after_is_zero() -> None:
    caps = merge_caps(None, SHARES, ("b",), TTL, now=0, exclude_after=0)
    caps = merge_caps(caps, SHARES, ("b",), TTL + 10, now=10, exclude_after=0)
    assert caps["b"] == {"tasks": {"worker": 10}, "until": TTL + 10, "failures": 2}


def test_excluded_cluster_is_named_once_and_left_out_until_its_cap_expires() -> None:
    first = merge_caps(None, SHARES, ("b",), TTL, now=0, exclude_after=2)
    second = merge_caps(first, SHARES, ("b",), 60 + TTL, now=60, exclude_after=2)
    assert newly_excluded(first, second) == ("b",)
    assert newly_excluded(second, merge_caps(second, SHARES, ("b",), 120 + TTL, now=120, exclude_after=2)) == ()
    assert exclusion_note("b", second["b"], 60) == "b failed to reserve 2 times: excluded for 15m"
    rb = {"metadata": {"annotations": {"caldera.io/reserve-caps": json.dumps(second)}}}
    assert list(excluded_clusters(rb, 60)) == ["b"]
    assert excluded_clusters(rb, 61 + TTL) == {}
    job = {"spec": {"tasks": [{"name": "worker", "replicas": 8, "template": {"spec": {"containers": [
        {"name": "w", "resources": {"requests": {"cpu": "1"}}}]}}}]}}
    assert reserve_caps(job, rb, 60) == ()  # excluded outright, not lowered as well


async def test_cluster_failing_twice_is_excluded_and_the_job_goes_elsewhere(fed: Fed) -> None:
    await setup(fed, "stubborn", timeout=600)
    first = await until(lambda: _works_of_generation(fed, "stubborn", 1, 2), "generation 1 shares")
    assert sorted(first) == ["cluster-a", "cluster-b"]
    # cluster-a's agent never manages to reserve (say its queue is closed): it answers Failed
    await fed.gang("cluster-b", "stubborn", 1, "Reserved")
    await fed.gang("cluster-a", "stubborn", 1, "Failed")
    second = await until(lambda: _works_of_generation(fed, "stubborn", 2, 2), "generation 2 shares", timeout=10)
    assert _split(second) == {"cluster-a": 1, "cluster-b": 7}  # only lowered by the failed share
    rb = await fed.rb("stubborn")
    caps = json.loads(rb["metadata"]["annotations"]["caldera.io/reserve-caps"])
    assert caps["cluster-a"]["failures"] == 1 and not caps["cluster-a"].get("excluded")
    await fed.gang("cluster-b", "stubborn", 2, "Reserved")
    await fed.gang("cluster-a", "stubborn", 2, "Failed")
    third = await until(lambda: _works_of_generation(fed, "stubborn", 3, 1), "generation 3 without cluster-a",
                        timeout=10)
    assert _split(third) == {"cluster-b": 8}
    assert third["cluster-b"]["spec"]["placement"]["hold"] is False
    rb = await fed.rb("stubborn")
    caps = json.loads(rb["metadata"]["annotations"]["caldera.io/reserve-caps"])
    assert caps["cluster-a"]["failures"] == 2 and caps["cluster-a"]["excluded"] is True
    scheduled = next(c for c in rb["status"]["conditions"] if c["type"] == "Scheduled")
    assert scheduled["status"] == "True"
    assert "cluster-a failed to reserve 2 times: excluded for 15m" in scheduled["message"]
    events = await until(lambda: _reasons(fed, "stubborn", "ClusterExcluded"), "a ClusterExcluded event")
    assert events


async def test_excluding_the_big_cluster_leaves_the_job_unschedulable_with_the_reason(fed: Fed) -> None:
    await setup(fed, "bigfail", timeout=600)
    for generation in (1, 2):
        await until(lambda g=generation: _works_of_generation(fed, "bigfail", g, 2), f"generation {generation}",
                    timeout=10)
        await fed.gang("cluster-a", "bigfail", generation, "Reserved")
        await fed.gang("cluster-b", "bigfail", generation, "Failed")
    rb = await until(lambda: _scheduled_false(fed, "bigfail"), "Scheduled=False once cluster-b is excluded",
                     timeout=10)
    scheduled = next(c for c in rb["status"]["conditions"] if c["type"] == "Scheduled")
    assert "cluster-b failed to reserve 2 times: excluded for 15m" in scheduled["message"]
    assert rb["spec"]["clusters"] == []  # never left half-placed
    assert await until(lambda: _no_works(fed, "bigfail"), "every Work withdrawn")


def _split(works: dict[str, Any]) -> dict[str, int]:
    return {c: w["spec"]["workload"]["manifests"][0]["spec"]["tasks"][0]["replicas"] for c, w in works.items()}


async def _scheduled_false(fed: Fed, job: str) -> dict[str, Any] | None:
    rb = await fed.rb(job)
    cond = next((c for c in ((rb or {}).get("status") or {}).get("conditions") or [] if c["type"] == "Scheduled"),
                None)
    return rb if cond is not None and cond["status"] == "False" else None


async def _no_works(fed: Fed, job: str) -> bool:
    return not await fed.works(job)
