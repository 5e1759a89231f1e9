"""VCJob admission: the Job rules, applied to the flattened form.

Defaults are written in the VCJob's own fields (so ``caldera validate`` prints a VCJob); unlike
a Job, a VCJob whose ``minAvailable`` exceeds its replicas is clamped (and annotated), not
rejected, because the flattened form is commonly written as an excerpt. Then
the VCJob is converted (:func:`policies.conversions.vcjob_to_job`), checked with the Job
rules, and each error path is mapped back to where the user wrote it
(``spec.tasks[0].template.spec.containers[0].resources`` -> ``spec.tasks[0].resources``).
"""

from __future__ import annotations

import re

from policies.admission import AdmissionContext, Admitter
from policies.admission.names import check_object_name
from policies.admission.queues import check_queue_accepts
from policies.admission.volcano_job import DEFAULT_MAX_RETRY, DEFAULT_QUEUE, NEEDS_SVC, validate_job_spec
from policies.conversions import vcjob_to_job
from policies.errors import FieldError
from policies.models.volcano_batch import VCJob, VCRunPolicy

#: Set when admission lowered ``spec.minAvailable`` to the total replicas (the message says from what).
CLAMPED_ANNOTATION = "caldera.io/min-available-clamped"

_PATH_MAP = (
    (re.compile(r"^spec\.maxRetry"), "spec.runPolicy.maxRetry"),
    (re.compile(r"^spec\.ttlSecondsAfterFinished"), "spec.runPolicy.ttlSecondsAfterFinished"),
    (re.compile(r"^(spec\.tasks\[\d+\])\.template\.spec\.containers\[0\]\.resources"), r"\1.resources"),
    (re.compile(r"^(spec\.tasks\[\d+\])\.template\.spec\.containers\[0\]\.name"), r"\1.name"),
    (re.compile(r"^(spec\.tasks\[\d+\])\.template\.spec\.containers\[0\]"), r"\1.pod"),
    (re.compile(r"^(spec\.tasks\[\d+\])\.template\.spec\.restartPolicy"), r"\1.restartPolicy"),
    (re.compile(r"^(spec\.tasks\[\d+\])\.template\.spec"), r"\1.pod"),
)


def vcjob_path(path: str) -> str:
    """Where a converted Job's error path was written in the VCJob."""
    for pattern, replacement in _PATH_MAP:
        if pattern.match(path):
            return pattern.sub(replacement, path, count=1)
    return path


class VCJobAdmitter:
    def mutate(self, obj: VCJob, ctx: AdmissionContext, creating: bool) -> VCJob:
        if not creating:
            return obj
        spec = obj.spec
        spec.queue = spec.queue or DEFAULT_QUEUE
        spec.scheduler_name = spec.scheduler_name or ctx.scheduler_name
        run = spec.run_policy or VCRunPolicy()
        if not run.max_retry:
            run.max_retry = DEFAULT_MAX_RETRY
        spec.run_policy = run
        for index, task in enumerate(spec.tasks or []):
            task.name = task.name or f"default{index}"
            if task.min_available is None:
                task.min_available = max(task.replicas or 0, 0)
            if not task.max_retry:
                task.max_retry = DEFAULT_MAX_RETRY
        if not spec.min_available:
            spec.min_available = sum(t.min_available or 0 for t in spec.tasks or [])
        total = sum(t.replicas or 0 for t in spec.tasks or [])
        if spec.tasks and spec.min_available > total:
            # The flattened form is written as an excerpt (the seed's advanced-vcjob lists only its
            # master): the gang cannot exceed the replicas, so it is clamped and the change recorded.
            obj.metadata.annotations = {**(obj.metadata.annotations or {}), CLAMPED_ANNOTATION:
                                        f"spec.minAvailable {spec.min_available} exceeded the {total} replicas "
                                        f"of spec.tasks and was lowered to {total}"}
            spec.min_available = total
        if spec.plugins is not None:
            if any(p in spec.plugins for p in NEEDS_SVC) and "svc" not in spec.plugins:
                spec.plugins["svc"] = []
            if "mpi" in spec.plugins and "ssh" not in spec.plugins:
                spec.plugins["ssh"] = []
        return obj

    def validate(self, obj: VCJob, old: VCJob | None, ctx: AdmissionContext) -> list[FieldError]:
        errors: list[FieldError] = []
        check_object_name(errors, obj.metadata.name, "job")
        job = vcjob_to_job(obj)
        errors.extend(FieldError(vcjob_path(e.path), e.message) for e in validate_job_spec(job.spec, obj.name or None))
        tasks = {t.name for t in obj.spec.tasks or []}
        run = obj.spec.run_policy
        for index, policy in enumerate((run.clean_up_task_policy or []) if run else []):
            if policy.task != "all" and policy.task not in tasks:
                errors.append(FieldError(f"spec.runPolicy.cleanUpTaskPolicy[{index}].task",
                                         f"task {policy.task!r} is not defined (use a task name or 'all')"))
        if old is None and obj.spec.queue:
            errors.extend(check_queue_accepts(ctx, obj.spec.queue, "spec.queue", "job"))
        return errors


ADMITTERS: dict[str, Admitter] = {"VCJob": VCJobAdmitter()}
