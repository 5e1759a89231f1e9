"""framework/node_index.py: indexed label and taint checks agree with the per-node definitions."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from member_agent.scheduler.framework.builder import build_snapshot
from member_agent.scheduler.framework.node_index import NodeIndex, placement_key
from member_agent.scheduler.framework.snapshot import NodeSelectorTerm, Taint, Toleration
from member_agent.scheduler.plugins.predicates import term_mask
from policies.k8s.node_selector import NodeSelectorRequirement
from policies.k8s.tolerations import tolerated

KEYS = ("pool", "zone", "nvidia.com/gpu.product", "rank")
VALUES = ("a", "b", "c", "1", "7", "12")
TAINTS = (Taint("dedicated", "x", "NoSchedule"), Taint("gpu", "", "NoExecute"), Taint("soft", "y", "PreferNoSchedule"))


@st.composite
def node_docs(draw: st.DrawFn) -> list[dict[str, Any]]:
    docs = []
    for i in range(draw(st.integers(1, 25))):
        labels = draw(st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES), max_size=3))
        taints = draw(st.lists(st.sampled_from(TAINTS), max_size=2, unique=True))
        docs.append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{i:02d}", "labels": labels},
                     "spec": {"taints": [{"key": t.key, "value": t.value, "effect": t.effect} for t in taints]},
                     "status": {"allocatable": {"cpu": "4", "memory": "8Gi"}}})
    return docs


requirements = st.builds(
    NodeSelectorRequirement, st.sampled_from(KEYS),
    st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]),
    st.lists(st.sampled_from(VALUES), min_size=1, max_size=2).map(tuple),
)


@settings(max_examples=80, deadline=None)
@given(node_docs(), st.lists(requirements, min_size=1, max_size=3), st.sampled_from(KEYS), st.sampled_from(VALUES))
def test_indexed_label_checks_match_the_per_node_definition(docs: list[dict[str, Any]],
                                                            reqs: list[NodeSelectorRequirement], key: str, value: str) -> None:
    nodes = build_snapshot(docs).nodes
    index = NodeIndex(nodes)
    term = NodeSelectorTerm(expressions=tuple(reqs))
    expected = np.array([all(r.matches(labels.get(r.key)) for r in reqs) for labels in nodes.labels])
    assert np.array_equal(term_mask(nodes, term, index), expected)
    assert np.array_equal(term_mask(nodes, term), expected)
    assert np.array_equal(index.label_equals(key, value), np.array([labels.get(key) == value for labels in nodes.labels]))


@settings(max_examples=50, deadline=None)
@given(node_docs(), st.lists(st.builds(Toleration, st.sampled_from(["", "dedicated", "gpu", "soft"]),
                                       st.sampled_from(["Equal", "Exists"]), st.sampled_from(["", "x", "y"]),
                                       st.sampled_from(["", "NoSchedule", "NoExecute", "PreferNoSchedule"])),
                             max_size=2).map(tuple))
def test_taint_groups_cover_every_tainted_node_once(docs: list[dict[str, Any]], tolerations: tuple[Toleration, ...]) -> None:
    nodes = build_snapshot(docs).nodes
    groups = NodeIndex(nodes).taint_groups()
    seen: list[int] = []
    for taints, rows in groups:
        for row in rows.tolist():
            assert nodes.taints[row] == taints
            seen.append(row)
        # one verdict per group is the verdict of each member
        verdict = [tolerated(tolerations, t) for t in taints]
        assert all([tolerated(tolerations, t) for t in nodes.taints[row]] == verdict for row in rows.tolist())
    assert sorted(seen) == [row for row, taints in enumerate(nodes.taints) if taints]


def test_placement_key_ignores_the_request_but_not_selector_affinity_or_tolerations() -> None:
    def pod(cpu: str, selector: dict[str, str], tolerations: list[dict[str, str]]) -> dict[str, Any]:
        return {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": f"p-{cpu}-{len(selector)}-{len(tolerations)}", "namespace": "d",
                             "annotations": {"scheduling.k8s.io/group-name": "g"}},
                "spec": {"nodeSelector": selector, "tolerations": tolerations,
                         "containers": [{"name": "m", "resources": {"requests": {"cpu": cpu}}}]},
                "status": {"phase": "Pending"}}
    group = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup", "metadata": {"name": "g", "namespace": "d"},
             "spec": {"minMember": 1}}
    snapshot = build_snapshot([group, pod("1", {"pool": "a"}, []), pod("2", {"pool": "a"}, []),
                               pod("1", {}, []), pod("1", {"pool": "a"}, [{"key": "k", "operator": "Exists"}])])
    keys = [placement_key(t) for t in snapshot.jobs[0].tasks]
    shapes = [t.shape for t in snapshot.jobs[0].tasks]
    assert len(set(shapes)) == 4
    assert len(set(keys)) == 3
