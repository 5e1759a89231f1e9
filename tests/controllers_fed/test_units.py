"""Pure pieces: policy matching, the two-phase verdict, Work rendering and overrides, merge diffs."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from federation.controllers.binding import keeps_from
from federation.controllers.matching import match_policy
from federation.controllers.render import apply_overrides, share_manifest
from federation.controllers.two_phase import judge, merge_caps
from federation.placement.request import ClusterState
from policies.k8s.patches import merge_diff
from tests.controllers_fed.conftest import DATA, SEED, load

MATCH_CASES: list[dict[str, Any]] = yaml.safe_load((DATA / "matching.yaml").read_text())
JOB = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
       "metadata": {"name": "train", "namespace": "default", "labels": {"team": "ml"}, "uid": "u-1"}}


def _policy(spec: dict[str, Any]) -> dict[str, Any]:
    selector = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", **spec["selector"]}
    meta: dict[str, Any] = {"name": spec["name"]}
    if spec["kind"] == "PropagationPolicy":
        meta["namespace"] = spec.get("namespace", "default")
    return {"apiVersion": "policy.karmada.io/v1alpha1", "kind": spec["kind"], "metadata": meta,
            "spec": {"resourceSelectors": [selector], "priority": spec.get("priority", 0)}}


@pytest.mark.parametrize("case", MATCH_CASES, ids=[c["name"] for c in MATCH_CASES])
def test_policy_matching(case: dict[str, Any]) -> None:
    match = match_policy(JOB, [_policy(p) for p in case["policies"]])
    winner = match.policy["metadata"]["name"] if match.policy else None
    assert winner == case["winner"]
    assert [p["metadata"]["name"] for p in match.conflicts] == case["rivals"]
    if case["rivals"]:
        assert "same priority" in match.conflict_message()


def _work(generation: int, phase: str | None, answered: int | None = None, hold: bool = True) -> dict[str, Any]:
    status = {} if phase is None else {"gang": {"generation": answered if answered is not None else generation,
                                                "phase": phase}}
    return {"spec": {"placement": {"generation": generation, "hold": hold}}, "status": status}


JUDGE_CASES = [
    # (name, works, now, action, failed)
    ("all-reserved-releases", {"a": _work(2, "Reserved"), "b": _work(2, "Reserved")}, 5, "release", ()),
    ("already-released-is-done", {"a": _work(2, "Running", hold=False), "b": _work(2, "Released", hold=False)},
     5, "none", ()),
    ("one-pending-waits", {"a": _work(2, "Reserved"), "b": _work(2, "Pending")}, 5, "wait", ()),
    ("stale-answer-is-ignored", {"a": _work(2, "Reserved"), "b": _work(2, "Reserved", answered=1)}, 5, "wait", ()),
    ("stale-answer-times-out", {"a": _work(2, "Reserved"), "b": _work(2, "Reserved", answered=1)}, 61, "cancel",
     ("b",)),
    ("failed-cancels-at-once", {"a": _work(2, "Failed"), "b": _work(2, None)}, 1, "cancel", ("a",)),
    ("unschedulable-waits-for-the-timeout", {"a": _work(2, "Unschedulable"), "b": _work(2, "Reserved")}, 5, "wait",
     ()),
    ("unschedulable-at-the-timeout-cancels", {"a": _work(2, "Unschedulable"), "b": _work(2, "Reserved")}, 60,
     "cancel", ("a",)),
    ("old-failure-is-ignored", {"a": _work(2, "Failed", answered=1), "b": _work(2, "Reserved")}, 5, "wait", ()),
    ("share-not-written-yet", {"a": _work(1, "Reserved"), "b": None}, 5, "wait", ()),
]


@pytest.mark.parametrize("name,works,now,action,failed", JUDGE_CASES, ids=[c[0] for c in JUDGE_CASES])
def test_two_phase_verdict(name: str, works: dict[str, Any], now: float, action: str, failed: tuple[str, ...]) -> None:
    verdict = judge(works, 2, placed_at=0.0, timeout=60, now=now)
    assert verdict.action == action
    assert verdict.failed == failed
    if action == "wait":
        assert verdict.wait_seconds == pytest.approx(60 - now) or name == "share-not-written-yet"


def test_caps_accumulate_per_task() -> None:
    shares = {"a": {"tasks": {"worker": {"replicas": 3}, "ps": {"replicas": 1}}}}
    caps = merge_caps(None, shares, ("a",), until=100.0)
    caps = merge_caps(caps, shares, ("a",), until=200.0)
    assert caps == {"a": {"tasks": {"worker": 6, "ps": 2}, "until": 200.0, "failures": 2}}


def test_share_manifest_carries_the_share_and_global_indices() -> None:
    job = load(SEED / "job-pytorch-dist-training.yaml")[0]
    job["metadata"].update(namespace="default", uid="uid-9", resourceVersion="7")
    job["status"] = {"state": {"phase": "Running"}}
    share = {"minAvailable": 2, "tasks": {"master": {"replicas": 0, "minAvailable": 0, "offset": 0},
                                          "worker": {"replicas": 2, "minAvailable": 2, "offset": 1}}}
    manifest = share_manifest(job, share, {"master": 1, "worker": 3}, 4)
    assert "status" not in manifest and "uid" not in manifest["metadata"]
    assert manifest["spec"]["minAvailable"] == 2
    assert [(t["name"], t["replicas"], t["minAvailable"]) for t in manifest["spec"]["tasks"]] == [
        ("master", 0, 0), ("worker", 2, 2)]
    notes = manifest["metadata"]["annotations"]
    assert json.loads(notes["caldera.io/task-offsets"]) == {"master": 0, "worker": 1}
    assert notes["caldera.io/world-size"] == "4" and notes["caldera.io/placement-generation"] == "4"
    assert notes["caldera.io/job-uid"] == "uid-9"
    assert job["spec"]["tasks"][1]["replicas"] == 3  # the Job itself is untouched


def test_overrides_apply_per_cluster_cluster_policies_first() -> None:
    job = load(SEED / "job-pytorch-dist-training.yaml")[0]
    job["metadata"]["namespace"] = "default"
    manifest = share_manifest(job, {"minAvailable": 4, "tasks": {}}, {}, 1)
    cop = {"kind": "ClusterOverridePolicy", "metadata": {"name": "registry"},
           "spec": {"resourceSelectors": [{"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job"}],
                    "overrideRules": [{"targetCluster": {"clusterNames": ["cluster-a"]},
                                       "overriders": {"imageOverrider": [{"component": "Registry",
                                                                          "operator": "replace",
                                                                          "value": "mirror.cn"}]}}]}}
    op = {"kind": "OverridePolicy", "metadata": {"name": "labels", "namespace": "default"},
          "spec": {"overrideRules": [{"overriders": {
              "labelsOverrider": [{"operator": "add", "value": {"site": "a"}}],
              "plaintext": [{"path": "/spec/queue", "operator": "replace", "value": "local"},
                            {"path": "/spec/nope/x", "operator": "remove"}]}}]}}
    applied, problems = apply_overrides(manifest, job, ClusterState(name="cluster-a"), [op, cop])
    assert applied == ["ClusterOverridePolicy registry", "OverridePolicy default/labels"]
    assert manifest["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["image"] == \
        "mirror.cn/pytorch/pytorch:2.0.0-cuda11.8"
    assert manifest["metadata"]["labels"] == {"site": "a"} and manifest["spec"]["queue"] == "local"
    assert len(problems) == 1 and "/spec/nope/x" in problems[0]
    other = share_manifest(job, {"minAvailable": 4, "tasks": {}}, {}, 1)
    applied, _ = apply_overrides(other, job, ClusterState(name="cluster-b"), [cop])
    assert applied == [] and other["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["image"] == \
        "pytorch/pytorch:2.0.0-cuda11.8"


@pytest.mark.parametrize("old,new,patch", [
    ({"a": 1, "b": {"c": 1, "d": 2}}, {"a": 1, "b": {"c": 1, "d": 3}}, {"b": {"d": 3}}),
    ({"a": 1, "b": 2}, {"a": 1}, {"b": None}),
    ({"l": [1, 2]}, {"l": [1, 2]}, {}),
    ({"l": [1, 2]}, {"l": [2]}, {"l": [2]}),
])
def test_merge_diff(old: dict[str, Any], new: dict[str, Any], patch: dict[str, Any]) -> None:
    assert merge_diff(old, new) == patch


@pytest.mark.parametrize("tolerations,until", [
    ([], float("-inf")),
    ([{"key": "cluster.karmada.io/unreachable", "operator": "Exists", "effect": "NoExecute"}], None),
    ([{"key": "cluster.karmada.io/unreachable", "operator": "Exists", "effect": "NoExecute",
       "tolerationSeconds": 30}], 1_000_030.0),
    ([{"key": "other", "operator": "Exists", "tolerationSeconds": 30}], float("-inf")),
    ([{"operator": "Exists"}], None),
])
def test_no_execute_toleration_seconds(tolerations: list[dict[str, Any]], until: float | None) -> None:
    from federation.controllers.binding import tolerated_until
    from federation.controllers.common import rfc3339

    taint = {"key": "cluster.karmada.io/unreachable", "effect": "NoExecute", "timeAdded": rfc3339(1_000_000)}
    assert tolerated_until(taint, tolerations) == until


def test_serve_starts_placement_and_dispatch_by_default() -> None:
    from federation.controllers.dispatch import dispatch_controller
    from federation.controllers.manager import registered_controllers
    from federation.controllers.placement import placement_controller

    started = registered_controllers()
    assert placement_controller in started and dispatch_controller in started


def test_assumed_shares_merge_per_shape_and_drop_confirmed() -> None:
    from federation.controllers.assumed import AssumedShares

    works: dict[tuple[str, str], dict[str, Any]] = {}
    shares = AssumedShares(lambda ns, name: works.get((ns, name)))
    job = load(SEED / "job-gpu-dist-training.yaml")[0]
    for i in range(3):
        j = {**job, "metadata": {"name": f"j{i}", "namespace": "default", "uid": f"u{i}"}}
        shares.remember(j, 1, {"clusters": {"a": {"tasks": {"worker": {"replicas": 2}}},
                                            "b": {"tasks": {"worker": {"replicas": 1}}}}})
    merged = {w.cluster: [n for _, n in w.components] for w in shares.others("u0")}
    assert merged == {"a": [4], "b": [2]}  # j1 + j2, one component per cluster and shape
    def work(cluster: str, gang_generation: int) -> dict[str, Any]:
        return {"metadata": {"namespace": f"karmada-es-{cluster}", "name": "default.j1",
                             "labels": {"caldera.io/job-uid": "u1"}},
                "spec": {"placement": {"generation": 1}},
                "status": {"gang": {"generation": gang_generation, "phase": "Running"}}}

    for cluster, gang_generation in (("a", 1), ("b", 0)):
        works[(f"karmada-es-{cluster}", "default.j1")] = work(cluster, gang_generation)
        shares.observe(work(cluster, gang_generation))   # what the Work informer does
    merged = {w.cluster: [n for _, n in w.components] for w in shares.others("u0")}
    assert merged == {"a": [2], "b": [2]}  # j1 confirmed on a; on b only an older generation ran
    shares.forget("u2")
    shares.remember({**job, "metadata": {"name": "j9", "namespace": "default", "uid": "u9"}}, 1, None)
    merged = {w.cluster: [n for _, n in w.components] for w in shares.others("u0")}
    assert merged == {"b": [1]}  # only j1's unconfirmed share on b is left; nothing negative
    assert {w.cluster: [n for _, n in w.components] for w in shares.others("u1")} == {"a": [2], "b": [1]}  # j0 only


def _rb(placement: dict[str, Any] | None) -> dict[str, Any]:
    notes = {} if placement is None else {"caldera.io/placement": json.dumps(placement)}
    return {"metadata": {"annotations": notes}}


# (previous placement JSON, new generation, a re-placement?) -> keepsFrom: generations are fencing
# tokens; only a re-division for a changed spec keeps the running pods of the ones it continues
KEEPS_FROM_CASES = [
    (None, 1, True, 1),                                      # the first division
    ({"generation": 3, "keepsFrom": 2}, 4, True, 4),         # a lost cluster / fenced share: restart
    ({"generation": 3, "keepsFrom": 2}, 4, False, 2),        # rescaled: keeps what generation 3 kept
    ({"generation": 3}, 4, False, 3),                        # written before keepsFrom: generation 3's pods
    ({"generation": 3, "keepsFrom": 2}, 3, False, 2),        # same layout, same generation
    ({"generation": 3, "keepsFrom": "x"}, 4, False, 4),      # unreadable: nothing older is kept
]


@pytest.mark.parametrize(("previous", "generation", "restart", "expected"), KEEPS_FROM_CASES)
def test_keeps_from(previous: dict[str, Any] | None, generation: int, restart: bool, expected: int) -> None:
    assert keeps_from(_rb(previous) if previous is not None else None, generation, restart) == expected
