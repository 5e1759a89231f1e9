"""``hyperNodes:`` in --sim cluster files: kept verbatim and admitted; a bad one is an error naming
the document, the field path and the rule."""

from __future__ import annotations

import pytest

from policies.cluster_layout import parse_cluster_text
from policies.errors import InvalidConfiguration

POOL = "pools: [{name: a100, count: 4, cpu: 8, memory: 8Gi}]\nname: c\n"


def test_hypernodes_kept_verbatim_with_kind_filled_in() -> None:
    cluster = parse_cluster_text(POOL + """hyperNodes:
- metadata: {name: leaf0}
  spec: {tier: 1, members: [{type: Node, selector: {regexMatch: {pattern: "^c-a100-[01]$"}}}]}
- apiVersion: topology.volcano.sh/v1alpha1
  kind: HyperNode
  metadata: {name: spine0}
  spec: {tier: 2, members: [{type: HyperNode, selector: {exactMatch: {name: leaf0}}}]}
""", source="c.yaml")
    assert [h["metadata"]["name"] for h in cluster.hyper_nodes] == ["leaf0", "spine0"]
    assert cluster.hyper_nodes[0]["kind"] == "HyperNode"
    assert cluster.hyper_nodes[0]["spec"]["members"][0]["selector"] == {"regexMatch": {"pattern": "^c-a100-[01]$"}}


def test_hypernode_documents_next_to_the_pools() -> None:
    cluster = parse_cluster_text(POOL + """---
apiVersion: topology.volcano.sh/v1alpha1
kind: HyperNode
metadata: {name: leaf0}
spec: {tier: 1, members: [{type: Node, selector: {exactMatch: {name: c-a100-0}}}]}
""")
    assert [h["metadata"]["name"] for h in cluster.hyper_nodes] == ["leaf0"]


BAD = [
    ("hyperNodes: {leaf0: {}}", "hyperNodes: must be a list"),
    ("hyperNodes: [{spec: {tier: 1, members: [{type: Node, selector: {exactMatch: {name: n}}}]}}]",
     "hyperNodes[0].metadata.name: required"),
    ("hyperNodes: [{metadata: {name: l}, spec: {tier: 1, members: []}}]",
     "hyperNodes[0]: HyperNode l is invalid: spec.members: a HyperNode must have at least one member"),
    ("hyperNodes: [{metadata: {name: l}, spec: {tier: 1, members: [{type: Node, selector: {regexMatch: {pattern: '(['}}}]}}]",
     "spec.members[0].selector.regexMatch.pattern: invalid regular expression"),
    ("hyperNodes: [{metadata: {name: l}, spec: {tier: 1, members: [{type: Node, selector: {}}]}}]",
     "spec.members[0].selector: exactly one of exactMatch, regexMatch or labelMatch must be set"),
    ("hyperNodes: [{metadata: {name: l}, spec: {tier: 1, members: [{type: Node, selector: {exactMatch: {name: a}}}]}},"
     " {metadata: {name: l}, spec: {tier: 1, members: [{type: Node, selector: {exactMatch: {name: b}}}]}}]",
     "HyperNode names must be unique, repeated: l"),
]


@pytest.mark.parametrize(("text", "message"), BAD, ids=[m for _, m in BAD])
def test_bad_hypernodes_refused(text: str, message: str) -> None:
    with pytest.raises(InvalidConfiguration) as info:
        parse_cluster_text(POOL + text, source="bad.yaml")
    assert message in str(info.value) and "bad.yaml" in str(info.value)
