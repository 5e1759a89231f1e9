"""``topology.volcano.sh/v1alpha1`` HyperNode: a network domain of nodes or other HyperNodes.

A HyperNode groups the nodes behind one switch (tier 1, the closest) or the HyperNodes below
one spine (tier 2, ...). Members are selected by exact name, by regular expression over the
names, or (nodes only) by labels (volcano.md §6.16, §8.5). Cluster-scoped.
"""

from __future__ import annotations

from typing import ClassVar, Literal, Optional

from pydantic import Field

from policies.models.fields import Int32, KindObject
from policies.models.meta import Condition, K8sModel, LabelSelector

MemberType = Literal["Node", "HyperNode"]


class ExactMatch(K8sModel):
    name: Optional[str] = None


class RegexMatch(K8sModel):
    pattern: Optional[str] = None


class MemberSelector(K8sModel):
    exact_match: Optional[ExactMatch] = None
    regex_match: Optional[RegexMatch] = None
    label_match: Optional[LabelSelector] = None

    def chosen(self) -> list[str]:
        """The selector kinds that are set (exactly one is valid)."""
        return [name for name, value in (("exactMatch", self.exact_match), ("regexMatch", self.regex_match),
                                         ("labelMatch", self.label_match)) if value is not None]


class MemberSpec(K8sModel):
    type: Optional[MemberType] = None
    selector: Optional[MemberSelector] = None


class HyperNodeSpec(K8sModel):
    tier: Optional[Int32] = None
    tier_name: Optional[str] = None
    members: Optional[list[MemberSpec]] = None


class HyperNodeStatus(K8sModel):
    conditions: Optional[list[Condition]] = None
    node_count: Optional[int] = None


class HyperNode(KindObject):
    API_VERSION: ClassVar[str] = "topology.volcano.sh/v1alpha1"
    KIND: ClassVar[str] = "HyperNode"

    spec: HyperNodeSpec = Field(default_factory=HyperNodeSpec)
    status: Optional[HyperNodeStatus] = None
