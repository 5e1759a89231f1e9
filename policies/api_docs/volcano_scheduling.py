"""Descriptions for ``scheduling.volcano.sh/v1beta1`` PodGroup and Queue (see :mod:`policies.api_docs`)."""

from __future__ import annotations

_RESOURCES = "A resource list: resource name (cpu, memory, nvidia.com/gpu...) -> quantity."

TYPES: dict[str, str] = {
    "PodGroup": "A gang of pods that Volcano schedules all-or-nothing: none of them is bound until minMember of "
                "them (and minResources) fit. Volcano Jobs create one PodGroup each.",
    "PodGroupSpec": "What the gang needs: its size, resources, queue and priority.",
    "SubGroupPolicy": "Splits the gang into sub-groups (matched by pod labels), each placed within its own "
                      "network domain.",
    "PodGroupCondition": "One observation about the gang's scheduling (Scheduled or Unschedulable).",
    "PodGroupStatus": "The gang's observed state, written by the scheduler.",
    "Queue": "A Volcano queue: a cluster-wide share of resources that jobs are submitted to. Its weight sets the "
             "fair share, capability caps it, guarantee reserves part of it; a reclaimable queue gives back what "
             "it borrowed. On Caldera the federation enforces queues fleet-wide.",
    "QueueSpec": "The queue's share: weight, capability, guarantee, deserved, hierarchy and priority.",
    "ClusterSpec": "A cluster the queue may extend to, with its weight and capacity there.",
    "Guarantee": "Resources reserved for the queue that other queues cannot take.",
    "QueueAffinity": "Node groups the queue's jobs must or should (not) run on.",
    "NodeGroupAffinity": "Node groups (nodes labelled volcano.sh/nodegroup-name) required or preferred.",
    "QueueStatus": "The queue's observed state: its state and how many PodGroups it holds in each phase.",
    "Reservation": "Nodes and resources held for the queue.",
}

FIELDS: dict[str, dict[str, str]] = {
    "PodGroup": {"spec": "Specification of the gang: size, resources, queue, priority.",
                 "status": "Current status of the gang, written by the scheduler. Read-only for users."},
    "PodGroupSpec": {
        "minMember": "The least number of pods that must be schedulable together before any is bound.",
        "minTaskMember": "Per task name, the least number of that task's pods the gang needs.",
        "queue": "The queue the gang is scheduled from. Defaults to 'default'.",
        "priorityClassName": "The PriorityClass of the gang: decides order in the queue and preemption.",
        "minResources": "The least total resources the gang needs before it is admitted (Inqueue). "
                        + _RESOURCES,
        "networkTopology": "Network topology constraint: keep the gang within one HyperNode of the allowed tier "
                           "(hard) or prefer to (soft).",
        "subGroupPolicy": "Sub-groups of the gang, each with its own size and network topology constraint.",
    },
    "SubGroupPolicy": {
        "name": "Name of the sub-group policy.",
        "networkTopology": "Network topology constraint applied to each sub-group on its own.",
        "subGroupSize": "Pods per sub-group.",
        "minSubGroups": "The least number of sub-groups that must be placed for the gang to start.",
        "labelSelector": "Selects the gang's pods this policy applies to.",
        "matchLabelKeys": "Pod label keys whose values split the selected pods into sub-groups.",
    },
    "PodGroupCondition": {"type": "Scheduled (the gang was placed) or Unschedulable (it could not be)."},
    "PodGroupStatus": {
        "phase": "The gang's phase: Pending (waiting for resources), Inqueue (admitted, pods may be created), "
                 "Running (minMember pods running), Completed or Unknown.",
        "conditions": "The scheduler's observations, e.g. why the gang is Unschedulable.",
        "running": "Number of the gang's pods running.",
        "succeeded": "Number of the gang's pods that succeeded.",
        "failed": "Number of the gang's pods that failed.",
    },
    "Queue": {"spec": "Specification of the queue's share of resources.",
              "status": "Current status of the queue. Read-only for users."},
    "QueueSpec": {
        "weight": "Relative weight: queues share the cluster in proportion to their weights. Defaults to 1.",
        "capability": "Hard upper limit of the resources the queue's jobs may use. " + _RESOURCES,
        "reclaimable": "Whether resources the queue uses beyond its deserved share may be reclaimed by other "
                       "queues. Defaults to true.",
        "extendClusters": "Clusters the queue may extend to, with weight and capacity in each.",
        "guarantee": "Resources reserved for this queue only.",
        "affinity": "Node groups the queue's jobs must or should (not) run on.",
        "type": "The queue's type, free text for schedulers that distinguish kinds of queues.",
        "parent": "The parent queue in a hierarchy (capacity plugin); 'root' at the top.",
        "deserved": "The share the queue is entitled to (capacity plugin); beyond it, its use is reclaimable. "
                    + _RESOURCES,
        "priority": "Priority of the queue among its siblings when resources are reclaimed or allocated.",
        "dequeueStrategy": "How jobs leave the queue: fifo (the first blocks the rest) or traverse (later jobs "
                           "may go first when they fit).",
    },
    "ClusterSpec": {"name": "Name of the cluster.", "weight": "Weight of the queue in that cluster.",
                    "capacity": "Capacity of the queue in that cluster. " + _RESOURCES},
    "Guarantee": {"resource": "The guaranteed resources. " + _RESOURCES},
    "QueueAffinity": {"nodeGroupAffinity": "Node groups the queue's jobs must or should run on.",
                      "nodeGroupAntiAffinity": "Node groups the queue's jobs must or should not run on."},
    "NodeGroupAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": "Node group names that are required.",
        "preferredDuringSchedulingIgnoredDuringExecution": "Node group names that are preferred.",
    },
    "QueueStatus": {
        "state": "Open (accepts jobs), Closing (accepts none, still has some), Closed or Unknown.",
        "pending": "Number of the queue's PodGroups Pending.",
        "running": "Number of the queue's PodGroups Running.",
        "unknown": "Number of the queue's PodGroups in Unknown state.",
        "inqueue": "Number of the queue's PodGroups admitted (Inqueue) but not yet running.",
        "completed": "Number of the queue's PodGroups Completed.",
        "reservation": "Nodes and resources reserved for the queue.",
        "allocated": "Resources the queue's running pods use now. On Caldera: summed over the fleet. "
                     + _RESOURCES,
        "allocatedByCluster": "Caldera: the queue's allocated resources per member cluster.",
        "deserved": "The share the queue is currently entitled to, as computed by the scheduler (or, on "
                    "Caldera, fleet-wide).",
    },
    "Reservation": {"nodes": "Names of the reserved nodes.",
                    "resource": "The reserved resources. " + _RESOURCES},
}
