"""Descriptions for ``kubeflow.org/v1`` PyTorchJob, TFJob and MPIJob (see :mod:`policies.api_docs`)."""

from __future__ import annotations

_CONVERTED = (" Caldera accepts it and stores it as the equivalent Volcano Job (one task per replica type, "
              "gang size from runPolicy.schedulingPolicy.minAvailable or the sum of the replicas).")
_SPECS = "The replica types of the job ({}) -> how many pods of that type to run and their pod template."
_STATUS = "Current status, as the training operator reports it (Caldera reports the converted Job's status)."

TYPES: dict[str, str] = {
    "PyTorchJob": "A Kubeflow training-operator job running distributed PyTorch: a Master and Workers that "
                  "rendezvous through MASTER_ADDR/MASTER_PORT." + _CONVERTED,
    "TFJob": "A Kubeflow training-operator job running distributed TensorFlow: PS, Worker, Chief, Evaluator "
             "replicas wired together through TF_CONFIG." + _CONVERTED,
    "MPIJob": "A Kubeflow MPI job: one Launcher running mpirun over Worker pods reached by SSH." + _CONVERTED,
    "PyTorchJobSpec": "The PyTorchJob's replica types and run policy.",
    "TFJobSpec": "The TFJob's replica types and run policy.",
    "MPIJobSpec": "The MPIJob's replica types, slots and run policy.",
    "ReplicaSpec": "One replica type: how many pods, their restart policy and template.",
    "RunPolicy": "Policies shared by every replica type: clean-up, deadlines, retries and gang scheduling.",
    "SchedulingPolicy": "Gang-scheduling settings passed to the batch scheduler (Volcano).",
    "TrainingJobStatus": "The training job's observed state.",
}

_RUN_POLICY = "Clean-up, time-to-live, deadline, retries, suspension and gang scheduling for the whole job."

FIELDS: dict[str, dict[str, str]] = {
    "PyTorchJob": {"spec": "Specification of the PyTorch job.", "status": _STATUS},
    "TFJob": {"spec": "Specification of the TensorFlow job.", "status": _STATUS},
    "MPIJob": {"spec": "Specification of the MPI job.", "status": _STATUS},
    "PyTorchJobSpec": {
        "pytorchReplicaSpecs": _SPECS.format("Master, Worker"),
        "runPolicy": _RUN_POLICY,
        "elasticPolicy": "Elastic training bounds (min/max replicas, rendezvous backend), kept as written.",
        "nprocPerNode": "Processes per node torchrun starts (a number, or auto, cpu, gpu).",
    },
    "TFJobSpec": {
        "tfReplicaSpecs": _SPECS.format("PS, Worker, Chief, Evaluator, Master"),
        "runPolicy": _RUN_POLICY,
        "successPolicy": "When the job counts as succeeded: empty (the chief or worker 0 succeeds) or AllWorkers.",
        "enableDynamicWorker": "Whether workers may be added or removed while the job runs.",
    },
    "MPIJobSpec": {
        "mpiReplicaSpecs": _SPECS.format("Launcher, Worker"),
        "runPolicy": _RUN_POLICY,
        "slotsPerWorker": "MPI slots (processes) per worker pod, written into the hostfile. Defaults to 1.",
        "mainContainer": "Name of the container running the MPI process in each pod.",
        "cleanPodPolicy": "Which pods to delete when the job ends: All, Running or None.",
    },
    "ReplicaSpec": {
        "replicas": "Number of pods of this replica type.",
        "restartPolicy": "Restart policy of the pods: Always, OnFailure, Never or ExitCode (restart on "
                         "retryable exit codes only).",
        "template": "The pod template of this replica type.",
    },
    "RunPolicy": {
        "cleanPodPolicy": "Which pods to delete when the job ends: All, Running or None.",
        "ttlSecondsAfterFinished": "Seconds after the job finishes before it is deleted.",
        "activeDeadlineSeconds": "Longest time the job may be active before it is terminated.",
        "backoffLimit": "Retries before the job is marked failed.",
        "schedulingPolicy": "Gang scheduling: minimum pods, queue, priority class and minimum resources.",
        "suspend": "When true the job's pods are not created (or are deleted); resuming creates them again.",
        "managedBy": "The controller that manages the job; other controllers leave it alone.",
    },
    "SchedulingPolicy": {
        "minAvailable": "Gang size: the least number of pods placed together.",
        "queue": "The Volcano queue the job is submitted to.",
        "priorityClass": "The PriorityClass of the job's gang.",
        "minResources": "The least total resources the gang needs before it is admitted.",
        "scheduleTimeoutSeconds": "How long the gang may wait to be scheduled.",
    },
    "TrainingJobStatus": {
        "conditions": "The job's conditions (Created, Running, Restarting, Succeeded, Failed).",
        "replicaStatuses": "Per replica type, pods active, succeeded and failed.",
        "startTime": "When the job started.",
        "completionTime": "When the job finished.",
    },
}
