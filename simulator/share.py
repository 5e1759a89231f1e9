"""One job's share in a replayed member cluster (:class:`~simulator.member.Member`): the Work the
agent would hold, its controller run, and the replay's readings of it (pods, phase, GPUs)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from member_agent.gang import GangTracker
from member_agent.job_runner import JobRun
from member_agent.works import WorkRecord

GPU = "nvidia.com/gpu"
Obj = dict[str, Any]


@dataclass
class Share:
    """One job's share in this cluster: the Work the agent would hold, and the replay's readings."""

    job: str  # the trace job's name
    record: WorkRecord
    run: JobRun
    gang: GangTracker
    duration: float
    gpus_per_pod: dict[str, float]  # task -> GPUs of one pod
    pods: dict[str, Obj] = field(default_factory=dict)  # pod name -> object
    cached_group: Optional[Obj] = None  # the PodGroup object the cache holds
    started: Optional[float] = None  # the job turned Running here
    ended: Optional[float] = None
    phase: str = "Pending"
    queue: str = "default"  # the Job's spec.queue (per-queue allocation in the replay's queue series)

    def gpus_of(self, pod: Obj) -> float:
        """What one of this share's pods holds, by its task (whole GPUs and GPU cores)."""
        task = str(((pod.get("metadata") or {}).get("annotations") or {}).get("volcano.sh/task-spec") or "")
        return self.gpus_per_pod.get(task, 0.0)


def gpus_per_pod(manifest: Obj) -> dict[str, float]:
    """Task -> the GPUs one of its pods requests (``nvidia.com/gpucores`` counted in hundredths)."""
    per_pod = {}
    for task in manifest["spec"]["tasks"]:
        requests = task["template"]["spec"]["containers"][0]["resources"]["requests"]
        per_pod[task["name"]] = float(requests.get(GPU, 0) or 0) + float(requests.get("nvidia.com/gpucores", 0) or 0) / 100
    return per_pod
