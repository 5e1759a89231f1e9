"""The HyperNode tree: domains per tier as row arrays, the virtual top, LCA, and what one manifest
cannot show reported as problems (not refused); a session without HyperNodes builds none of it."""

from __future__ import annotations

import json

from member_agent.scheduler import build_snapshot, run_cycle
from member_agent.scheduler.framework.clock import FixedClock
from member_agent.scheduler.framework.hypernodes import TOP, build_tree
from policies.scheduler_conf import parse_scheduler_conf

NAMES = [f"n{i}" for i in range(8)]


def hn(name: str, tier: int, kind: str, selector: dict, tier_name: str = "") -> dict:
    return {"metadata": {"name": name}, "spec": {"tier": tier, "tierName": tier_name,
                                                 "members": [{"type": kind, "selector": selector}]}}


LEAVES = [hn("leaf-a", 1, "Node", {"regexMatch": {"pattern": "^n[0-3]$"}}, "leaf"),
          hn("leaf-b", 1, "Node", {"labelMatch": {"matchLabels": {"switch": "b"}}}, "leaf"),
          hn("spine", 2, "HyperNode", {"regexMatch": {"pattern": "^leaf-"}}, "spine")]
LABELS = [{} if i < 4 else {"switch": "b"} for i in range(8)]


def test_domains_per_tier_top_and_lca() -> None:
    tree = build_tree(LEAVES, NAMES, LABELS)
    assert tree.problems == []
    assert tree.names[-1] == TOP and tree.top_tier == 3 and tree.tier_list == [1, 2, 3]
    a, b, spine = tree.index["leaf-a"], tree.index["leaf-b"], tree.index["spine"]
    assert tree.domain_of[1].tolist() == [a] * 4 + [b] * 4
    assert tree.domain_of[2].tolist() == [spine] * 8
    assert tree.rows[spine].tolist() == list(range(8))
    assert tree.lca_of_rows([0, 3]) == a and tree.lca_of_rows([0, 5]) == spine
    assert tree.tier_of_name("spine") == 2 and tree.tier_of_name("rack") is None
    assert tree.highest_allowed(a, 2) == spine and tree.highest_allowed(a, 1) == a


def test_problems_reported_and_the_rest_kept() -> None:
    bad = [*LEAVES,
           hn("x", 4, "HyperNode", {"exactMatch": {"name": "y"}}), hn("y", 4, "HyperNode", {"exactMatch": {"name": "x"}}),
           hn("dup", 1, "Node", {"exactMatch": {"name": "n0"}}),
           hn("spine2", 2, "HyperNode", {"exactMatch": {"name": "leaf-a"}}),
           hn("ghost", 2, "HyperNode", {"exactMatch": {"name": "missing"}}),
           hn("low", 1, "HyperNode", {"exactMatch": {"name": "spine"}})]
    tree = build_tree(bad, NAMES, LABELS)
    text = "\n".join(tree.problems)
    assert "HyperNode cycle: x -> y -> x" in text
    assert "node n0 is claimed by HyperNodes dup and leaf-a of tier 1; kept in dup" in text
    assert "HyperNode leaf-a is a member of both spine and spine2; kept under spine" in text
    assert "HyperNode missing does not exist" in text
    assert "member HyperNode spine has tier 2, not below 1" in text
    assert tree.domain_of[1][1] == tree.index["leaf-a"]  # the rest of leaf-a stays


CONF = parse_scheduler_conf("""
actions: "enqueue, allocate"
tiers:
- plugins: [{name: priority}, {name: gang}]
- plugins: [{name: predicates}, {name: nodeorder}, {name: network-topology-aware}]
""")


def objects(with_hypernodes: bool) -> list[dict]:
    objs: list[dict] = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": n, "labels": LABELS[i]},
                         "status": {"allocatable": {"cpu": "8", "memory": "8Gi", "pods": "10"}}}
                        for i, n in enumerate(NAMES)]
    objs.append({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                 "metadata": {"name": "j", "namespace": "default"},
                 "spec": {"minMember": 2, "networkTopology": {"mode": "hard", "highestTierAllowed": 1}},
                 "status": {"phase": "Inqueue"}})
    for i in range(2):
        objs.append({"apiVersion": "v1", "kind": "Pod", "metadata": {
            "name": f"j-w-{i}", "namespace": "default", "annotations": {"scheduling.k8s.io/group-name": "j"}},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "8"}}}]},
            "status": {"phase": "Pending"}})
    if with_hypernodes:
        objs.extend(dict(h, apiVersion="topology.volcano.sh/v1alpha1", kind="HyperNode") for h in LEAVES)
    return objs


def test_without_hypernodes_nothing_is_built_and_the_job_is_placed_flat() -> None:
    snapshot = build_snapshot(objects(False))
    assert snapshot.topology is None
    result = run_cycle(snapshot, CONF, FixedClock())
    assert len(result.bindings) == 2 and result.pod_group_annotations == {}
    assert "podGroupAnnotations" not in result.to_json()


def test_with_hypernodes_the_annotation_reaches_the_json() -> None:
    result = run_cycle(build_snapshot(objects(True)), CONF, FixedClock())
    assert len(result.bindings) == 2
    hypernode = result.to_json()["podGroupAnnotations"]["default/j"]["volcano.sh/job-allocated-hypernode"]
    rows = {int(n[1:]) for n in result.bindings.values()}
    assert (hypernode, rows <= set(range(4)) or rows <= set(range(4, 8))) in (("leaf-a", True), ("leaf-b", True))
    json.dumps(result.to_json())  # the result stays JSON


def test_top_domains_per_tier_for_a_shape() -> None:
    import numpy as np

    from member_agent.scheduler.framework.domain_capacity import top_domains

    tree = build_tree(LEAVES, NAMES, LABELS)
    free = np.array([[8.0, 8.0]] * 8)  # cpu, gpu per node
    free[0:3] = [8.0, 0.0]  # leaf-a: only n3 has GPUs free
    rooms = top_domains(tree, free, np.array([1.0, 4.0]), k=1)
    assert [(r.tier, r.hypernode, r.pods) for r in rooms] == [(1, "leaf-b", 8), (2, "spine", 10), (3, TOP, 10)]
    assert top_domains(None, free, np.array([1.0, 4.0]), k=3)[0].pods == 10
