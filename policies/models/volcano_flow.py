"""``flow.volcano.sh/v1alpha1``: JobFlow (a DAG of jobs) and JobTemplate (volcano.md §8.4).

Upstream a flow's ``name`` is the JobTemplate's name. The seed also writes
``flows[].jobTemplate.name`` (flow name and template name differ); both are accepted and
:meth:`Flow.template_name` gives the template either way.
"""

from __future__ import annotations

from typing import ClassVar, Literal, Optional

from pydantic import Field

from policies.models.fields import KindObject
from policies.models.meta import K8sModel
from policies.models.volcano_batch import JobSpec

JobFlowPhase = Literal["Succeed", "Terminating", "Failed", "Running", "Pending"]


class HttpGet(K8sModel):
    task_name: Optional[str] = None
    path: Optional[str] = None
    port: Optional[int] = None
    http_header: Optional[dict[str, str]] = None


class TcpSocket(K8sModel):
    task_name: Optional[str] = None
    port: Optional[int] = None


class TaskStatus(K8sModel):
    task_name: Optional[str] = None
    phase: Optional[str] = None


class Probe(K8sModel):
    http_get_list: Optional[list[HttpGet]] = None
    tcp_socket_list: Optional[list[TcpSocket]] = None
    task_status_list: Optional[list[TaskStatus]] = None


class FlowDependsOn(K8sModel):
    targets: Optional[list[str]] = None
    probe: Optional[Probe] = None


class FlowPatch(K8sModel):
    spec: Optional[JobSpec] = None


class FlowJobTemplateRef(K8sModel):
    name: str


class Flow(K8sModel):
    name: str
    depends_on: Optional[FlowDependsOn] = None
    patch: Optional[FlowPatch] = None
    job_template: Optional[FlowJobTemplateRef] = None

    def template_name(self) -> str:
        return self.job_template.name if self.job_template else self.name

    def targets(self) -> list[str]:
        return list(self.depends_on.targets or []) if self.depends_on else []


class JobFlowSpec(K8sModel):
    flows: Optional[list[Flow]] = None
    job_retain_policy: Optional[Literal["retain", "delete"]] = None


class JobRunningHistory(K8sModel):
    start_timestamp: Optional[str] = None
    end_timestamp: Optional[str] = None
    state: Optional[str] = None


class JobStatusEntry(K8sModel):
    name: Optional[str] = None
    state: Optional[str] = None
    start_timestamp: Optional[str] = None
    end_timestamp: Optional[str] = None
    restart_count: Optional[int] = None
    running_histories: Optional[list[JobRunningHistory]] = None


class FlowCondition(K8sModel):
    phase: Optional[str] = None
    create_time: Optional[str] = None
    running_duration: Optional[str] = None
    task_status_count: Optional[dict[str, dict[str, dict[str, int]]]] = None


class JobFlowState(K8sModel):
    phase: Optional[JobFlowPhase] = None


class JobFlowStatus(K8sModel):
    pending_jobs: Optional[list[str]] = None
    running_jobs: Optional[list[str]] = None
    failed_jobs: Optional[list[str]] = None
    completed_jobs: Optional[list[str]] = None
    terminated_jobs: Optional[list[str]] = None
    un_know_jobs: Optional[list[str]] = None
    job_status_list: Optional[list[JobStatusEntry]] = None
    conditions: Optional[dict[str, FlowCondition]] = None
    state: Optional[JobFlowState] = None


class JobFlow(KindObject):
    API_VERSION: ClassVar[str] = "flow.volcano.sh/v1alpha1"
    KIND: ClassVar[str] = "JobFlow"

    spec: JobFlowSpec = Field(default_factory=JobFlowSpec)
    status: Optional[JobFlowStatus] = None


class JobTemplateStatus(K8sModel):
    job_depends_on_list: Optional[list[str]] = None


class JobTemplate(KindObject):
    API_VERSION: ClassVar[str] = "flow.volcano.sh/v1alpha1"
    KIND: ClassVar[str] = "JobTemplate"

    spec: JobSpec = Field(default_factory=JobSpec)
    status: Optional[JobTemplateStatus] = None

