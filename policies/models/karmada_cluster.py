"""Karmada's member-cluster object (``cluster.karmada.io/v1alpha1 Cluster``), cluster-scoped.

The admin writes ``spec``; the agent writes ``status``. Besides Karmada's status fields
Caldera's agent reports what an exact placement estimate needs (docs/protocol.md):
``nodeShapes`` (identical free vectors grouped), ``preemptibleShapes`` (the same, were
lower-priority pods evicted), ``gpus``, ``numa`` and ``queues``.
"""

from __future__ import annotations

from typing import Any, ClassVar, Optional

from pydantic import Field

from policies.models.fields import KindObject
from policies.models.karmada_common import LocalSecretReference, QuantityMap, QuantityText, Taint
from policies.models.meta import Condition, K8sModel

GROUP_VERSION = "cluster.karmada.io/v1alpha1"
SYNC_MODES = ("Push", "Pull")
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
READY = "Ready"


class ResourceModelRange(K8sModel):
    name: str
    min: QuantityText
    max: QuantityText


class ResourceModel(K8sModel):
    grade: int
    ranges: list[ResourceModelRange]


class ClusterSpec(K8sModel):
    id: Optional[str] = None
    sync_mode: Optional[str] = None
    api_endpoint: Optional[str] = None
    secret_ref: Optional[LocalSecretReference] = None
    impersonator_secret_ref: Optional[LocalSecretReference] = None
    insecure_skip_tls_verification: Optional[bool] = None
    proxy_url: Optional[str] = Field(default=None, alias="proxyURL")
    proxy_header: Optional[dict[str, str]] = None
    provider: Optional[str] = None
    region: Optional[str] = None
    #: Deprecated in Karmada in favour of ``zones``.
    zone: Optional[str] = None
    zones: Optional[list[str]] = None
    taints: Optional[list[Taint]] = None
    resource_models: Optional[list[ResourceModel]] = None


class APIResource(K8sModel):
    name: str
    kind: str


class APIEnablement(K8sModel):
    group_version: str
    resources: Optional[list[APIResource]] = None


class NodeSummary(K8sModel):
    total_num: Optional[int] = None
    ready_num: Optional[int] = None


class AllocatableModeling(K8sModel):
    grade: int
    count: int


class ResourceSummary(K8sModel):
    allocatable: Optional[QuantityMap] = None
    allocating: Optional[QuantityMap] = None
    allocated: Optional[QuantityMap] = None
    allocatable_modelings: Optional[list[AllocatableModeling]] = None


class NodeShape(K8sModel):
    """``count`` nodes whose free resources are ``free`` and whose placement labels are ``labels``."""

    count: int = Field(ge=0)
    free: QuantityMap
    labels: Optional[dict[str, str]] = None


class PreemptibleShapes(K8sModel):
    """Node shapes as they would be if every preemptable pod with priority < ``belowPriority``
    were evicted: what a job of priority >= ``belowPriority`` could get by preemption."""

    below_priority: int
    shapes: list[NodeShape]


class TopologyDomain(K8sModel):
    """One network domain (a HyperNode, or the whole cluster): its free capacity as node shapes."""

    name: str
    nodes: int = Field(ge=0)
    shapes: list[NodeShape]


class TopologyTier(K8sModel):
    """The ``k`` roomiest domains of one tier (docs/protocol.md "Topology")."""

    tier: int = Field(ge=1)
    tier_name: Optional[str] = None
    #: how many domains the tier has in all (``top`` holds at most ``k`` of them)
    domains: int = Field(ge=0)
    top: list[TopologyDomain]


class ClusterTopology(K8sModel):
    """``status.topology``: per tier below the cluster's top tier, the top-k domains' free capacity.
    The top tier (``topTier``) is the whole cluster, whose capacity is ``nodeShapes``."""

    k: int = Field(ge=1)
    top_tier: int = Field(ge=1)
    tiers: list[TopologyTier] = Field(default_factory=list)


class GPUSummary(K8sModel):
    product: str
    total: int = Field(ge=0)
    free: int = Field(ge=0)
    #: free GPUs on partly used nodes (unusable by a job that wants whole nodes)
    fragmented: Optional[int] = Field(default=None, ge=0)


class QueueSummary(K8sModel):
    name: str
    allocated: Optional[QuantityMap] = None
    deserved: Optional[QuantityMap] = None
    capability: Optional[QuantityMap] = None
    guarantee: Optional[QuantityMap] = None


class FenceCheck(K8sModel):
    result: str
    message: Optional[str] = None


class FailoverTiming(K8sModel):
    """Written by the federation's cluster health controller (docs/protocol.md, *Fencing*)."""

    lease_grace_seconds: float
    failover_grace_seconds: float
    pod_termination_grace_seconds: Optional[float] = None
    fence_check: Optional[FenceCheck] = None


class AgentFence(K8sModel):
    """Written by the agent: when it stops re-placeable shares once cut off (docs/protocol.md, *Fencing*)."""

    enabled: bool = True
    fence_seconds: float
    spanning_fence_seconds: float
    pod_termination_grace_seconds: int
    margin_seconds: Optional[float] = None
    basis: Optional[str] = None
    lease_grace_seconds: Optional[float] = None
    failover_grace_seconds: Optional[float] = None


class ClusterStatus(K8sModel):
    kubernetes_version: Optional[str] = None
    api_enablements: Optional[list[APIEnablement]] = None
    conditions: Optional[list[Condition]] = None
    node_summary: Optional[NodeSummary] = None
    resource_summary: Optional[ResourceSummary] = None
    remedy_actions: Optional[list[str]] = None
    # Caldera extensions (docs/protocol.md "Cluster status")
    node_shapes: Optional[list[NodeShape]] = None
    #: ascending ``belowPriority``; one entry per distinct priority of preemptable pods, + 1
    preemptible_shapes: Optional[list[PreemptibleShapes]] = None
    gpus: Optional[list[GPUSummary]] = None
    #: NUMA layout as the agent reports it; free-form until the topology plugins fix a schema.
    numa: Optional[Any] = None
    queues: Optional[list[QueueSummary]] = None
    failover_timing: Optional[FailoverTiming] = None
    fence: Optional[AgentFence] = None
    topology: Optional[ClusterTopology] = None


class Cluster(KindObject):
    API_VERSION: ClassVar[str] = GROUP_VERSION
    KIND: ClassVar[str] = "Cluster"
    api_version: str = GROUP_VERSION
    kind: str = "Cluster"
    spec: ClusterSpec = Field(default_factory=ClusterSpec)
    status: Optional[ClusterStatus] = None

    def condition(self, type_: str) -> Optional[Condition]:
        for cond in (self.status.conditions if self.status else None) or []:
            if cond.type == type_:
                return cond
        return None

    def is_ready(self) -> bool:
        cond = self.condition(READY)
        return cond is not None and cond.status == "True"
