"""Names, annotation and label keys the Volcano job controller writes (volcano.md §8.2, §9.1).

Everything that another component matches on lives here, so the scheduler, the agent and
the status reporter agree on one spelling.
"""

from __future__ import annotations

from typing import Optional

# a federated job's share (docs/protocol.md), re-exported for the job controller
from policies.models.karmada_work import TASK_INDICES as TASK_INDICES
from policies.models.karmada_work import TASK_OFFSETS as TASK_OFFSETS
from policies.models.karmada_work import TASK_TOTALS as TASK_TOTALS
from policies.models.karmada_work import WORLD_SIZE as WORLD_SIZE

# --------------------------------------------------------------------------- annotation / label keys

GROUP_NAME = "scheduling.k8s.io/group-name"
TASK_SPEC = "volcano.sh/task-spec"
TASK_INDEX = "volcano.sh/task-index"
JOB_NAME = "volcano.sh/job-name"
JOB_NAMESPACE = "volcano.sh/job-namespace"
QUEUE_NAME = "volcano.sh/queue-name"
JOB_VERSION = "volcano.sh/job-version"
TEMPLATE_UID = "volcano.sh/template-uid"
JOB_RETRY_COUNT = "volcano.sh/job-retry-count"
NUMA_POLICY = "volcano.sh/numa-topology-policy"
PARTITION_ID = "volcano.sh/partition-id"
#: The task's ``taskTopology`` (JSON), read by the scheduler's task-topology plugin.
TASK_TOPOLOGY = "volcano.sh/task-topology"
#: Put on a pod before the controller deletes it, so its deletion is not read as an eviction.
OUT_OF_SYNC = "volcano.sh/controller-out-of-sync"

#: Job-level annotations Volcano copies onto every pod that does not set them itself.
JOB_TO_POD_ANNOTATIONS = (
    "volcano.sh/preemptable",
    "volcano.sh/cooldown-time",
    "volcano.sh/revocable-zone",
    "volcano.sh/jdb-min-available",
    "volcano.sh/jdb-max-unavailable",
)
#: Job-level labels copied the same way.
JOB_TO_POD_LABELS = ("volcano.sh/preemptable", "volcano.sh/cooldown-time")

#: Caldera's simulated-kubelet hints, carried from the task template to its pods.
SIM_DURATION = "caldera.io/sim-duration"
SIM_EXIT_CODE = "caldera.io/sim-exit-code"
SIM_ANNOTATIONS = (SIM_DURATION, SIM_EXIT_CODE)


JOB_API_VERSION = "batch.volcano.sh/v1alpha1"
JOB_KIND = "Job"
DEFAULT_TASK_SPEC = "default"
DEFAULT_QUEUE = "default"
DEFAULT_SCHEDULER = "volcano"


# --------------------------------------------------------------------------- names


def pod_name(job: str, task: str, index: int) -> str:
    """``<job>-<task>-<index>``; for a share of a federated job, ``index`` is the global one."""
    return f"{job}-{task}-{index}"


def pod_group_name(job: str, uid: str) -> str:
    """``<job>-<job uid>``; a job without a uid (not yet stored) falls back to ``<job>``."""
    return f"{job}-{uid}" if uid else job


def template_uid(job: str, task: str) -> str:
    return f"{job}-{task}"


def index_from_pod_name(name: str) -> Optional[int]:
    """The numeric suffix of ``<job>-<task>-<index>`` (Volcano parses the name, not the annotation)."""
    _, sep, suffix = name.rpartition("-")
    if not sep or not suffix.isdigit():
        return None
    return int(suffix)


def host_name(pod: str, subdomain: str) -> str:
    """A pod's DNS name inside the job's headless Service."""
    return f"{pod}.{subdomain}"


def env_task_key(task: str) -> str:
    """Task name as it appears in env var names and ConfigMap keys: upper-case, ``-`` → ``_``."""
    return task.upper().replace("-", "_")


def host_file_key(task: str) -> str:
    """ConfigMap key of a task's host file (``worker.host``); ``-`` becomes ``_`` as in Volcano."""
    return f"{task.replace('-', '_')}.host"
