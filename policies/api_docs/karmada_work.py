"""Descriptions for ``work.karmada.io`` ResourceBinding and Work (see :mod:`policies.api_docs`)."""

from __future__ import annotations

_HEALTH = "Healthy, Unhealthy or Unknown, as the member cluster's health interpretation judges the resource."

TYPES: dict[str, str] = {
    "ResourceBinding": "Karmada's binding of one resource template (here a Volcano Job) to the member clusters "
                       "chosen for it: the policy's placement, the replicas' needs, and the scheduling result "
                       "in spec.clusters. Caldera's federation writes it when it places a gang.",
    "ResourceBindingSpec": "The resource, what its replicas need, the placement rules and the chosen clusters.",
    "ReplicaRequirements": "What one replica needs: resources per replica and node constraints.",
    "NodeClaim": "Node constraints of a replica, checked against each cluster's nodes.",
    "Component": "One component of a multi-component workload (e.g. a task of a job) with its own replicas and "
                 "requirements.",
    "TargetCluster": "One chosen member cluster and the replicas placed there.",
    "TargetComponent": "Replicas of one component placed on a cluster.",
    "GracefulEvictionTask": "A cluster the workload is being moved away from, kept until the replacement is "
                            "healthy or the grace period ends.",
    "BindingSnapshot": "A binding that depends on this one (for propagated dependencies).",
    "BindingSuspension": "Whether scheduling or dispatching of the binding is paused.",
    "BindingSchedulePriority": "The binding's priority in the Karmada scheduler's queue, resolved from the "
                               "policy's priority class.",
    "ResourceBindingStatus": "The binding's observed state: scheduling conditions and the status the resource "
                             "has on each cluster.",
    "AggregatedStatusItem": "The resource's status on one member cluster.",
    "Work": "Karmada's dispatch unit: the manifests to apply on one member cluster, in that cluster's execution "
            "namespace karmada-es-<cluster>. Caldera's agents apply a Work's Job and report back in its status "
            "(including status.gang for the two-phase gang start).",
    "WorkSpec": "The manifests to apply and, on Caldera, the gang placement handshake.",
    "WorkloadTemplate": "The manifests of a Work.",
    "WorkPlacement": "Caldera's two-phase gang start for a share spread over several clusters: reserve first "
                     "(hold), bind when every share has reserved, or cancel. Absent on a plain Karmada Work.",
    "WorkStatus": "The Work's observed state on its member cluster.",
    "ManifestStatus": "The status of one applied manifest.",
    "ResourceIdentifier": "Identifies one manifest of a Work.",
    "GangStatus": "Caldera: the agent's answer for the Work's placement generation.",
}

FIELDS: dict[str, dict[str, str]] = {
    "ResourceBinding": {"spec": "Specification of the binding: the resource, its needs and the chosen clusters.",
                        "status": "Current status of the binding. Read-only for users."},
    "ResourceBindingSpec": {
        "resource": "The resource template this binding propagates.",
        "propagateDeps": "Whether the resource's dependencies (ConfigMaps, Secrets...) follow it to the same "
                         "clusters.",
        "replicaRequirements": "What each replica needs (resources, node constraints); used to work out how "
                               "many replicas fit on each cluster.",
        "replicas": "Total replicas of the resource.",
        "components": "The resource's components with their own replicas and requirements (multi-component "
                      "scheduling).",
        "clusters": "The scheduling result: the member clusters chosen and the replicas on each.",
        "placement": "The placement rules copied from the matching policy.",
        "gracefulEvictionTasks": "Clusters the resource is being evicted from, kept until the replacement is "
                                 "ready.",
        "requiredBy": "Bindings that depend on this one.",
        "schedulerName": "The scheduler that places this binding.",
        "failover": "Failover behaviour copied from the policy.",
        "conflictResolution": "Abort or Overwrite when the resource already exists on a target cluster.",
        "rescheduleTriggeredAt": "When a rescheduling was last requested; a later time than the last "
                                 "scheduling makes the scheduler place the binding again.",
        "suspension": "Pauses scheduling or dispatching of the binding.",
        "preserveResourcesOnDeletion": "Keep the propagated resources on the member clusters when the binding "
                                       "is deleted.",
        "schedulePriority": "The binding's priority in the scheduling queue.",
        "workloadAffinityGroups": "Groups of workloads to co-locate, kept as written.",
    },
    "ReplicaRequirements": {
        "nodeClaim": "Node constraints: affinity, selector and tolerations.",
        "resourceRequest": "Resources one replica requests (cpu, memory, nvidia.com/gpu...).",
        "namespace": "Namespace of the replica's pods.",
        "priorityClassName": "PriorityClass of the replica's pods.",
    },
    "NodeClaim": {"hardNodeAffinity": "A node selector (required node affinity) the replica's node must match.",
                  "nodeSelector": "Node labels the replica's node must have.",
                  "tolerations": "Node taints the replica tolerates."},
    "Component": {"name": "Name of the component (at most 32 characters).",
                  "replicas": "Replicas of the component.",
                  "replicaRequirements": "What each of the component's replicas needs."},
    "TargetCluster": {"name": "Name of the member cluster.", "replicas": "Replicas placed on it.",
                      "components": "Replicas of each component placed on it."},
    "TargetComponent": {"name": "Name of the component.", "replicas": "Its replicas on the cluster."},
    "GracefulEvictionTask": {
        "fromCluster": "The cluster the resource is evicted from.",
        "purgeMode": "How the old copy is removed: Immediately, Graciously or Never.",
        "replicas": "Replicas being evicted.",
        "reason": "Why the eviction happens (e.g. TaintUntolerated, ApplicationFailure).",
        "message": "A human-readable explanation.",
        "producer": "The controller that started the eviction.",
        "gracePeriodSeconds": "How long to wait for the replacement before removing the old copy.",
        "suppressDeletion": "Keep the old copy until this is set to false.",
        "preservedLabelState": "State extracted from the old copy, injected as labels into the new one.",
        "creationTimestamp": "When the eviction started.",
        "clustersBeforeFailover": "The clusters the resource was on before the failover.",
    },
    "BindingSnapshot": {"namespace": "Namespace of the dependent binding.", "name": "Its name.",
                        "clusters": "The clusters it was scheduled to."},
    "BindingSuspension": {"scheduling": "When true the scheduler leaves the binding alone."},
    "BindingSchedulePriority": {"priority": "The priority value: higher is scheduled first.",
                                "preemptionPolicy": "Never or PreemptLowerPriority."},
    "ResourceBindingStatus": {
        "schedulerObservedGeneration": "The binding generation the scheduler last acted on.",
        "schedulerObservingAffinityName": "The cluster affinity group the scheduler is using.",
        "lastScheduledTime": "When the binding was last scheduled.",
        "conditions": "Scheduled (clusters were chosen) and FullyApplied (every Work was applied).",
        "aggregatedStatus": "The resource's status on each member cluster it was sent to.",
    },
    "AggregatedStatusItem": {
        "clusterName": "The member cluster.",
        "status": "The resource's status there, as reflected by its interpreter.",
        "applied": "Whether the resource was applied on the cluster.",
        "appliedMessage": "Why applying failed, when it did.",
        "health": _HEALTH,
    },
    "Work": {"spec": "Specification of the Work: the manifests to apply.",
             "status": "Current status on the member cluster, written by its agent."},
    "WorkSpec": {
        "workload": "The manifests to apply on the member cluster.",
        "suspendDispatching": "When true the manifests are not applied (or updated) on the cluster.",
        "preserveResourcesOnDeletion": "Keep the applied resources on the cluster when the Work is deleted.",
        "placement": "Caldera: the gang handshake for this share (generation, hold, cancelled).",
    },
    "WorkloadTemplate": {"manifests": "The objects to apply, each a full manifest."},
    "WorkPlacement": {
        "generation": "The placement generation this share belongs to; it increases each time the gang is "
                      "placed again and fences older shares' pods.",
        "hold": "true: reserve the share's nodes but do not bind pods yet (two-phase start).",
        "cancelled": "true: the federation gave up on this generation; drop the reservation and the pods.",
        "clusters": "How many clusters the gang is spread over; 1 skips the two-phase start.",
        "reserveTimeoutSeconds": "How long a held share may take to reserve before the federation cancels the "
                                 "generation.",
        "failover": "false: the share is never re-placed when its cluster is lost (the policy tolerates "
                    "unreachable forever), so its agent never fences it. Absent: it may be re-placed.",
        "keepsFromGeneration": "The oldest placement generation whose running pods this share keeps (a "
                               "re-division for a changed spec keeps them). The agent stops every pod of an "
                               "older generation with its grace. Absent: generation itself.",
    },
    "WorkStatus": {
        "conditions": "Applied (the manifests were applied), Available, Degraded.",
        "manifestStatuses": "The status of each applied manifest.",
        "gang": "Caldera: the agent's answer for spec.placement.generation.",
        "observedPlacementGeneration": "Caldera: the placement generation this status describes; the "
                                       "federation ignores a status of an older generation.",
    },
    "ManifestStatus": {"identifier": "Which manifest this is.",
                       "status": "The manifest's status on the cluster.", "health": _HEALTH},
    "ResourceIdentifier": {
        "ordinal": "Index of the manifest in spec.workload.manifests.",
        "group": "API group of the manifest.", "version": "API version of the manifest.",
        "kind": "Kind of the manifest.", "resource": "Resource (plural) of the manifest.",
        "namespace": "Namespace of the manifest.", "name": "Name of the manifest.",
    },
    "GangStatus": {
        "generation": "The placement generation this answer is about.",
        "phase": "Pending, Reserved, Released, Running, Failed, Cancelled or Unschedulable.",
        "reservedUntil": "When a Reserved share's reservation lapses (RFC 3339).",
        "reason": "Why the share is in this phase (e.g. what is missing when Unschedulable).",
        "reservations": "A held share's reserved pods: namespace/pod -> node, kept so a restarted agent holds "
                        "the same nodes.",
        "reservationAnnotations": "The annotations (GPU ids, NUMA) the scheduler chose for each reserved pod.",
    },
}
