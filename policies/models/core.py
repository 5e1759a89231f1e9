"""The Kubernetes core kinds the scheduler and agent read: Pod, Node, ConfigMap, Namespace, Event,
Lease, Binding.

Pod specs and containers are :class:`OpenModel`: the fields scheduling needs are typed and
validated (resources, affinity, tolerations...), any other valid Kubernetes field is kept as
written. The request arithmetic lives in :mod:`policies.models.pod_resources`.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal, Optional

from pydantic import Field

from policies.models.fields import KindObject, ResourceListField
from policies.models.meta import K8sModel, LabelSelector, ObjectMeta, OpenModel

# --------------------------------------------------------------------------- references


class ObjectReference(K8sModel):
    api_version: Optional[str] = None
    kind: Optional[str] = None
    name: Optional[str] = None
    namespace: Optional[str] = None
    uid: Optional[str] = None
    resource_version: Optional[str] = None
    field_path: Optional[str] = None


# --------------------------------------------------------------------------- affinity

NodeSelectorOperator = Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]


class NodeSelectorRequirement(K8sModel):
    key: str
    operator: NodeSelectorOperator
    values: Optional[list[str]] = None


class NodeSelectorTerm(K8sModel):
    match_expressions: Optional[list[NodeSelectorRequirement]] = None
    match_fields: Optional[list[NodeSelectorRequirement]] = None


class NodeSelector(K8sModel):
    node_selector_terms: list[NodeSelectorTerm]


class PreferredSchedulingTerm(K8sModel):
    weight: int
    preference: NodeSelectorTerm


class NodeAffinity(K8sModel):
    required_during_scheduling_ignored_during_execution: Optional[NodeSelector] = None
    preferred_during_scheduling_ignored_during_execution: Optional[list[PreferredSchedulingTerm]] = None


class PodAffinityTerm(K8sModel):
    label_selector: Optional[LabelSelector] = None
    namespaces: Optional[list[str]] = None
    topology_key: str
    namespace_selector: Optional[LabelSelector] = None
    match_label_keys: Optional[list[str]] = None
    mismatch_label_keys: Optional[list[str]] = None


class WeightedPodAffinityTerm(K8sModel):
    weight: int
    pod_affinity_term: PodAffinityTerm


class PodAffinity(K8sModel):
    required_during_scheduling_ignored_during_execution: Optional[list[PodAffinityTerm]] = None
    preferred_during_scheduling_ignored_during_execution: Optional[list[WeightedPodAffinityTerm]] = None


class Affinity(K8sModel):
    node_affinity: Optional[NodeAffinity] = None
    pod_affinity: Optional[PodAffinity] = None
    pod_anti_affinity: Optional[PodAffinity] = None


TaintEffect = Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]


class Toleration(K8sModel):
    key: Optional[str] = None
    operator: Optional[Literal["Exists", "Equal"]] = None
    value: Optional[str] = None
    effect: Optional[Literal["NoSchedule", "PreferNoSchedule", "NoExecute", ""]] = None
    toleration_seconds: Optional[int] = None


class Taint(K8sModel):
    key: str
    value: Optional[str] = None
    effect: TaintEffect
    time_added: Optional[str] = None


# --------------------------------------------------------------------------- containers


class ResourceRequirements(OpenModel):
    limits: Optional[ResourceListField] = None
    requests: Optional[ResourceListField] = None


class EnvVar(OpenModel):
    name: str
    value: Optional[str] = None


class ContainerPort(OpenModel):
    container_port: int
    name: Optional[str] = None
    protocol: Optional[Literal["TCP", "UDP", "SCTP"]] = None
    host_port: Optional[int] = None


class VolumeMount(OpenModel):
    name: str
    mount_path: str
    read_only: Optional[bool] = None
    sub_path: Optional[str] = None


class Container(OpenModel):
    name: str
    image: Optional[str] = None
    command: Optional[list[str]] = None
    args: Optional[list[str]] = None
    env: Optional[list[EnvVar]] = None
    ports: Optional[list[ContainerPort]] = None
    resources: Optional[ResourceRequirements] = None
    volume_mounts: Optional[list[VolumeMount]] = None
    #: ``Always`` on an init container makes it a sidecar (counted with the regular containers).
    restart_policy: Optional[Literal["Always"]] = None


class Volume(OpenModel):
    name: str


class PodSpec(OpenModel):
    containers: Optional[list[Container]] = None
    init_containers: Optional[list[Container]] = None
    node_selector: Optional[dict[str, str]] = None
    affinity: Optional[Affinity] = None
    tolerations: Optional[list[Toleration]] = None
    priority: Optional[int] = None
    priority_class_name: Optional[str] = None
    scheduler_name: Optional[str] = None
    restart_policy: Optional[Literal["Always", "OnFailure", "Never"]] = None
    hostname: Optional[str] = None
    subdomain: Optional[str] = None
    volumes: Optional[list[Volume]] = None
    node_name: Optional[str] = None
    overhead: Optional[ResourceListField] = None
    host_network: Optional[bool] = None
    dns_policy: Optional[str] = None
    scheduling_gates: Optional[list[dict[str, Any]]] = None


class PodTemplateSpec(K8sModel):
    metadata: Optional[ObjectMeta] = None
    spec: Optional[PodSpec] = None


PodPhase = Literal["Pending", "Running", "Succeeded", "Failed", "Unknown"]


class PodStatus(OpenModel):
    phase: Optional[PodPhase] = None
    conditions: Optional[list[dict[str, Any]]] = None
    reason: Optional[str] = None
    message: Optional[str] = None
    nominated_node_name: Optional[str] = None
    host_ip: Optional[str] = Field(default=None, alias="hostIP")
    host_ips: Optional[list[dict[str, Any]]] = Field(default=None, alias="hostIPs")
    pod_ip: Optional[str] = Field(default=None, alias="podIP")
    pod_ips: Optional[list[dict[str, Any]]] = Field(default=None, alias="podIPs")
    start_time: Optional[str] = None
    container_statuses: Optional[list[dict[str, Any]]] = None
    init_container_statuses: Optional[list[dict[str, Any]]] = None
    qos_class: Optional[str] = None


class Pod(KindObject):
    API_VERSION: ClassVar[str] = "v1"
    KIND: ClassVar[str] = "Pod"

    spec: PodSpec = Field(default_factory=PodSpec)
    status: Optional[PodStatus] = None


# --------------------------------------------------------------------------- nodes


class NodeSpec(OpenModel):
    taints: Optional[list[Taint]] = None
    unschedulable: Optional[bool] = None
    pod_cidr: Optional[str] = Field(default=None, alias="podCIDR")
    pod_cidrs: Optional[list[str]] = Field(default=None, alias="podCIDRs")
    provider_id: Optional[str] = Field(default=None, alias="providerID")


class NodeCondition(OpenModel):
    type: str
    status: Literal["True", "False", "Unknown"]
    reason: Optional[str] = None
    message: Optional[str] = None
    last_heartbeat_time: Optional[str] = None
    last_transition_time: Optional[str] = None


class NodeStatus(OpenModel):
    allocatable: Optional[ResourceListField] = None
    capacity: Optional[ResourceListField] = None
    conditions: Optional[list[NodeCondition]] = None
    addresses: Optional[list[dict[str, Any]]] = None
    node_info: Optional[dict[str, Any]] = None


class Node(KindObject):
    API_VERSION: ClassVar[str] = "v1"
    KIND: ClassVar[str] = "Node"

    spec: NodeSpec = Field(default_factory=NodeSpec)
    status: Optional[NodeStatus] = None

    def is_ready(self) -> bool:
        """The ``Ready`` condition is True (a node without conditions counts as ready)."""
        conditions = (self.status.conditions if self.status else None) or []
        for condition in conditions:
            if condition.type == "Ready":
                return condition.status == "True"
        return True


# --------------------------------------------------------------------------- config, namespaces


class ConfigMap(KindObject):
    API_VERSION: ClassVar[str] = "v1"
    KIND: ClassVar[str] = "ConfigMap"

    data: Optional[dict[str, str]] = None
    binary_data: Optional[dict[str, str]] = None
    immutable: Optional[bool] = None


class NamespaceSpec(K8sModel):
    finalizers: Optional[list[str]] = None


class NamespaceStatus(OpenModel):
    phase: Optional[Literal["Active", "Terminating"]] = None


class Namespace(KindObject):
    API_VERSION: ClassVar[str] = "v1"
    KIND: ClassVar[str] = "Namespace"

    spec: Optional[NamespaceSpec] = None
    status: Optional[NamespaceStatus] = None


# --------------------------------------------------------------------------- events, leases, bindings


class EventSource(K8sModel):
    component: Optional[str] = None
    host: Optional[str] = None


class Event(KindObject):
    """A ``v1`` Event: what happened to ``involvedObject`` (``Normal`` or ``Warning``)."""

    API_VERSION: ClassVar[str] = "v1"
    KIND: ClassVar[str] = "Event"

    involved_object: ObjectReference
    reason: Optional[str] = None
    message: Optional[str] = None
    type: Optional[Literal["Normal", "Warning"]] = None
    count: Optional[int] = None
    first_timestamp: Optional[str] = None
    last_timestamp: Optional[str] = None
    event_time: Optional[str] = None
    source: Optional[EventSource] = None
    reporting_component: Optional[str] = None
    reporting_instance: Optional[str] = None
    action: Optional[str] = None
    related: Optional[ObjectReference] = None
    series: Optional[dict[str, Any]] = None


class LeaseSpec(K8sModel):
    holder_identity: Optional[str] = None
    lease_duration_seconds: Optional[int] = None
    acquire_time: Optional[str] = None
    renew_time: Optional[str] = None
    lease_transitions: Optional[int] = None
    strategy: Optional[str] = None
    preferred_holder: Optional[str] = None


class Lease(KindObject):
    API_VERSION: ClassVar[str] = "coordination.k8s.io/v1"
    KIND: ClassVar[str] = "Lease"

    spec: LeaseSpec = Field(default_factory=LeaseSpec)


class Binding(KindObject):
    """``v1`` Binding (``pods/<name>/binding``): bind the pod named in metadata to ``target``."""

    API_VERSION: ClassVar[str] = "v1"
    KIND: ClassVar[str] = "Binding"

    target: ObjectReference
