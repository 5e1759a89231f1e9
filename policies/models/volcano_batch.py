"""``batch.volcano.sh/v1alpha1``: the Volcano Job (volcano.md §8.1) and the flattened VCJob.

Policy events/actions and plugin names are plain strings here: Volcano stores them as
strings and rejects bad ones in admission (:mod:`policies.admission.volcano_job`), whose
messages list the valid choices. Closed sets that the API itself fixes (phases,
topologyPolicy, dependsOn.iteration, networkTopology.mode) are ``Literal`` here.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal, Optional, Union

from pydantic import Field

from policies.models.core import PodTemplateSpec, ResourceRequirements, Volume
from policies.models.fields import Duration, Int32, KindObject
from policies.models.meta import K8sModel, OpenModel

TopologyPolicy = Literal["none", "best-effort", "restricted", "single-numa-node"]
JobPhase = Literal["Pending", "Aborting", "Aborted", "Running", "Restarting", "Completing", "Completed",
                   "Terminating", "Terminated", "Failed"]


class LifecyclePolicy(K8sModel):
    """``event``/``events`` (or ``exitCode``) -> ``action``, optionally after ``timeout``."""

    action: Optional[str] = None
    event: Optional[str] = None
    events: Optional[list[str]] = None
    exit_code: Optional[Int32] = None
    timeout: Optional[Duration] = None

    def all_events(self) -> list[str]:
        return ([self.event] if self.event else []) + list(self.events or [])


class NetworkTopology(K8sModel):
    mode: Optional[Literal["hard", "soft"]] = None
    highest_tier_allowed: Optional[Int32] = None
    highest_tier_name: Optional[str] = None


class VolumeSpec(K8sModel):
    mount_path: str = ""
    volume_claim_name: Optional[str] = None
    #: A PersistentVolumeClaimSpec, kept as written.
    volume_claim: Optional[dict[str, Any]] = None


class DependsOn(K8sModel):
    name: Optional[list[str]] = None
    iteration: Optional[Literal["any", "all"]] = None


class PartitionPolicy(K8sModel):
    total_partitions: Optional[Int32] = None
    partition_size: Optional[Int32] = None
    min_partitions: Optional[Int32] = None
    network_topology: Optional[NetworkTopology] = None


class TaskPodAffinityTerm(K8sModel):
    """Place this task's pods near (or away from) the pods of ``task`` within ``topologyKey``."""

    task: str
    topology_key: str = "kubernetes.io/hostname"
    weight: Optional[Int32] = None


class TaskAffinityTerms(K8sModel):
    pod: Optional[list[TaskPodAffinityTerm]] = None


class TaskTopology(K8sModel):
    """Inter-task placement hints (the seed's ``tasks[].taskTopology``)."""

    affinity: Optional[TaskAffinityTerms] = None
    anti_affinity: Optional[TaskAffinityTerms] = None


class TaskSpec(K8sModel):
    name: Optional[str] = None
    replicas: Optional[Int32] = None
    min_available: Optional[Int32] = None
    template: Optional[PodTemplateSpec] = None
    policies: Optional[list[LifecyclePolicy]] = None
    topology_policy: Optional[TopologyPolicy] = None
    max_retry: Optional[Int32] = None
    depends_on: Optional[DependsOn] = None
    partition_policy: Optional[PartitionPolicy] = None
    task_topology: Optional[TaskTopology] = None

    @property
    def replica_count(self) -> int:
        return self.replicas or 0


class JobSpec(K8sModel):
    scheduler_name: Optional[str] = None
    min_available: Optional[Int32] = None
    min_success: Optional[Int32] = None
    volumes: Optional[list[VolumeSpec]] = None
    tasks: Optional[list[TaskSpec]] = None
    policies: Optional[list[LifecyclePolicy]] = None
    plugins: Optional[dict[str, list[str]]] = None
    running_estimate: Optional[Duration] = None
    queue: Optional[str] = None
    max_retry: Optional[Int32] = None
    ttl_seconds_after_finished: Optional[Int32] = None
    priority_class_name: Optional[str] = None
    network_topology: Optional[NetworkTopology] = None

    def total_replicas(self) -> int:
        return sum(t.replica_count for t in self.tasks or [])


class JobState(K8sModel):
    phase: Optional[JobPhase] = None
    reason: Optional[str] = None
    message: Optional[str] = None
    last_transition_time: Optional[str] = None


class TaskState(K8sModel):
    phase: Optional[dict[str, int]] = None


class JobCondition(K8sModel):
    """Volcano records one ``{status: <phase>}`` entry per phase transition. Caldera's federation
    adds typed conditions (``type: Scheduled|Dispatched|Reserved``, status True/False/Unknown)."""

    status: Union[JobPhase, Literal["True", "False", "Unknown"]]
    type: Optional[str] = None
    reason: Optional[str] = None
    message: Optional[str] = None
    last_transition_time: Optional[str] = None


class JobClusterStatus(K8sModel):
    """Caldera extension: one member cluster's share of a federated Job (docs/status.md)."""

    name: str
    replicas: Optional[int] = None
    min_available: Optional[int] = None
    tasks: Optional[dict[str, int]] = None
    phase: Optional[str] = None
    pending: Optional[int] = None
    running: Optional[int] = None
    succeeded: Optional[int] = None
    failed: Optional[int] = None
    generation: Optional[int] = None
    gang_phase: Optional[str] = None
    reason: Optional[str] = None


class JobStatus(K8sModel):
    state: Optional[JobState] = None
    min_available: Optional[int] = None
    task_status_count: Optional[dict[str, TaskState]] = None
    pending: Optional[int] = None
    running: Optional[int] = None
    succeeded: Optional[int] = None
    failed: Optional[int] = None
    terminating: Optional[int] = None
    unknown: Optional[int] = None
    version: Optional[int] = None
    retry_count: Optional[int] = None
    running_duration: Optional[str] = None
    controlled_resources: Optional[dict[str, str]] = None
    conditions: Optional[list[JobCondition]] = None
    #: Caldera extension: per-cluster shares of a federated Job (docs/status.md)
    clusters: Optional[list[JobClusterStatus]] = None


class Job(KindObject):
    API_VERSION: ClassVar[str] = "batch.volcano.sh/v1alpha1"
    KIND: ClassVar[str] = "Job"

    spec: JobSpec = Field(default_factory=JobSpec)
    status: Optional[JobStatus] = None


# --------------------------------------------------------------------------- VCJob (flattened)

#: Container fields of a VCJob ``tasks[].pod`` block; every other key belongs to the pod spec.
CONTAINER_FIELDS = frozenset({
    "image", "command", "args", "env", "envFrom", "ports", "workingDir", "volumeMounts", "volumeDevices",
    "imagePullPolicy", "securityContext", "livenessProbe", "readinessProbe", "startupProbe", "stdin",
    "stdinOnce", "tty", "terminationMessagePath", "terminationMessagePolicy", "resizePolicy",
})


class VCTaskPod(OpenModel):
    """A VCJob task's pod: container fields (image, command...) and pod fields (volumes...)
    side by side; the conversion sorts them into one container and the pod spec."""

    image: Optional[str] = None
    command: Optional[list[str]] = None
    args: Optional[list[str]] = None
    volumes: Optional[list[Volume]] = None
    node_selector: Optional[dict[str, str]] = None
    priority_class_name: Optional[str] = None
    scheduler_name: Optional[str] = None


class VCTask(K8sModel):
    name: Optional[str] = None
    replicas: Optional[Int32] = None
    min_available: Optional[Int32] = None
    restart_policy: Optional[Literal["Always", "OnFailure", "Never"]] = None
    resources: Optional[ResourceRequirements] = None
    #: A container Lifecycle (postStart/preStop handlers), kept as written.
    lifecycle: Optional[dict[str, Any]] = None
    pod: Optional[VCTaskPod] = None
    policies: Optional[list[LifecyclePolicy]] = None
    topology_policy: Optional[TopologyPolicy] = None
    max_retry: Optional[Int32] = None
    depends_on: Optional[DependsOn] = None
    task_topology: Optional[TaskTopology] = None


class CleanUpTaskPolicy(K8sModel):
    action: Literal["Delete", "Retain"]
    task: str = "all"
    when: Optional[Literal["Completed", "Failed", "Succeeded", "Always"]] = None


class VCRunPolicy(K8sModel):
    max_retry: Optional[Int32] = None
    ttl_seconds_after_finished: Optional[Int32] = None
    clean_up_task_policy: Optional[list[CleanUpTaskPolicy]] = None


class VCJobSpec(K8sModel):
    scheduler_name: Optional[str] = None
    queue: Optional[str] = None
    min_available: Optional[Int32] = None
    min_success: Optional[Int32] = None
    priority_class_name: Optional[str] = None
    plugins: Optional[dict[str, list[str]]] = None
    policies: Optional[list[LifecyclePolicy]] = None
    volumes: Optional[list[VolumeSpec]] = None
    network_topology: Optional[NetworkTopology] = None
    run_policy: Optional[VCRunPolicy] = None
    tasks: Optional[list[VCTask]] = None


class VCJob(KindObject):
    API_VERSION: ClassVar[str] = "batch.volcano.sh/v1alpha1"
    KIND: ClassVar[str] = "VCJob"

    spec: VCJobSpec = Field(default_factory=VCJobSpec)
    status: Optional[JobStatus] = None
