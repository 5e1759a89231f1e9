"""Printer columns computed from related objects, and conditions printed as kubectl does (pure)."""

from __future__ import annotations

from typing import Any

import pytest

from federation.apiserver.table_karmada import (
    binding_clusters,
    fully_applied,
    placement_type,
    policy_clusters,
    policy_weights,
)
from federation.cli.describe import condition_lines

Obj = dict[str, Any]

POLICIES = [  # (placement, PLACEMENT, CLUSTERS, WEIGHTS)
    ({}, "Duplicated", "<all>", "<none>"),
    ({"clusterAffinity": {"clusterNames": ["a", "b"], "exclude": ["c"]},
      "replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Aggregated"}},
     "Divided/Aggregated", "a,b;!c", "<none>"),
    ({"clusterAffinity": {"labelSelector": {"matchLabels": {"zone": "eu"}}},
      "replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
                            "weightPreference": {"dynamicWeight": "AvailableReplicas"}}},
     "Divided/Weighted", "zone=eu", "dynamic:AvailableReplicas"),
    ({"clusterAffinities": [{"affinityName": "primary", "clusterNames": ["a"]},
                            {"affinityName": "backup", "clusterNames": ["b"]}],
      "replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
                            "weightPreference": {"staticWeightList": [
                                {"targetCluster": {"clusterNames": ["a"]}, "weight": 3}]}}},
     "Divided/Weighted", "primary(a) > backup(b)", "a=3"),
]


@pytest.mark.parametrize(("placement", "kind", "clusters", "weights"), POLICIES)
def test_policy_wide_columns(placement: Obj, kind: str, clusters: str, weights: str) -> None:
    policy = {"kind": "PropagationPolicy", "spec": {"placement": placement}}
    assert (placement_type(policy), policy_clusters(policy), policy_weights(policy)) == (kind, clusters, weights)


def _work(generation: int, applied: str | None) -> Obj:
    conds = [] if applied is None else [{"type": "Applied", "status": applied}]
    return {"spec": {"placement": {"generation": generation}}, "status": {"conditions": conds}}


RB = {"metadata": {"annotations": {"caldera.io/placement-generation": "2"}},
      "spec": {"resource": {"namespace": "ns", "name": "j"},
               "clusters": [{"name": "a", "replicas": 1}, {"name": "b", "replicas": 2}, {"name": "c", "replicas": 0}]}}
FULLY_APPLIED = [  # (Works by cluster, FULLYAPPLIED)
    ({"a": _work(2, "True"), "b": _work(2, "True")}, "True"),
    ({"a": _work(2, "True")}, "False"),
    ({"a": _work(2, "True"), "b": _work(1, "True")}, "False"),
    ({"a": _work(2, "True"), "b": _work(2, "False")}, "False"),
    ({"a": _work(2, "True"), "b": _work(2, None)}, "False"),
]


@pytest.mark.parametrize(("works", "expected"), FULLY_APPLIED)
def test_fully_applied_is_read_from_the_current_works(works: dict[str, Obj], expected: str) -> None:
    seen: list[tuple[str, str, str]] = []

    def lookup(kind: str, namespace: str, name: str) -> Obj | None:
        seen.append((kind, namespace, name))
        return works.get(namespace.removeprefix("karmada-es-")) if name == "ns.j" else None

    assert fully_applied(RB, lookup) == expected
    assert ("Work", "karmada-es-c", "ns.j") not in seen  # a cluster with no replicas has no Work
    assert binding_clusters(RB) == "a:1,b:2"


def test_fully_applied_unknown_before_scheduling() -> None:
    assert fully_applied({"spec": {"clusters": []}}, lambda *_: None) == "Unknown"


def test_conditions_print_type_status_time_reason_message_and_phase_history_apart() -> None:
    lines = condition_lines([
        {"status": "Pending", "lastTransitionTime": "2026-01-01T00:00:00Z"},
        {"status": "Running", "lastTransitionTime": "2026-01-01T00:01:00Z"},
        {"type": "Scheduled", "status": "True", "reason": "Success", "message": "placed on\n2 clusters",
         "lastTransitionTime": "2026-01-01T00:00:30Z"},
        {"type": "Reserved", "status": "False"},
    ])
    assert lines[0] == "Conditions:"
    assert lines[1].split() == ["Type", "Status", "LastTransitionTime", "Reason", "Message"]
    assert lines[3].split() == ["Scheduled", "True", "2026-01-01T00:00:30Z", "Success", "placed", "on", "2", "clusters"]
    assert lines[4].split() == ["Reserved", "False"]
    history = lines.index("Phase History:")
    assert [line.split() for line in lines[history + 3:]] == [["Pending", "2026-01-01T00:00:00Z"],
                                                             ["Running", "2026-01-01T00:01:00Z"]]
    assert not any("Pending Pending" in " ".join(line.split()) for line in lines)
