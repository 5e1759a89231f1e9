"""The placement core's own input types: small, frozen, hashable.

They are built from API objects by :mod:`federation.placement.adapters`, so the core never
depends on how the models evolve. Resources are in :mod:`policies.resources` units
(cpu milli-cores, memory bytes, pods whole, other scalars milli-units).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Optional

from policies.k8s.label_selector import LabelSelector
from policies.k8s.label_selector import (
    Requirement as Requirement,  # re-exported: part of the request's vocabulary
)
from policies.k8s.tolerations import Taint as Taint
from policies.k8s.tolerations import Toleration as Toleration

#: ``(resource, amount)`` pairs sorted by name: a hashable resource vector.
Resources = tuple[tuple[str, float], ...]
#: ``(key, value)`` pairs sorted by key: hashable labels / node selector.
Labels = tuple[tuple[str, str], ...]

DEFAULT_MAX_PODS_PER_NODE = 110


def resources(mapping: dict[str, float]) -> Resources:
    return tuple(sorted((k, float(v)) for k, v in mapping.items()))


def labels(mapping: dict[str, str] | None) -> Labels:
    return tuple(sorted((str(k), str(v)) for k, v in (mapping or {}).items()))


# ---------------------------------------------------------------- the workload


@dataclass(frozen=True)
class TaskDemand:
    """One Volcano task: ``replicas`` pods of one shape, ``min_available`` of them gang-bound."""

    name: str
    replicas: int
    min_available: int
    request: Resources  # one pod's request, ``pods: 1`` included
    node_selector: Labels = ()


@dataclass(frozen=True)
class JobTopology:
    """The job's ``spec.networkTopology`` (docs/topology.md "The fleet tier")."""

    mode: Literal["hard", "soft"] = "hard"
    highest_tier: Optional[int] = None  # highestTierAllowed
    highest_tier_name: str = ""  # highestTierName


@dataclass(frozen=True)
class JobDemand:
    namespace: str
    name: str
    uid: str
    tasks: tuple[TaskDemand, ...]
    min_available: int
    #: the job's PriorityClass value (None: no class, or one that is not known)
    priority: Optional[int] = None
    #: its PriorityClass lets it preempt (preemptionPolicy is not Never)
    preempts: bool = False
    #: ``spec.networkTopology`` (None: the job has none)
    topology: Optional[JobTopology] = None

    @property
    def replicas(self) -> int:
        return sum(t.replicas for t in self.tasks)

    @property
    def ref(self) -> str:
        return f"{self.namespace}/{self.name}"


# ---------------------------------------------------------------- the clusters


@dataclass(frozen=True)
class NodeShape:
    """``count`` identical nodes with ``free`` resources and the labels that matter."""

    count: int
    free: Resources
    labels: Labels = ()


@dataclass(frozen=True)
class ResourceSummary:
    allocatable: Resources
    allocated: Resources = ()
    allocating: Resources = ()


@dataclass(frozen=True)
class TopologyDomain:
    """One reported network domain and its free capacity."""

    name: str
    shapes: tuple[NodeShape, ...]


@dataclass(frozen=True)
class TopologyTier:
    tier: int
    tier_name: str
    domains: tuple[TopologyDomain, ...]  # the reported (roomiest) ones


@dataclass(frozen=True)
class ClusterTopology:
    """``status.topology``: tiers below ``top_tier`` (the whole cluster), ascending."""

    top_tier: int = 1
    tiers: tuple[TopologyTier, ...] = ()


ReadyStatus = Literal["True", "False", "Unknown"]


@dataclass(frozen=True)
class ClusterState:
    name: str
    labels: Labels = ()
    provider: str = ""
    region: str = ""
    zones: tuple[str, ...] = ()
    taints: tuple[Taint, ...] = ()
    ready: ReadyStatus = "True"
    #: when ``ready`` last changed (seconds on the injected clock); None: never changed
    ready_since: Optional[float] = None
    #: last lease renewal (seconds), None when the cluster has no lease (push mode)
    lease_renewed: Optional[float] = None
    lease_duration: float = 40.0
    node_shapes: Optional[tuple[NodeShape, ...]] = None
    summary: Optional[ResourceSummary] = None
    deleting: bool = False
    #: ``status.preemptibleShapes``: (belowPriority, node shapes were pods of lower priority
    #: evicted), ascending by belowPriority
    preemptible: tuple[tuple[int, tuple[NodeShape, ...]], ...] = ()
    #: ``status.topology`` (None: not reported, the cluster is one domain)
    topology: Optional[ClusterTopology] = None


# ---------------------------------------------------------------- the policy


@dataclass(frozen=True)
class ClusterAffinity:
    """Karmada's ClusterAffinity; ``None`` fields mean "not set" (matches everything)."""

    cluster_names: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    label_selector: Optional[LabelSelector] = None
    field_expressions: tuple[Requirement, ...] = ()  # keys provider / region / zone
    name: str = ""  # affinityName inside clusterAffinities


@dataclass(frozen=True)
class SpreadConstraint:
    spread_by_field: str = ""  # cluster region zone provider
    spread_by_label: str = ""
    min_groups: int = 1
    max_groups: int = 0


@dataclass(frozen=True)
class StaticWeight:
    target: ClusterAffinity
    weight: int


Strategy = Literal["Duplicated", "StaticWeight", "DynamicWeight", "Aggregated"]


@dataclass(frozen=True)
class PlacementSpec:
    #: one entry when ``clusterAffinity`` (or nothing) is set; several for ``clusterAffinities``
    affinities: tuple[ClusterAffinity, ...] = (ClusterAffinity(),)
    tolerations: tuple[Toleration, ...] = ()
    spread: tuple[SpreadConstraint, ...] = ()
    strategy: Strategy = "Duplicated"
    static_weights: tuple[StaticWeight, ...] = ()
    policy: str = ""  # "namespace/name" of the policy, for messages


# ---------------------------------------------------------------- history and options


@dataclass(frozen=True)
class PreviousCluster:
    name: str
    replicas: int
    tasks: tuple[tuple[str, int], ...] = ()
    #: per task, the global indices the share's pods have (from the binding's placement record)
    indices: tuple[tuple[str, tuple[int, ...]], ...] = ()


@dataclass(frozen=True)
class PreviousPlacement:
    clusters: tuple[PreviousCluster, ...] = ()
    #: rescheduleTriggeredAt > lastScheduledTime: divide from scratch (Karmada's Fresh mode)
    fresh: bool = False
    affinity_name: str = ""  # status.schedulerObservingAffinityName


@dataclass(frozen=True)
class AssumedWorkload:
    """A placement made but not yet confirmed by the cluster: deducted before estimating."""

    cluster: str
    components: tuple[tuple[Resources, int], ...]  # (pod request, replicas)
    node_selectors: tuple[Labels, ...] = ()


@dataclass(frozen=True)
class Options:
    #: seconds a readiness change must hold before it counts (Karmada's 30 s thresholds)
    ready_failure_threshold: float = 30.0
    ready_success_threshold: float = 30.0
    #: optimizer: cost per cluster used, in replicas of distance (below 1: only breaks ties)
    cluster_penalty: float = 0.5
    time_limit: float = 1.0
    max_cuts: int = 4


@dataclass(frozen=True)
class PlacementRequest:
    job: JobDemand
    spec: PlacementSpec
    clusters: tuple[ClusterState, ...]
    now: float = 0.0
    previous: PreviousPlacement = field(default_factory=PreviousPlacement)
    assumed: tuple[AssumedWorkload, ...] = ()
    options: Options = field(default_factory=Options)
