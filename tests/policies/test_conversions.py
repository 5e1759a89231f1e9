"""VCJob and Kubeflow training jobs -> Volcano Job: pure conversions that admission then accepts."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml
from volcano_seed_blocks import SEED_BLOCKS

from policies.admission import admit
from policies.conversions import (
    CLEANUP_POLICY,
    CONVERTED_FROM,
    mpijob_to_job,
    pytorchjob_to_job,
    tfjob_to_job,
    to_job,
    vcjob_to_job,
)
from policies.errors import UnknownKind
from policies.models.core import ConfigMap
from policies.models.kubeflow import MPIJob, PyTorchJob, TFJob
from policies.models.volcano_batch import Job, VCJob


def container(name: str = "main", **extra: Any) -> dict[str, Any]:
    return {"name": name, "image": "img", **extra}


def replica(replicas: int, restart: str = "OnFailure", **spec: Any) -> dict[str, Any]:
    return {"replicas": replicas, "restartPolicy": restart,
            "template": {"spec": {"containers": [container(**spec)]}}}


def by_name(job: Job) -> dict[str, Any]:
    return {t.name: t for t in job.spec.tasks or []}


# --------------------------------------------------------------------------- VCJob


def test_seed_vcjob_becomes_a_job_with_one_container_per_task() -> None:
    vcjob = VCJob.model_validate(yaml.safe_load(SEED_BLOCKS["VCJob/advanced-vcjob"]))
    before = vcjob.to_wire()
    job = vcjob_to_job(vcjob)
    assert vcjob.to_wire() == before, "conversion must not modify its input"
    assert (job.kind, job.api_version, job.name) == ("Job", "batch.volcano.sh/v1alpha1", "advanced-vcjob")
    spec = job.spec
    assert (spec.queue, spec.min_available, spec.max_retry, spec.ttl_seconds_after_finished) == \
        ("ai-training", 4, 3, 7200)
    assert spec.plugins == {"svc": [], "env": [], "pytorch": ["--master=master", "--worker=worker"]}
    pod = spec.tasks[0].template.spec  # type: ignore[index,union-attr]
    assert pod is not None and pod.restart_policy == "OnFailure"
    assert pod.volumes is not None and pod.volumes[0].name == "shm"
    main = (pod.containers or [])[0]
    assert (main.name, main.image, main.command) == ("master", "pytorch/pytorch:2.0.0-cuda11.8",
                                                      ["torchrun", "--nnodes=4", "train.py"])
    assert main.resources is not None and main.resources.limits == {"nvidia.com/gpu": 8, "cpu": "64",
                                                                     "memory": "256Gi"}
    assert main.to_wire()["lifecycle"]["preStop"]["exec"]["command"][-1] == "kill -SIGTERM $PID"
    annotations = job.metadata.annotations or {}
    assert annotations[CONVERTED_FROM] == "VCJob"
    assert json.loads(annotations[CLEANUP_POLICY]) == [{"action": "Delete", "task": "all", "when": "Completed"}]


def test_admitted_vcjob_converts_to_an_admissible_job() -> None:
    vcjob = admit(VCJob.model_validate(yaml.safe_load(SEED_BLOCKS["VCJob/advanced-vcjob"])))
    job = admit(to_job(vcjob))
    assert isinstance(job, Job) and job.spec.min_available == 1


def test_vcjob_pod_fields_are_sorted_into_container_and_pod_spec() -> None:
    vcjob = VCJob.model_validate({"metadata": {"name": "v"}, "spec": {"tasks": [{
        "name": "worker", "replicas": 2, "minAvailable": 1, "topologyPolicy": "best-effort",
        "policies": [{"event": "PodEvicted", "action": "RestartTask"}],
        "pod": {"image": "img", "env": [{"name": "A", "value": "1"}], "workingDir": "/w",
                "nodeSelector": {"pool": "a100"}, "serviceAccountName": "trainer",
                "tolerations": [{"key": "gpu", "operator": "Exists"}]}}]}})
    task = vcjob_to_job(vcjob).spec.tasks[0]  # type: ignore[index]
    assert (task.replicas, task.min_available, task.topology_policy) == (2, 1, "best-effort")
    assert task.policies is not None and task.policies[0].action == "RestartTask"
    wire = task.template.to_wire()  # type: ignore[union-attr]
    assert wire == {"spec": {
        "containers": [{"name": "worker", "image": "img", "env": [{"name": "A", "value": "1"}], "workingDir": "/w"}],
        "nodeSelector": {"pool": "a100"}, "serviceAccountName": "trainer",
        "tolerations": [{"key": "gpu", "operator": "Exists"}]}}


# --------------------------------------------------------------------------- Kubeflow


def test_seed_pytorchjob_becomes_master_and_worker_tasks() -> None:
    source = PyTorchJob.model_validate(yaml.safe_load(SEED_BLOCKS["PyTorchJob/pytorch-dist"]))
    job = pytorchjob_to_job(source)
    tasks = by_name(job)
    assert list(tasks) == ["master", "worker"]
    assert (tasks["master"].replicas, tasks["worker"].replicas) == (1, 3)
    assert (tasks["master"].min_available, tasks["worker"].min_available) == (1, 3)
    assert tasks["worker"].template.spec.restart_policy == "OnFailure"
    assert tasks["worker"].template.spec.scheduler_name == "volcano"
    spec = job.spec
    assert (spec.min_available, spec.queue, spec.priority_class_name, spec.scheduler_name) == \
        (4, "ai-training", "high-priority", "volcano")
    assert spec.plugins == {"pytorch": ["--master=master", "--worker=worker"], "svc": []}
    assert (job.metadata.annotations or {})[CONVERTED_FROM] == "PyTorchJob"
    admitted = admit(job)
    assert isinstance(admitted, Job) and admitted.spec.max_retry == 3


def test_smaller_gang_fills_the_master_first_and_run_policy_maps() -> None:
    source = PyTorchJob.model_validate({"metadata": {"name": "pt"}, "spec": {
        "pytorchReplicaSpecs": {"Worker": replica(8, ports=[{"name": "pytorchjob-port", "containerPort": 29500}]),
                                "Master": replica(1)},
        "runPolicy": {"backoffLimit": 5, "ttlSecondsAfterFinished": 600,
                      "schedulingPolicy": {"minAvailable": 5, "queue": "q"}}}})
    job = pytorchjob_to_job(source)
    tasks = by_name(job)
    assert list(tasks) == ["master", "worker"], "the master comes first whatever the manifest order"
    assert (tasks["master"].min_available, tasks["worker"].min_available) == (1, 4)
    assert (job.spec.min_available, job.spec.max_retry, job.spec.ttl_seconds_after_finished) == (5, 5, 600)
    assert job.spec.plugins is not None and "--port=29500" in job.spec.plugins["pytorch"]
    admit(job)


def test_tfjob_roles_and_exit_code_restart_policy() -> None:
    source = TFJob.model_validate({"metadata": {"name": "tf"}, "spec": {"tfReplicaSpecs": {
        "Worker": replica(4, "ExitCode"), "PS": replica(2, "Never"), "Chief": replica(1)}}})
    job = tfjob_to_job(source)
    tasks = by_name(job)
    assert list(tasks) == ["chief", "ps", "worker"]
    assert tasks["worker"].template.spec.restart_policy == "Never"
    assert job.spec.plugins == {"tensorflow": ["--chief=chief", "--ps=ps", "--worker=worker"], "svc": []}
    assert job.spec.min_available == 7
    admit(job)


def test_mpijob_launcher_is_the_mpi_master_and_ssh_is_enabled() -> None:
    source = MPIJob.model_validate({"metadata": {"name": "mpi"}, "spec": {"mpiReplicaSpecs": {
        "Launcher": replica(1), "Worker": replica(2)}}})
    job = mpijob_to_job(source)
    assert list(by_name(job)) == ["launcher", "worker"]
    assert job.spec.plugins == {"mpi": ["--master=launcher", "--worker=worker"], "svc": [], "ssh": []}
    admitted = admit(job)  # the mpi master check finds the launcher task
    assert isinstance(admitted, Job)


def test_replicas_default_to_one_and_template_is_optional() -> None:
    source = PyTorchJob.model_validate({"metadata": {"name": "pt"}, "spec": {"pytorchReplicaSpecs": {
        "Master": {"restartPolicy": "Always"}}}})
    job = pytorchjob_to_job(source)
    task = by_name(job)["master"]
    assert task.replicas == 1 and task.template.spec.restart_policy == "Always"


# --------------------------------------------------------------------------- dispatch


def test_to_job_dispatches_on_kind() -> None:
    pt = PyTorchJob.model_validate(yaml.safe_load(SEED_BLOCKS["PyTorchJob/pytorch-dist"]))
    assert to_job(pt) == pytorchjob_to_job(pt)
    job = Job.model_validate(yaml.safe_load(SEED_BLOCKS["Job/pytorch-ddp"]))
    copied = to_job(job)
    assert copied == job and copied is not job


def test_to_job_rejects_kinds_that_are_not_jobs() -> None:
    with pytest.raises(UnknownKind, match="ConfigMap"):
        to_job(ConfigMap.model_validate({"metadata": {"name": "c"}}))
