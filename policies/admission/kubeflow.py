"""Kubeflow PyTorchJob/TFJob/MPIJob admission: the Volcano Job rules, reported where the user wrote them.

Nothing is defaulted here (the converted Job is defaulted by Job admission). The job is
converted (:mod:`policies.conversions`), checked with the Job rules, and paths are mapped
back: ``spec.tasks[1].replicas`` -> ``spec.pytorchReplicaSpecs.Worker.replicas``,
``spec.minAvailable`` -> ``spec.runPolicy.schedulingPolicy.minAvailable``...
"""

from __future__ import annotations

import re
from typing import Any, Callable, Mapping

from policies.admission import AdmissionContext, Admitter
from policies.admission.names import check_object_name
from policies.admission.queues import check_queue_accepts
from policies.admission.volcano_job import validate_job_spec
from policies.conversions import (
    MPI_ROLES,
    PYTORCH_ROLES,
    TF_ROLES,
    mpijob_to_job,
    pytorchjob_to_job,
    tfjob_to_job,
)
from policies.errors import FieldError
from policies.models.kubeflow import MPIJob, PyTorchJob, TFJob

_TASK = re.compile(r"^spec\.tasks\[(\d+)\](.*)$")
_RUN_POLICY = {
    "spec.minAvailable": "spec.runPolicy.schedulingPolicy.minAvailable",
    "spec.maxRetry": "spec.runPolicy.backoffLimit",
    "spec.ttlSecondsAfterFinished": "spec.runPolicy.ttlSecondsAfterFinished",
}

TrainingJob = PyTorchJob | TFJob | MPIJob


class TrainingJobAdmitter:
    def __init__(self, field: str, roles: Mapping[str, tuple[str, str]], convert: Callable[[Any], Any]) -> None:
        self.field = field
        self.roles = roles
        self.convert = convert

    def _replica_types(self, obj: Any) -> list[str]:
        """Replica types in task order (the order the conversion writes tasks)."""
        specs = getattr(obj.spec, _snake(self.field))
        return [t for t in self.roles if t in specs]

    def map_path(self, path: str, replica_types: list[str]) -> str:
        if path in _RUN_POLICY:
            return _RUN_POLICY[path]
        if path == "spec.tasks":
            return f"spec.{self.field}"
        match = _TASK.match(path)
        if not match:
            return path
        index, rest = int(match.group(1)), match.group(2)
        if index >= len(replica_types):
            return path
        base = f"spec.{self.field}.{replica_types[index]}"
        if rest in (".minAvailable", ""):
            return "spec.runPolicy.schedulingPolicy.minAvailable" if rest else base
        if rest.startswith(".name"):
            return base
        return base + rest

    def mutate(self, obj: TrainingJob, ctx: AdmissionContext, creating: bool) -> TrainingJob:
        return obj

    def validate(self, obj: TrainingJob, old: TrainingJob | None, ctx: AdmissionContext) -> list[FieldError]:
        errors: list[FieldError] = []
        check_object_name(errors, obj.metadata.name, obj.KIND.lower())
        job = self.convert(obj)
        types = self._replica_types(obj)
        for error in validate_job_spec(job.spec, obj.metadata.name):
            if error.path == "spec.tasks" and not types:
                errors.append(FieldError(f"spec.{self.field}", f"at least one of {', '.join(self.roles)} is required"))
            elif error.path.startswith("spec.plugins"):
                # the only plugin rule the conversion can break: mpi needs its master (the Launcher)
                errors.append(FieldError(f"spec.{self.field}", f"{obj.KIND} needs a Launcher replica"))
            else:
                errors.append(FieldError(self.map_path(error.path, types), error.message))
        scheduling = obj.spec.run_policy.scheduling_policy if obj.spec.run_policy else None
        if old is None and scheduling and scheduling.queue:
            errors.extend(check_queue_accepts(ctx, scheduling.queue, "spec.runPolicy.schedulingPolicy.queue", "job"))
        return errors


def _snake(camel: str) -> str:
    return re.sub(r"(?<!^)([A-Z])", r"_\1", camel).lower()


ADMITTERS: dict[str, Admitter] = {
    "PyTorchJob": TrainingJobAdmitter("pytorchReplicaSpecs", PYTORCH_ROLES, pytorchjob_to_job),
    "TFJob": TrainingJobAdmitter("tfReplicaSpecs", TF_ROLES, tfjob_to_job),
    "MPIJob": TrainingJobAdmitter("mpiReplicaSpecs", MPI_ROLES, mpijob_to_job),
}
