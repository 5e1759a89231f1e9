"""``scheduling.volcano.sh/v1beta1``: PodGroup (volcano.md §8.2) and Queue (§8.3)."""

from __future__ import annotations

from typing import Any, ClassVar, Literal, Optional

from pydantic import Field, model_validator

from policies.models.fields import Int32, KindObject, ResourceListField, resource_vector
from policies.models.meta import Condition, K8sModel, LabelSelector
from policies.models.volcano_batch import NetworkTopology
from policies.resources import ResourceVector

PodGroupPhase = Literal["Pending", "Running", "Unknown", "Inqueue", "Completed"]
QueueState = Literal["Open", "Closed", "Closing", "Unknown"]

# --------------------------------------------------------------------------- PodGroup


class SubGroupPolicy(K8sModel):
    name: Optional[str] = None
    network_topology: Optional[NetworkTopology] = None
    sub_group_size: Optional[Int32] = None
    min_sub_groups: Optional[Int32] = None
    label_selector: Optional[LabelSelector] = None
    match_label_keys: Optional[list[str]] = None


class PodGroupSpec(K8sModel):
    min_member: Optional[Int32] = None
    min_task_member: Optional[dict[str, Int32]] = None
    queue: Optional[str] = None
    priority_class_name: Optional[str] = None
    min_resources: Optional[ResourceListField] = None
    network_topology: Optional[NetworkTopology] = None
    sub_group_policy: Optional[list[SubGroupPolicy]] = None

    def min_resource_vector(self) -> ResourceVector:
        return resource_vector(self.min_resources)


class PodGroupCondition(Condition):
    type: Optional[Literal["Unschedulable", "Scheduled"]] = None


class PodGroupStatus(K8sModel):
    phase: Optional[PodGroupPhase] = None
    conditions: Optional[list[PodGroupCondition]] = None
    running: Optional[int] = None
    succeeded: Optional[int] = None
    failed: Optional[int] = None


class PodGroup(KindObject):
    API_VERSION: ClassVar[str] = "scheduling.volcano.sh/v1beta1"
    KIND: ClassVar[str] = "PodGroup"

    spec: PodGroupSpec = Field(default_factory=PodGroupSpec)
    status: Optional[PodGroupStatus] = None


# --------------------------------------------------------------------------- Queue


class Guarantee(K8sModel):
    """Resources reserved for a queue. Stored in upstream form ``{resource: {...}}``.

    The seed writes the list flat (``guarantee: {cpu: "64"}``); both are accepted.
    """

    resource: Optional[ResourceListField] = None

    @model_validator(mode="before")
    @classmethod
    def _accept_flat_form(cls, data: Any) -> Any:
        if isinstance(data, dict) and data and "resource" not in data:
            return {"resource": data}
        return data


class ClusterSpec(K8sModel):
    name: Optional[str] = None
    weight: Optional[Int32] = None
    capacity: Optional[ResourceListField] = None


class NodeGroupAffinity(K8sModel):
    required_during_scheduling_ignored_during_execution: Optional[list[str]] = None
    preferred_during_scheduling_ignored_during_execution: Optional[list[str]] = None


class QueueAffinity(K8sModel):
    node_group_affinity: Optional[NodeGroupAffinity] = None
    node_group_anti_affinity: Optional[NodeGroupAffinity] = None


class QueueSpec(K8sModel):
    weight: Optional[Int32] = None
    capability: Optional[ResourceListField] = None
    reclaimable: Optional[bool] = None
    extend_clusters: Optional[list[ClusterSpec]] = None
    guarantee: Optional[Guarantee] = None
    affinity: Optional[QueueAffinity] = None
    type: Optional[str] = None
    parent: Optional[str] = None
    deserved: Optional[ResourceListField] = None
    priority: Optional[Int32] = None
    dequeue_strategy: Optional[Literal["fifo", "traverse"]] = None

    def guarantee_resources(self) -> dict[str, Any]:
        """The guaranteed ResourceList as written (empty when none)."""
        if self.guarantee is None or self.guarantee.resource is None:
            return {}
        return dict(self.guarantee.resource)

    def guarantee_vector(self) -> ResourceVector:
        return resource_vector(self.guarantee_resources())

    def capability_vector(self) -> ResourceVector:
        return resource_vector(self.capability)

    def deserved_vector(self) -> ResourceVector:
        return resource_vector(self.deserved)


class Reservation(K8sModel):
    nodes: Optional[list[str]] = None
    resource: Optional[ResourceListField] = None


class QueueStatus(K8sModel):
    state: Optional[QueueState] = None
    pending: Optional[int] = None
    running: Optional[int] = None
    unknown: Optional[int] = None
    inqueue: Optional[int] = None
    completed: Optional[int] = None
    reservation: Optional[Reservation] = None
    allocated: Optional[ResourceListField] = None
    #: Caldera (fleet queues, docs/queues.md): ``allocated`` per member cluster, and the queue's
    #: fleet-wide deserved share, written by the federation
    allocated_by_cluster: Optional[dict[str, ResourceListField]] = None
    deserved: Optional[ResourceListField] = None


class Queue(KindObject):
    API_VERSION: ClassVar[str] = "scheduling.volcano.sh/v1beta1"
    KIND: ClassVar[str] = "Queue"

    spec: QueueSpec = Field(default_factory=QueueSpec)
    status: Optional[QueueStatus] = None
