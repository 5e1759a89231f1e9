"""Karmada's scheduling result and dispatch unit.

* :class:`ResourceBinding` (``work.karmada.io/v1alpha2``): one per resource template; the
  placement controller writes ``spec.clusters`` (reference/karmada.md §1.4).
* :class:`Work` (``work.karmada.io/v1alpha1``, namespace ``karmada-es-<cluster>``): the
  rendered manifests for one cluster, plus Caldera's two-phase gang protocol in
  ``spec.placement`` and ``status.gang`` (docs/protocol.md). Manifests stay free-form
  dicts: the agent decodes them with the codec when it applies them.
"""

from __future__ import annotations

from typing import Any, ClassVar, Optional

from pydantic import Field

from policies.models.fields import KindObject
from policies.models.karmada_common import ObjectReference, QuantityMap, Toleration
from policies.models.karmada_policy import FailoverBehavior, Placement, Suspension
from policies.models.meta import Condition, K8sModel

BINDING_GROUP_VERSION = "work.karmada.io/v1alpha2"
WORK_GROUP_VERSION = "work.karmada.io/v1alpha1"
HEALTH_VALUES = ("Healthy", "Unhealthy", "Unknown")
GANG_PHASES = ("Pending", "Reserved", "Released", "Running", "Failed", "Cancelled", "Unschedulable")
EXECUTION_NAMESPACE_PREFIX = "karmada-es-"

# The federation <-> agent contract's keys (docs/protocol.md), defined once for both planes.
#: a share's placement generation (annotation on the Work's Job, label on the agent's pods): the fencing token
PLACEMENT_GENERATION = "caldera.io/placement-generation"
#: Work status field: the placement generation the agent's status describes (docs/protocol.md,
#: *Fencing*); a status of an older generation than ``spec.placement.generation`` counts for nothing
OBSERVED_PLACEMENT_GENERATION = "observedPlacementGeneration"
#: label on Works: ``<namespace>.<name>`` and uid of the federated job they are a share of
JOB_LABEL = "caldera.io/job"
JOB_UID = "caldera.io/job-uid"
#: annotations on a share's Job: global index of its first replica per task, the whole job's
#: replicas per task, and their sum (so indices, ranks and world size are global)
TASK_OFFSETS = "caldera.io/task-offsets"
#: annotation on a share's Job, only when a task's global indices are not one range from its
#: offset (a re-placement kept running pods' indices): ``{task: [[start, end), ...]]}``
TASK_INDICES = "caldera.io/task-indices"
TASK_TOTALS = "caldera.io/task-totals"
WORLD_SIZE = "caldera.io/world-size"
#: annotation on a share's Job: the resources the federation admitted to this cluster for the
#: share (its replicas' requests, a ResourceList as JSON); the agent's queue view caps the
#: share's queue at the sum over its Works (docs/protocol.md "Fleet queues")
QUEUE_ALLOTMENT = "caldera.io/queue-allotment"


def execution_namespace(cluster: str) -> str:
    """The namespace holding the Works of ``cluster``."""
    return f"{EXECUTION_NAMESPACE_PREFIX}{cluster}"


# ---------------------------------------------------------------- ResourceBinding
class NodeClaim(K8sModel):
    #: A core/v1 NodeSelector; kept free-form (the placement filter reads terms directly).
    hard_node_affinity: Optional[dict[str, Any]] = None
    node_selector: Optional[dict[str, str]] = None
    tolerations: Optional[list[Toleration]] = None


class ReplicaRequirements(K8sModel):
    node_claim: Optional[NodeClaim] = None
    resource_request: Optional[QuantityMap] = None
    namespace: Optional[str] = None
    priority_class_name: Optional[str] = None


class Component(K8sModel):
    name: str = Field(max_length=32)
    replicas: int = Field(ge=0)
    replica_requirements: Optional[ReplicaRequirements] = None


class TargetComponent(K8sModel):
    name: str
    replicas: int = Field(ge=0)


class TargetCluster(K8sModel):
    name: str
    replicas: Optional[int] = Field(default=None, ge=0)
    components: Optional[list[TargetComponent]] = None


class GracefulEvictionTask(K8sModel):
    from_cluster: str
    purge_mode: Optional[str] = None
    replicas: Optional[int] = None
    reason: str
    message: Optional[str] = None
    producer: str
    grace_period_seconds: Optional[int] = None
    suppress_deletion: Optional[bool] = None
    preserved_label_state: Optional[dict[str, str]] = None
    creation_timestamp: Optional[str] = None
    clusters_before_failover: Optional[list[str]] = None


class BindingSnapshot(K8sModel):
    namespace: Optional[str] = None
    name: str
    clusters: Optional[list[TargetCluster]] = None


class BindingSuspension(Suspension):
    scheduling: Optional[bool] = None


class BindingSchedulePriority(K8sModel):
    priority: Optional[int] = None
    #: Never or PreemptLowerPriority (resolved from the policy's PriorityClass)
    preemption_policy: Optional[str] = None


class ResourceBindingSpec(K8sModel):
    resource: ObjectReference
    propagate_deps: Optional[bool] = None
    replica_requirements: Optional[ReplicaRequirements] = None
    replicas: Optional[int] = Field(default=None, ge=0)
    components: Optional[list[Component]] = None
    clusters: Optional[list[TargetCluster]] = None
    placement: Optional[Placement] = None
    graceful_eviction_tasks: Optional[list[GracefulEvictionTask]] = None
    required_by: Optional[list[BindingSnapshot]] = None
    scheduler_name: Optional[str] = None
    failover: Optional[FailoverBehavior] = None
    conflict_resolution: Optional[str] = None
    reschedule_triggered_at: Optional[str] = None
    suspension: Optional[BindingSuspension] = None
    preserve_resources_on_deletion: Optional[bool] = None
    schedule_priority: Optional[BindingSchedulePriority] = None
    workload_affinity_groups: Optional[dict[str, Any]] = None


class AggregatedStatusItem(K8sModel):
    cluster_name: str
    status: Optional[dict[str, Any]] = None
    applied: Optional[bool] = None
    applied_message: Optional[str] = None
    health: Optional[str] = None


class ResourceBindingStatus(K8sModel):
    scheduler_observed_generation: Optional[int] = None
    scheduler_observing_affinity_name: Optional[str] = None
    last_scheduled_time: Optional[str] = None
    conditions: Optional[list[Condition]] = None
    aggregated_status: Optional[list[AggregatedStatusItem]] = None


class ResourceBinding(KindObject):
    API_VERSION: ClassVar[str] = BINDING_GROUP_VERSION
    KIND: ClassVar[str] = "ResourceBinding"
    api_version: str = BINDING_GROUP_VERSION
    kind: str = "ResourceBinding"
    spec: ResourceBindingSpec
    status: Optional[ResourceBindingStatus] = None


def binding_name(name: str, kind: str) -> str:
    """Karmada's binding name for a template: ``<name>-<kind>`` lower-cased, ``:`` -> ``.``."""
    return f"{name}-{kind}".lower().replace(":", ".")


# ---------------------------------------------------------------- Work
class WorkloadTemplate(K8sModel):
    manifests: list[dict[str, Any]] = Field(default_factory=list)


class WorkPlacement(K8sModel):
    """Caldera's two-phase gang start (docs/protocol.md); absent on a plain Karmada Work."""

    generation: int = Field(ge=0)
    hold: bool = False
    cancelled: bool = False
    clusters: int = Field(default=1, ge=1)
    reserve_timeout_seconds: Optional[int] = Field(default=None, ge=1)
    #: false: the policy keeps the share where it is when the cluster is lost, so a cut-off agent
    #: never fences it (docs/protocol.md, *Fencing*); absent: it may be re-placed
    failover: Optional[bool] = None
    #: the oldest generation whose running pods this one keeps (a re-division for a changed spec);
    #: the agent stops every pod of an older generation; absent: ``generation`` (docs/protocol.md, *Fencing*)
    keeps_from_generation: Optional[int] = Field(default=None, ge=0)


class WorkSpec(K8sModel):
    workload: WorkloadTemplate = Field(default_factory=WorkloadTemplate)
    suspend_dispatching: Optional[bool] = None
    preserve_resources_on_deletion: Optional[bool] = None
    placement: Optional[WorkPlacement] = None


class ResourceIdentifier(K8sModel):
    ordinal: int = 0
    group: str = ""
    version: str
    kind: str
    resource: Optional[str] = None
    namespace: Optional[str] = None
    name: str


class ManifestStatus(K8sModel):
    identifier: ResourceIdentifier
    status: Optional[dict[str, Any]] = None
    health: Optional[str] = None


class GangStatus(K8sModel):
    """The agent's answer for ``spec.placement.generation``."""

    generation: int = Field(ge=0)
    phase: str
    reserved_until: Optional[str] = None
    reason: Optional[str] = None
    #: a held share's reservation, pod ("ns/name") -> node, and the session's pod annotations
    #: for it (GPU ids, NUMA): persisted so a restarted agent keeps holding the same nodes
    reservations: Optional[dict[str, str]] = None
    reservation_annotations: Optional[dict[str, dict[str, str]]] = None


class WorkStatus(K8sModel):
    conditions: Optional[list[Condition]] = None
    manifest_statuses: Optional[list[ManifestStatus]] = None
    gang: Optional[GangStatus] = None
    #: the placement generation this status describes (written by the agent)
    observed_placement_generation: Optional[int] = Field(default=None, ge=0)


def status_is_current(work: Any) -> bool:
    """Whether a Work's status speaks for its current ``spec.placement.generation``.

    Generations are fencing tokens: until the agent has reported on the newest generation, what
    the status says (job phase, health, counts) belongs to pods that are being replaced, and
    counts for nothing. A status without ``observedPlacementGeneration`` (an older agent, a plain
    Karmada Work) is taken as current."""
    if not isinstance(work, dict):
        return False
    status = work.get("status") or {}
    observed = status.get(OBSERVED_PLACEMENT_GENERATION) if isinstance(status, dict) else None
    placement = (work.get("spec") or {}).get("placement") or {}
    try:
        return observed is None or int(observed) >= int(placement.get("generation") or 0)
    except (TypeError, ValueError):
        return False


class Work(KindObject):
    API_VERSION: ClassVar[str] = WORK_GROUP_VERSION
    KIND: ClassVar[str] = "Work"
    api_version: str = WORK_GROUP_VERSION
    kind: str = "Work"
    spec: WorkSpec = Field(default_factory=WorkSpec)
    status: Optional[WorkStatus] = None
