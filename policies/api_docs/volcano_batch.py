"""Descriptions for ``batch.volcano.sh/v1alpha1`` Job and VCJob (see :mod:`policies.api_docs`)."""

from __future__ import annotations

_POLICIES = ("Lifecycle policies for the whole job: when an event (PodFailed, PodEvicted, Unknown, TaskCompleted, "
             "OutOfSync, CommandIssued, JobUpdated, TaskFailed, *) or a container exit code occurs, take an action "
             "(AbortJob, RestartJob, RestartTask, RestartPod, TerminateJob, CompleteJob, ResumeJob). A task's own "
             "policies take precedence over these.")
_PLUGINS = ("Job plugins to enable, each with its arguments: svc (a headless Service and hostfile so ranks find "
            "each other), env (VC_TASK_INDEX and friends in every pod), ssh (a shared key pair), pytorch, tensorflow, "
            "mpi (the framework's rendezvous settings). Key: plugin name; value: its arguments.")
_NETWORK = ("Network topology constraint for the whole job: keep its pods inside one HyperNode no higher than "
            "highestTierAllowed. mode hard refuses to place the gang otherwise; soft prefers it.")
_TOPOLOGY_POLICY = ("NUMA topology policy for the task's pods on a node, as the kubelet's topology manager "
                    "names them: none, best-effort, restricted or single-numa-node.")
_PHASE = ("The job's lifecycle phase: Pending, Running, Restarting, Completing, Completed, Aborting, Aborted, "
          "Terminating, Terminated or Failed.")

TYPES: dict[str, str] = {
    "Job": "A Volcano batch job: one or more tasks (groups of identical pods) scheduled together as a gang, "
           "in a queue, with lifecycle policies deciding what happens when pods fail or finish. On Caldera the "
           "federation places the gang across member clusters and reports each cluster's share in "
           "status.clusters.",
    "JobSpec": "What the user wants of the job: its tasks, gang size, queue, policies and plugins.",
    "TaskSpec": "One task of the job: a named group of identical pods built from one pod template.",
    "VolumeSpec": "A volume mounted into every container of the job, backed by an existing PersistentVolumeClaim "
                  "or by one the job creates from a claim spec.",
    "LifecyclePolicy": "A rule mapping an event (or a container exit code) to an action on the job or task.",
    "DependsOn": "Tasks that must be running or finished before this task's pods are created.",
    "PartitionPolicy": "Splits a task's pods into equal partitions, each placed within its own network domain.",
    "NetworkTopology": "A network topology constraint: the HyperNode tier the pods must (hard) or should (soft) "
                       "stay within.",
    "TaskTopology": "Placement hints between tasks: put a task's pods near (affinity) or away from "
                    "(antiAffinity) another task's pods.",
    "TaskAffinityTerms": "Pod-level affinity terms between tasks.",
    "TaskPodAffinityTerm": "Place this task's pods relative to the pods of another task within a topology domain.",
    "JobStatus": "The job's observed state, written by the controllers.",
    "JobState": "The job's current phase and why it is in it.",
    "TaskState": "Pod counts of one task by pod phase.",
    "JobCondition": "One entry of the job's history: Volcano adds one per phase transition (status is the phase); "
                    "Caldera's federation adds typed conditions (Scheduled, Dispatched, Reserved) with status "
                    "True, False or Unknown.",
    "JobClusterStatus": "One member cluster's share of a federated job, as its agent reports it.",
    "VCJob": "The flattened VCJob form of a Volcano job: each task gives its container fields and pod fields side "
             "by side instead of a pod template. The server converts it to a Job and stores that.",
    "VCJobSpec": "What the user wants of the VCJob; as a Job's spec with runPolicy holding retries, TTL and clean-up.",
    "VCTask": "One VCJob task: replicas of one pod written in flat form.",
    "VCTaskPod": "A VCJob task's pod: container fields (image, command, args...) and pod fields (volumes, "
                 "nodeSelector...) together; the conversion sorts them into one container and the pod spec.",
    "VCRunPolicy": "Retries, time-to-live and clean-up of a VCJob.",
    "CleanUpTaskPolicy": "What to do with a task's pods once the job reaches a given end state.",
}

FIELDS: dict[str, dict[str, str]] = {
    "Job": {"spec": "Specification of the desired behaviour of the job: tasks, gang size, queue, policies.",
            "status": "Current status of the job, written by the job controller and Caldera's federation. "
                      "Read-only for users."},
    "JobSpec": {
        "schedulerName": "The scheduler that places the job's pods (volcano by default).",
        "minAvailable": "Gang size: the least number of pods that must be placed together before any of them "
                        "runs. Defaults to the sum of the tasks' replicas (or of their minAvailable).",
        "minSuccess": "The least number of pods that must succeed for the job to count as Completed.",
        "volumes": "Volumes mounted into every container of the job (claims created or reused).",
        "tasks": "The tasks of the job, each a group of identical pods. Task names must be unique.",
        "policies": _POLICIES,
        "plugins": _PLUGINS,
        "runningEstimate": "An estimate of how long the job runs (a duration such as 2h), used by schedulers "
                           "that plan ahead.",
        "queue": "The Volcano queue the job is submitted to; its weight and capability decide the job's share. "
                 "Defaults to 'default'.",
        "maxRetry": "How many times the job may be restarted before it is marked Failed. Defaults to 3.",
        "ttlSecondsAfterFinished": "Seconds after the job finishes (Completed, Failed or Terminated) before it "
                                   "is deleted automatically. Unset: never.",
        "priorityClassName": "The PriorityClass of the job's PodGroup: higher priority jobs are scheduled first "
                             "and may preempt lower ones.",
        "networkTopology": _NETWORK,
    },
    "TaskSpec": {
        "name": "Name of the task, unique within the job; pods are named <job>-<task>-<index>.",
        "replicas": "Number of pods the task runs.",
        "minAvailable": "The least number of this task's pods that must be placed for the gang to start. "
                        "Defaults to replicas.",
        "template": "The pod template each of the task's pods is created from.",
        "policies": "Lifecycle policies for this task only; they take precedence over the job's policies.",
        "topologyPolicy": _TOPOLOGY_POLICY,
        "maxRetry": "How many times this task's pods may be restarted before the task counts as failed.",
        "dependsOn": "Tasks that must be running before this task's pods are created.",
        "partitionPolicy": "Splits the task's pods into partitions placed in separate network domains.",
        "taskTopology": "Affinity or anti-affinity of this task's pods to another task's pods.",
    },
    "VolumeSpec": {
        "mountPath": "Path inside each container where the volume is mounted.",
        "volumeClaimName": "Name of an existing PersistentVolumeClaim to mount; when empty one is created from "
                           "volumeClaim.",
        "volumeClaim": "A PersistentVolumeClaim spec the job creates a claim from (used when volumeClaimName is "
                       "empty).",
    },
    "LifecyclePolicy": {
        "action": "What to do: AbortJob, RestartJob, RestartTask, RestartPod, TerminateJob, CompleteJob or "
                  "ResumeJob.",
        "event": "The event that triggers the action (PodFailed, PodEvicted, Unknown, TaskCompleted, TaskFailed, "
                 "OutOfSync, CommandIssued, JobUpdated, or * for any). Exclusive with exitCode.",
        "events": "Several events that trigger the same action. Exclusive with exitCode.",
        "exitCode": "A container exit code that triggers the action. Must not be 0; exclusive with event(s).",
        "timeout": "Wait this long (a duration such as 5m) after the event before acting; the action is "
                   "dropped if the job recovers meanwhile.",
    },
    "DependsOn": {"name": "Names of the tasks this task depends on.",
                  "iteration": "any: start once one of the named tasks runs; all: once all of them do."},
    "PartitionPolicy": {
        "totalPartitions": "Number of partitions the task's pods are split into.",
        "partitionSize": "Pods per partition; totalPartitions x partitionSize must equal replicas.",
        "minPartitions": "The least number of partitions that must be placed for the task to start.",
        "networkTopology": "Network topology constraint applied to each partition on its own.",
    },
    "NetworkTopology": {
        "mode": "hard: the pods must fit within one HyperNode of the allowed tier or wait; soft: best effort.",
        "highestTierAllowed": "The highest HyperNode tier (1 is the closest, e.g. one switch) the pods may "
                              "spread across.",
        "highestTierName": "The same limit given by the tier's name (HyperNode spec.tierName) instead of its "
                           "number.",
    },
    "TaskTopology": {"affinity": "Tasks whose pods this task's pods should be placed near.",
                     "antiAffinity": "Tasks whose pods this task's pods should be kept away from."},
    "TaskAffinityTerms": {"pod": "Pod affinity terms, one per related task."},
    "TaskPodAffinityTerm": {
        "task": "Name of the other task in the same job.",
        "topologyKey": "Node label whose value defines the domain (kubernetes.io/hostname by default: the node).",
        "weight": "Preference weight (1-100); set makes the term preferred rather than required.",
    },
    "JobStatus": {
        "state": "The job's current phase, with the reason and message of the last transition.",
        "minAvailable": "The gang size the controller is enforcing.",
        "taskStatusCount": "Per task, the number of its pods in each pod phase.",
        "pending": "Number of pods pending.",
        "running": "Number of pods running.",
        "succeeded": "Number of pods that succeeded.",
        "failed": "Number of pods that failed.",
        "terminating": "Number of pods being deleted.",
        "unknown": "Number of pods whose state is unknown.",
        "version": "The job's version, increased by the controller on each restart.",
        "retryCount": "How many times the job has been restarted.",
        "runningDuration": "How long the job has been running.",
        "controlledResources": "Objects the job's plugins created (Services, ConfigMaps, Secrets), by plugin.",
        "conditions": "The job's phase history (one entry per transition) and Caldera's typed conditions "
                      "(Scheduled, Dispatched, Reserved).",
        "clusters": "Caldera: each member cluster's share of the job (replicas, tasks, pod counts, gang phase).",
    },
    "JobState": {"phase": _PHASE, "reason": "A one-word reason for the last phase transition.",
                 "message": "A human-readable explanation of the last phase transition.",
                 "lastTransitionTime": "When the job entered this phase (RFC 3339)."},
    "TaskState": {"phase": "Number of the task's pods in each pod phase (Pending, Running, Succeeded, Failed)."},
    "JobCondition": {
        "status": "A Volcano phase (the job's phase at that moment) or, for a typed condition, True, False or "
                  "Unknown.",
        "type": "Caldera: the condition's type (Scheduled, Dispatched, Reserved); empty in Volcano's phase "
                "history entries.",
        "reason": "A one-word reason for the condition.",
        "message": "A human-readable explanation of the condition.",
        "lastTransitionTime": "When the condition last changed (RFC 3339).",
    },
    "JobClusterStatus": {
        "name": "The member cluster's name (a Karmada Cluster).",
        "replicas": "Pods of the job placed on this cluster.",
        "minAvailable": "This cluster's part of the gang size.",
        "tasks": "Pods placed on this cluster per task.",
        "phase": "The phase of this cluster's share of the job, as its agent reports it.",
        "pending": "Pods of this share pending.",
        "running": "Pods of this share running.",
        "succeeded": "Pods of this share that succeeded.",
        "failed": "Pods of this share that failed.",
        "generation": "The placement generation this report is about.",
        "gangPhase": "The phase of this share's gang (PodGroup) on the cluster.",
        "reason": "Why the share is in its phase, when it is not running normally.",
    },
    "VCJob": {"spec": "Specification of the desired behaviour of the VCJob.",
              "status": "Current status, as a Job's (the stored Job's status)."},
    "VCJobSpec": {
        "schedulerName": "The scheduler that places the pods (volcano by default).",
        "queue": "The Volcano queue the job is submitted to. Defaults to 'default'.",
        "minAvailable": "Gang size: the least number of pods placed together before any runs.",
        "minSuccess": "The least number of pods that must succeed for the job to complete.",
        "priorityClassName": "The PriorityClass of the job's PodGroup.",
        "plugins": _PLUGINS,
        "policies": _POLICIES,
        "volumes": "Volumes mounted into every container of the job.",
        "networkTopology": _NETWORK,
        "runPolicy": "Retries, time-to-live after finishing, and which pods to clean up when.",
        "tasks": "The tasks of the job, each replicas of one flat pod.",
    },
    "VCTask": {
        "name": "Name of the task, unique within the job.",
        "replicas": "Number of pods the task runs.",
        "minAvailable": "The least number of this task's pods needed for the gang to start. Defaults to replicas.",
        "restartPolicy": "The pods' restartPolicy: Always, OnFailure or Never.",
        "resources": "Compute resources (requests and limits) of the task's container.",
        "lifecycle": "The container's lifecycle hooks (postStart, preStop), as in a pod's container.",
        "pod": "The pod: container fields and pod fields side by side.",
        "policies": "Lifecycle policies for this task only.",
        "topologyPolicy": _TOPOLOGY_POLICY,
        "maxRetry": "How many times this task's pods may be restarted.",
        "dependsOn": "Tasks that must be running before this task's pods are created.",
        "taskTopology": "Affinity or anti-affinity of this task's pods to another task's pods.",
    },
    "VCTaskPod": {
        "image": "Container image of the task's container.",
        "command": "Entrypoint of the container (replaces the image's ENTRYPOINT).",
        "args": "Arguments to the entrypoint (replace the image's CMD).",
        "volumes": "Pod volumes the container may mount.",
        "nodeSelector": "Node labels a node must have for the pod to run there.",
        "priorityClassName": "The pod's PriorityClass.",
        "schedulerName": "The scheduler of the pod.",
    },
    "VCRunPolicy": {
        "maxRetry": "How many times the job may be restarted before it fails.",
        "ttlSecondsAfterFinished": "Seconds after the job finishes before it is deleted.",
        "cleanUpTaskPolicy": "Which tasks' pods to delete or keep when the job ends.",
    },
    "CleanUpTaskPolicy": {
        "action": "Delete the task's pods or Retain them.",
        "task": "The task the rule is about; 'all' for every task.",
        "when": "The end state the rule applies to: Completed, Failed, Succeeded or Always.",
    },
}
