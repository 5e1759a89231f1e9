"""The observation of a controller pass that planned nothing and proved itself settled: a later pass
that reads the same is skipped (:meth:`~member_agent.job_runner.JobRun.plan`, ``JobRun._idle``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping, Optional

from member_agent.controllers import ControllerConfig, JobObservation
from member_agent.controllers.reconcile import (
    WAITING_PHASES,
    pod_group_resync_stable,
    pod_group_resync_view,
    pod_resync_view,
)
from policies.models.core import Pod
from policies.models.volcano_batch import Job
from policies.models.volcano_scheduling import PodGroup


def hides_phase_move(before: Optional[str], after: Optional[str]) -> bool:
    """Whether a SyncJob reads a PodGroup whose scheduler moved its phase from ``before`` to
    ``after`` (and its conditions, whatever they are) exactly as it read it before: both phases
    hold no pod back, so ``pod_group_resync_view`` is ``(False, ())`` on either side."""
    return (before or "") not in WAITING_PHASES and (after or "") not in WAITING_PHASES


def resync_views(pods: Iterable[Pod]) -> dict[str, tuple[bool, str, str, bool]]:
    return {p.metadata.name or "": pod_resync_view(p) for p in pods}


@dataclass(frozen=True)
class Settled:
    """An observation whose pass planned nothing and showed every pass that reads the same planning
    nothing (``plan_settles``), as such a pass reads it: the Job (the same object: spec and
    status), the controller's configuration and PriorityClasses, what a resync reads of each pod
    and of the PodGroup's status, and a PodGroup spec the Job wants. A later observation equal in
    all of these is the same pass for the controller, whatever else moved (a PodGroup going from
    Inqueue to Running, a pod's resourceVersion): it is skipped."""

    job: Job
    config: ControllerConfig
    priority_classes: dict[str, int]
    pods: dict[str, tuple[bool, str, str, bool]]
    pod_group: Optional[tuple[bool, tuple[str, ...]]]

    @classmethod
    def of(cls, job: Job, live: list[Pod], pod_group: Optional[PodGroup], config: ControllerConfig,
           priority_classes: Mapping[str, int]) -> Settled:
        """The settled observation of a pass over ``job``, ``live`` and ``pod_group``, as :meth:`holds`
        compares a later one with it."""
        return cls(job, config, dict(priority_classes), resync_views(live), pod_group_resync_view(pod_group))

    def holds(self, job: Job, live: list[Pod], pod_group: Optional[PodGroup], config: ControllerConfig,
              priority_classes: Mapping[str, int]) -> bool:
        if not (job is self.job and config == self.config and priority_classes == self.priority_classes
                and pod_group_resync_view(pod_group) == self.pod_group and resync_views(live) == self.pods):
            return False
        # with a PodGroup the settled pass was a syncJob: it also compared the PodGroup's spec
        return pod_group is None or pod_group_resync_stable(
            JobObservation(job=job, pod_group=pod_group, priority_classes=priority_classes))

