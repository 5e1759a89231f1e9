"""Fencing on the federation side: the agent's fence checked against the published graces,
``caldera serve`` refusing unsafe flag combinations, the post-release verdict, the triggers that
answer a fenced share or a torn-down gang, and the Job's "by halves" condition (all tables)."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from federation.controllers import fence_check, post_release, triggers
from federation.controllers.share_views import PlannedShare, ShareView
from federation.controllers.status_aggregate import gang_started_condition
from federation.controllers.teardown import pinned_by_policy, unknown_clusters

PUBLISHED = fence_check.timing(10, 10, 3)
GOOD = {"enabled": True, "fenceSeconds": 10, "spanningFenceSeconds": 3, "podTerminationGraceSeconds": 3}

CHECK_CASES = [
    (GOOD, "Safe"),
    (None, "Unreported"),
    (dict(GOOD, enabled=False), "Unsafe"),
    (dict(GOOD, fenceSeconds=17), "Unsafe"),           # 17 + 3 is not before 20
    (dict(GOOD, spanningFenceSeconds=16), "Unsafe"),   # after the teardown at the lease grace + 5 s
    ({"enabled": True, "fenceSeconds": 1}, "Unsafe"),  # fields missing
]


@pytest.mark.parametrize(("report", "result"), CHECK_CASES)
def test_agent_fence_check(report: Any, result: str) -> None:
    got, message = fence_check.check(report, PUBLISHED)
    assert got == result and message


UNSAFE_FLAGS = [
    ((10, 10, 30), "--pod-termination-grace (30)"),   # 20 s is not enough for 30 s pods + 6 s
    ((10, 10, 14), "--cluster-failover-grace (10)"),
    ((2, 3, None), "must exceed 6s"),                  # no room to fence at all
    ((None, 0, 35), "--cluster-lease-grace (40)"),
]
SAFE_FLAGS = [(None, None, None), (10, 10, None), (10, 10, 3), (10, 10, 13), (None, 0, 30), (4, 600, None)]


@pytest.mark.parametrize(("flags", "named"), UNSAFE_FLAGS)
def test_unsafe_serve_flags_are_named(flags: tuple[Any, Any, Any], named: str) -> None:
    why = fence_check.unsafe_flags(*flags)
    assert why is not None and named in why


@pytest.mark.parametrize("flags", SAFE_FLAGS)
def test_safe_serve_flags(flags: tuple[Any, Any, Any]) -> None:
    assert fence_check.unsafe_flags(*flags) is None


@pytest.mark.parametrize(("lease", "failover", "flag", "published"), [
    (40, 300, None, 30.0), (10, 10, None, 7.0), (10, 10, 3, 3.0), (3, 2, None, 0.0)])
def test_published_termination_grace(lease: float, failover: float, flag: float | None, published: float) -> None:
    assert fence_check.published_termination_grace(lease, failover, flag) == published


def test_caldera_serve_refuses_unsafe_fencing(tmp_path: Any) -> None:
    done = subprocess.run([sys.executable, "-m", "federation", "serve", "--data-dir", str(tmp_path),
                           "--listen", "127.0.0.1:0", "--cluster-lease-grace", "10",
                           "--cluster-failover-grace", "10", "--pod-termination-grace", "30"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert "unsafe fencing" in done.stderr and "--cluster-lease-grace (10)" in done.stderr
    assert "--pod-termination-grace (30)" in done.stderr


def _work(cluster: str, phase: str, generation: int = 4, fenced_at: int | None = None) -> dict[str, Any]:
    conditions = []
    if fenced_at is not None:
        conditions.append({"type": "Fenced", "status": "True", "message": "fenced: federation unreachable since X",
                           "observedGeneration": fenced_at})
    return {"metadata": {"name": "team.job", "namespace": f"karmada-es-{cluster}"},
            "spec": {"placement": {"generation": generation, "hold": False, "clusters": 2}},
            "status": {"gang": {"generation": generation, "phase": phase}, "conditions": conditions}}


JUDGE_CASES = [
    # (phases, unknown, started before, now) -> action, failed
    ({"a": "Running", "b": "Running"}, set(), False, 10.0, "none", ()),
    ({"a": "Running", "b": "Released"}, set(), False, 10.0, "wait", ("b",)),
    ({"a": "Running", "b": "Released"}, set(), False, 61.0, "cancel", ("b",)),
    ({"a": "Running", "b": "Released"}, {"b"}, False, 5.0, "cancel", ("b",)),   # Unknown: not started at once
    ({"a": "Running", "b": "Running"}, {"a"}, True, 500.0, "cancel", ("a",)),   # a running gang too
    ({"a": "Running", "b": "Failed"}, set(), True, 500.0, "none", ()),         # started once: the job's business
]


@pytest.mark.parametrize(("phases", "unknown", "started", "now", "action", "failed"), JUDGE_CASES)
def test_post_release_judge(phases: dict[str, str], unknown: set[str], started: bool, now: float, action: str,
                            failed: tuple[str, ...]) -> None:
    works = {c: _work(c, p) for c, p in phases.items()}
    verdict = post_release.judge(works, 4, released_at=0.0, deadline=60.0, unknown=unknown,
                                 started_before=started, now=now)
    assert verdict.action == action
    if action != "none":
        assert verdict.failed == failed and verdict.message


def test_fenced_share_of_the_current_generation_only() -> None:
    works = {"a": _work("a", "Running"), "b": _work("b", "Running", fenced_at=4),
             "c": _work("c", "Running", fenced_at=3)}
    assert set(triggers.fenced_shares(works, 4)) == {"b"}


def _binding(note: dict[str, Any] | None, tolerations: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    annotations = {"caldera.io/placement-generation": "4"}
    if note is not None:
        annotations[post_release.TORN_DOWN] = json.dumps(note)
    return {"metadata": {"annotations": annotations},
            "spec": {"placement": {"clusterTolerations": tolerations or []},
                     "clusters": [{"name": "a", "replicas": 2, "components": [{"name": "worker", "replicas": 2}]},
                                  {"name": "b", "replicas": 2, "components": [{"name": "worker", "replicas": 2}]}]}}


@pytest.mark.parametrize(("policies", "ends"), [
    ([{"event": "PodEvicted", "action": "AbortJob"}], "Aborted"),
    ([{"event": "PodEvicted", "action": "RestartJob"}], None),
    ([], None),
])
def test_torn_down_gang_follows_its_pod_evicted_policy(policies: list[dict[str, str]], ends: str | None) -> None:
    job = {"spec": {"policies": policies, "tasks": [{"name": "worker", "replicas": 4}]}}
    note = {"generation": 4, "clusters": ["b"], "unknown": ["b"], "reason": "cluster b Unknown"}
    decision = triggers.torn_down_ending(job, _binding(note), 4)
    assert (decision.phase if decision else None) == ends
    assert triggers.torn_down_ending(job, _binding(dict(note, generation=3)), 4) is None


@pytest.mark.parametrize(("tolerations", "pinned"), [
    ([], False),
    ([{"key": "cluster.karmada.io/unreachable", "operator": "Exists", "effect": "NoExecute"}], True),
    ([{"key": "cluster.karmada.io/unreachable", "operator": "Exists", "effect": "NoExecute",
       "tolerationSeconds": 60}], False),
    ([{"operator": "Exists"}], True),
])
def test_pinned_by_policy(tolerations: list[dict[str, Any]], pinned: bool) -> None:
    assert pinned_by_policy(_binding(None, tolerations)) is pinned


def test_unknown_clusters_by_condition_or_taint() -> None:
    clusters = {
        "a": {"status": {"conditions": [{"type": "Ready", "status": "True"}]}},
        "b": {"status": {"conditions": [{"type": "Ready", "status": "Unknown"}]}},
        "c": {"spec": {"taints": [{"key": "cluster.karmada.io/unreachable", "effect": "NoSchedule"}]}},
        "d": {"spec": {"taints": [{"key": "cluster.karmada.io/not-ready", "effect": "NoSchedule"}]}},
    }
    assert unknown_clusters(clusters) == {"b", "c"}


def _view(cluster: str, phase: str, fenced: bool = False) -> ShareView:
    return ShareView(PlannedShare(cluster, 2, 2, {"worker": 2}), _work(cluster, phase, fenced_at=4 if fenced else None), False)


@pytest.mark.parametrize(("views", "status", "reason"), [
    ([("a", "Running", False), ("b", "Running", False)], "True", "AllSharesStarted"),
    ([("a", "Running", False), ("b", "Released", False)], "False", "RunningByHalves"),
    ([("a", "Running", False), ("b", "Running", True)], "False", "RunningByHalves"),
    ([("a", "Released", False), ("b", "Released", False)], "False", "Starting"),
])
def test_job_status_says_it_runs_by_halves(views: list[tuple[str, str, bool]], status: str, reason: str) -> None:
    (cond,) = gang_started_condition([_view(*v) for v in views], {}, "2026-12-05T00:00:00Z")
    assert (cond["type"], cond["status"], cond["reason"]) == ("GangStarted", status, reason)
