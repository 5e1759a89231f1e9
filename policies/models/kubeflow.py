"""``kubeflow.org/v1`` training jobs: PyTorchJob, TFJob, MPIJob.

Caldera converts each to a Volcano Job (:mod:`policies.conversions`); replica types are
the training operator's capitalised names (``Master``, ``Worker``, ``PS``...).
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal, Optional

from policies.models.core import PodTemplateSpec
from policies.models.fields import Int32, KindObject, ResourceListField
from policies.models.meta import K8sModel, OpenModel

RestartPolicy = Literal["Always", "OnFailure", "Never", "ExitCode"]
PyTorchReplicaType = Literal["Master", "Worker"]
TFReplicaType = Literal["PS", "Worker", "Chief", "Evaluator", "Master"]
MPIReplicaType = Literal["Launcher", "Worker"]


class ReplicaSpec(K8sModel):
    replicas: Optional[Int32] = None
    restart_policy: Optional[RestartPolicy] = None
    template: Optional[PodTemplateSpec] = None


class SchedulingPolicy(K8sModel):
    min_available: Optional[Int32] = None
    queue: Optional[str] = None
    priority_class: Optional[str] = None
    min_resources: Optional[ResourceListField] = None
    schedule_timeout_seconds: Optional[Int32] = None


class RunPolicy(K8sModel):
    clean_pod_policy: Optional[Literal["All", "Running", "None"]] = None
    ttl_seconds_after_finished: Optional[Int32] = None
    active_deadline_seconds: Optional[int] = None
    backoff_limit: Optional[Int32] = None
    scheduling_policy: Optional[SchedulingPolicy] = None
    suspend: Optional[bool] = None
    managed_by: Optional[str] = None


class TrainingJobStatus(OpenModel):
    """The training operator's status (conditions, replicaStatuses...), kept as written."""

    conditions: Optional[list[dict[str, Any]]] = None
    replica_statuses: Optional[dict[str, Any]] = None
    start_time: Optional[str] = None
    completion_time: Optional[str] = None


class PyTorchJobSpec(K8sModel):
    pytorch_replica_specs: dict[PyTorchReplicaType, ReplicaSpec]
    run_policy: Optional[RunPolicy] = None
    elastic_policy: Optional[dict[str, Any]] = None
    nproc_per_node: Optional[str] = None


class PyTorchJob(KindObject):
    API_VERSION: ClassVar[str] = "kubeflow.org/v1"
    KIND: ClassVar[str] = "PyTorchJob"

    spec: PyTorchJobSpec
    status: Optional[TrainingJobStatus] = None


class TFJobSpec(K8sModel):
    tf_replica_specs: dict[TFReplicaType, ReplicaSpec]
    run_policy: Optional[RunPolicy] = None
    success_policy: Optional[str] = None
    enable_dynamic_worker: Optional[bool] = None


class TFJob(KindObject):
    API_VERSION: ClassVar[str] = "kubeflow.org/v1"
    KIND: ClassVar[str] = "TFJob"

    spec: TFJobSpec
    status: Optional[TrainingJobStatus] = None


class MPIJobSpec(K8sModel):
    mpi_replica_specs: dict[MPIReplicaType, ReplicaSpec]
    run_policy: Optional[RunPolicy] = None
    slots_per_worker: Optional[Int32] = None
    main_container: Optional[str] = None
    clean_pod_policy: Optional[Literal["All", "Running", "None"]] = None


class MPIJob(KindObject):
    API_VERSION: ClassVar[str] = "kubeflow.org/v1"
    KIND: ClassVar[str] = "MPIJob"

    spec: MPIJobSpec
    status: Optional[TrainingJobStatus] = None

