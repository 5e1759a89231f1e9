"""The Volcano Job controller of the member agent: Job → PodGroup + Pods, plugins, lifecycle.

Pure and synchronous; the agent does the I/O. Interface: docs/job-controller.md.
"""

from member_agent.controllers.job_pass import PodDeletion, RecordedEvent
from member_agent.controllers.observe import observe_job, observe_pod_group, observe_pods
from member_agent.controllers.reconcile import (
    CALDERA_DEFAULT_PLUGINS,
    ControllerConfig,
    JobObservation,
    JobPlan,
    reconcile,
)
from member_agent.controllers.requests import DeferredAction, JobAction, JobEvent, JobRequest

__all__ = [
    "CALDERA_DEFAULT_PLUGINS",
    "ControllerConfig",
    "DeferredAction",
    "JobAction",
    "JobEvent",
    "JobObservation",
    "JobPlan",
    "JobRequest",
    "PodDeletion",
    "RecordedEvent",
    "observe_job",
    "observe_pod_group",
    "observe_pods",
    "reconcile",
]
