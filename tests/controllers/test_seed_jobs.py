"""Every Volcano Job of the seed, admitted as written, runs through the controller."""

from __future__ import annotations

from pathlib import Path

import pytest

from member_agent.controllers.reconcile import ControllerConfig
from policies.admission import admit
from policies.codec import decode_text
from policies.models.volcano_batch import Job
from tests.controllers.harness import World, fixed_keys

SEED = Path(__file__).resolve().parents[1] / "data" / "seed"
JOB_FILES = sorted(SEED.glob("job-*.yaml"))


def seed_job(path: Path) -> Job:
    result = decode_text(path.read_text(), str(path))
    assert result.ok, result.errors
    job = admit(result.objects[0].obj)
    assert isinstance(job, Job)
    job.metadata.namespace = job.metadata.namespace or "default"
    job.metadata.uid = "seed-uid"
    job.metadata.creation_timestamp = "2026-12-02T10:00:00Z"
    return job


@pytest.mark.parametrize("path", JOB_FILES, ids=[p.stem for p in JOB_FILES])
def test_seed_job_runs(path: Path) -> None:
    job = seed_job(path)
    world = World(job, ControllerConfig(key_source=fixed_keys))
    world.step()
    assert world.pods == {}
    assert world.pod_group is not None and world.pod_group.spec.min_member == job.spec.min_available
    world.set_pod_group_phase("Inqueue")
    world.step()
    assert len(world.pods) == job.spec.total_replicas()
    world.set_pod_group_phase("Running")
    world.set_all("Running")
    world.settle()
    assert world.phase == "Running"
    world.set_all("Succeeded")
    world.settle()
    assert world.phase == "Completed"


def test_seed_torchrun_variables_resolve() -> None:
    """gpu-training's command uses $(VC_TASK_INDEX) and $(VC_MASTER_HOST) without listing plugins."""
    world = World(seed_job(SEED / "job-gpu-training.yaml"), ControllerConfig(key_source=fixed_keys))
    world.step()
    world.set_pod_group_phase("Inqueue")
    world.step()
    container = world.pods["gpu-training-worker-2"].to_wire()["spec"]["containers"][0]
    env = {e["name"]: e for e in container["env"]}
    assert env["VC_TASK_INDEX"]["value"] == "2"
    ref = env["VC_MASTER_HOST"]["valueFrom"]["configMapKeyRef"]
    assert world.objects[("ConfigMap", ref["name"])]["data"][ref["key"]] == "gpu-training-worker-0.gpu-training"
    assert ("NetworkPolicy", "gpu-training") not in world.objects
    assert env["NCCL_SOCKET_IFNAME"]["value"] == "eth0"  # the user's env is kept


def test_seed_pytorch_ddp_rendezvous() -> None:
    world = World(seed_job(SEED / "job-pytorch-ddp.yaml"), ControllerConfig(key_source=fixed_keys))
    world.step()
    world.set_pod_group_phase("Inqueue")
    world.step()
    ranks = {}
    for name, pod in world.pods.items():
        env = {e["name"]: e.get("value") for e in pod.to_wire()["spec"]["containers"][0]["env"]}
        assert env["WORLD_SIZE"] == "4" and env["MASTER_ADDR"] == "pytorch-ddp-master-0.pytorch-ddp"
        ranks[name] = env["RANK"]
    assert sorted(ranks.values()) == ["0", "1", "2", "3"]
