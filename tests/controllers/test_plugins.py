"""Environment and objects injected by each job plugin, for plain jobs and federated shares."""

from __future__ import annotations

import base64
import copy
import json
from typing import Any, Optional

import pytest

from member_agent.controllers import naming
from member_agent.controllers.plugins.base import PluginError, parse_flags
from member_agent.controllers.plugins.ssh import generate_rsa_key_pair
from member_agent.controllers.reconcile import ControllerConfig
from member_agent.controllers.requests import JobAction, JobEvent, JobRequest
from tests.controllers.harness import World, fixed_keys, make_job, worker_task


def run(plugins: dict[str, list[str]], tasks: list[dict[str, Any]],
        annotations: Optional[dict[str, str]] = None, name: str = "job") -> World:
    job = make_job({"tasks": tasks, "minAvailable": 1, "plugins": plugins}, name=name, annotations=annotations)
    world = World(job)
    world.step()
    world.set_pod_group_phase("Inqueue")
    world.step()
    return world


def env(world: World, pod: str, container: int = 0) -> dict[str, str]:
    """The container's env with ConfigMap references resolved against the planned objects."""
    values: dict[str, str] = {}
    spec = world.pods[pod].to_wire()["spec"]
    for entry in spec["containers"][container].get("env", []):
        if "valueFrom" in entry:
            ref = entry["valueFrom"]["configMapKeyRef"]
            values[entry["name"]] = world.objects[("ConfigMap", ref["name"])]["data"][ref["key"]]
        else:
            values[entry["name"]] = entry["value"]
    return values


SHARE = {naming.TASK_OFFSETS: '{"master": 0, "worker": 2}', naming.TASK_TOTALS: '{"master": 1, "worker": 8}',
         naming.WORLD_SIZE: "9"}
PYTORCH = ["--master=master", "--worker=worker"]


# --------------------------------------------------------------------------- env


def test_env_task_index_plain_and_share() -> None:
    world = run({"env": []}, [worker_task(replicas=2)])
    assert env(world, "job-worker-1")["VC_TASK_INDEX"] == "1" == env(world, "job-worker-1")["VK_TASK_INDEX"]
    share = run({"env": []}, [worker_task(replicas=2)],
                {naming.TASK_OFFSETS: '{"worker": 6}', naming.TASK_TOTALS: '{"worker": 8}'})
    assert sorted(share.pods) == ["job-worker-6", "job-worker-7"]
    assert env(share, "job-worker-7")["VC_TASK_INDEX"] == "7"


def test_env_reaches_init_containers() -> None:
    task = worker_task(replicas=1)
    task["template"]["spec"]["initContainers"] = [{"name": "init", "image": "busybox"}]
    world = run({"env": []}, [task])
    init = world.pods["job-worker-0"].to_wire()["spec"]["initContainers"][0]
    assert {"name": "VC_TASK_INDEX", "value": "0"} in init["env"]


# --------------------------------------------------------------------------- svc


def test_svc_hosts_cover_the_federated_job() -> None:
    world = run({"svc": []}, [worker_task("worker", 3)], SHARE, name="pt")
    pod = world.pods["pt-worker-2"]
    assert pod.spec.hostname == "pt-worker-2" and pod.spec.subdomain == "pt"
    values = env(world, "pt-worker-2")
    assert values["VC_WORKER_NUM"] == "8"
    assert values["VC_WORKER_HOSTS"].split(",") == [f"pt-worker-{i}.pt" for i in range(8)]
    assert values["VC_MASTER_HOSTS"] == "pt-master-0.pt" and values["VC_MASTER_HOST"] == "pt-master-0.pt"
    data = world.objects[("ConfigMap", "pt-svc")]["data"]
    assert data["worker.host"].splitlines() == [f"pt-worker-{i}.pt" for i in range(8)]
    service = world.objects[("Service", "pt")]
    assert service["spec"]["clusterIP"] == "None"
    assert service["spec"]["selector"] == {naming.JOB_NAME: "pt", naming.JOB_NAMESPACE: "ns"}
    assert ("NetworkPolicy", "pt") in world.objects
    mounts = pod.to_wire()["spec"]["containers"][0]["volumeMounts"]
    assert {"name": "pt-svc", "mountPath": "/etc/volcano"} in mounts


def test_svc_flags_template_hostname_and_dashed_task_names() -> None:
    task = worker_task("param-server", 2)
    task["template"]["spec"]["hostname"] = "ps"
    world = run({"svc": ["--disable-network-policy=true", "--inject-hosts-env=false"]}, [task])
    assert ("NetworkPolicy", "job") not in world.objects
    data = world.objects[("ConfigMap", "job-svc")]["data"]
    assert data["param_server.host"] == "ps.job" and data["VC_PARAM_SERVER_NUM"] == "1"
    assert env(world, "job-param-server-0") == {}


# --------------------------------------------------------------------------- pytorch


@pytest.mark.parametrize(("annotations", "pod", "rank", "world_size"), [
    (None, "job-master-0", "0", "4"),
    (None, "job-worker-2", "3", "4"),
    (SHARE, "job-worker-2", "3", "9"),   # share: worker offset 2 → global index 2, rank = 1 master + 2
    (SHARE, "job-worker-4", "5", "9"),
])
def test_pytorch_env(annotations: Optional[dict[str, str]], pod: str, rank: str, world_size: str) -> None:
    tasks = [worker_task("worker", 3)] if annotations else [worker_task("master", 1), worker_task("worker", 3)]
    world = run({"pytorch": PYTORCH}, tasks, annotations)
    values = env(world, pod)
    assert values["MASTER_ADDR"] == "job-master-0.job" and values["MASTER_PORT"] == "23456"
    assert values["RANK"] == rank and values["WORLD_SIZE"] == world_size
    ports = world.pods[pod].to_wire()["spec"]["containers"][0]["ports"]
    assert {"name": "pytorchjob-port", "containerPort": 23456, "protocol": "TCP"} in ports
    assert ("Service", "job") in world.objects  # pytorch implies svc


def test_pytorch_world_size_without_annotation_uses_federated_totals() -> None:
    share = {naming.TASK_OFFSETS: '{"worker": 3}', naming.TASK_TOTALS: '{"master": 1, "worker": 5}'}
    world = run({"pytorch": PYTORCH + ["--port=29500"]}, [worker_task("worker", 2)], share)
    values = env(world, "job-worker-4")
    assert values["WORLD_SIZE"] == "6" and values["RANK"] == "5" and values["MASTER_PORT"] == "29500"


def test_pytorch_wait_for_master_init_container_on_workers_only() -> None:
    world = run({"pytorch": PYTORCH + ["--wait-master-enabled"]}, [worker_task("master", 1), worker_task("worker", 1)])
    worker_init = world.pods["job-worker-0"].to_wire()["spec"].get("initContainers", [])
    assert [c["name"] for c in worker_init] == ["wait-for-master"]
    assert "job-master-0.job" in worker_init[0]["command"][-1]
    assert "initContainers" not in world.pods["job-master-0"].to_wire()["spec"]


# --------------------------------------------------------------------------- mpi, tensorflow, hcclrank


def test_mpi_master_gets_worker_hosts_and_everyone_the_port() -> None:
    world = run({"mpi": ["--master=master", "--worker=worker", "--port=2222"]},
                [worker_task("worker", 2)], {naming.TASK_OFFSETS: '{"master": 0, "worker": 0}',
                                             naming.TASK_TOTALS: '{"master": 1, "worker": 4}'}, name="m")
    assert "MPI_HOST" not in env(world, "m-worker-1")
    world2 = run({"mpi": []}, [worker_task("master", 1), worker_task("worker", 2)], name="m")
    assert env(world2, "m-master-0")["MPI_HOST"] == "m-worker-0.m,m-worker-1.m"
    for name in world2.pods:
        ports = world2.pods[name].to_wire()["spec"]["containers"][0]["ports"]
        assert any(p["name"] == "mpijob-port" and p["containerPort"] == 22 for p in ports)
    assert ("Secret", "m-ssh") in world2.objects  # mpi implies ssh
    # the share's hostfile lists all four global workers
    assert world.objects[("ConfigMap", "m-svc")]["data"]["worker.host"].count("\n") == 3


def test_tensorflow_config() -> None:
    world = run({"tensorflow": []}, [worker_task("ps", 1), worker_task("worker", 2)], name="tf")
    config = json.loads(env(world, "tf-worker-1")["TF_CONFIG"])
    assert config == {"cluster": {"ps": ["tf-ps-0.tf:2222"], "worker": ["tf-worker-0.tf:2222", "tf-worker-1.tf:2222"]},
                      "task": {"type": "worker", "index": 1}}


def test_tensorflow_share_uses_global_index_and_hosts() -> None:
    share = {naming.TASK_OFFSETS: '{"worker": 2}', naming.TASK_TOTALS: '{"ps": 1, "worker": 4}'}
    world = run({"tensorflow": []}, [worker_task("worker", 2)], share, name="tf")
    config = json.loads(env(world, "tf-worker-3")["TF_CONFIG"])
    assert config["task"] == {"type": "worker", "index": 3} and len(config["cluster"]["worker"]) == 4
    assert config["cluster"]["ps"] == ["tf-ps-0.tf:2222"]


def test_tensorflow_standalone_gets_nothing() -> None:
    world = run({"tensorflow": []}, [worker_task("worker", 1)])
    assert "TF_CONFIG" not in env(world, "job-worker-0")


def test_hcclrank_follows_pytorch_rank() -> None:
    world = run({"hcclrank": [], "pytorch": PYTORCH}, [worker_task("master", 1), worker_task("worker", 2)])
    assert world.pods["job-worker-1"].metadata.annotations["hccl/rankIndex"] == "2"


# --------------------------------------------------------------------------- ssh


def _secret(world: World, name: str) -> dict[str, str]:
    data = world.objects[("Secret", name)]["data"]
    return {k: base64.b64decode(v).decode() for k, v in data.items()}


def test_ssh_secret_and_mount() -> None:
    world = run({"ssh": ["--ssh-port=2022"]}, [worker_task("master", 1), worker_task("worker", 2)])
    files = _secret(world, "job-ssh")
    assert files["id_rsa.pub"] == files["authorized_keys"] == "ssh-rsa AAAATEST test"
    assert files["config"].startswith("StrictHostKeyChecking no\nUserKnownHostsFile /dev/null\n")
    assert "Host job-worker-1\n  HostName job-worker-1.job\n  Port 2022\n" in files["config"]
    spec = world.pods["job-worker-0"].to_wire()["spec"]
    volume = next(v for v in spec["volumes"] if v["name"] == "job-ssh")
    assert volume["secret"]["defaultMode"] == 0o600
    assert {"name": "job-ssh", "mountPath": "/root/.ssh", "subPath": ".ssh"} in spec["containers"][0]["volumeMounts"]


def test_ssh_secret_is_made_once_not_on_every_resync() -> None:
    calls = []

    def counting_keys() -> tuple[str, str]:
        calls.append(1)
        return fixed_keys()

    job = make_job({"tasks": [worker_task("worker", 1)], "minAvailable": 1, "plugins": {"ssh": []}})
    world = World(job, ControllerConfig(key_source=counting_keys, default_plugins={}))
    world.step()
    world.set_pod_group_phase("Inqueue")
    plans = [world.step() for _ in range(3)]
    assert len(calls) == 1
    assert all(("Secret" not in [o["kind"] for o in p.apply_objects]) for p in plans)


def test_ssh_reuses_an_existing_secret() -> None:
    world = run({"ssh": []}, [worker_task("worker", 1)])
    # status lost the mark, the Secret survived (a new status model: the controller keeps a status's
    # wire form by the model's identity, so models are replaced, never changed in place)
    lost = world.job.status.model_copy(update={"controlled_resources": {}})
    world.job = world.job.model_copy(update={"status": lost})
    world.objects[("Secret", "job-ssh")]["data"]["id_rsa.pub"] = base64.b64encode(b"ssh-rsa KEPT").decode()
    world.objects[("Secret", "job-ssh")]["data"]["id_rsa"] = base64.b64encode(b"PRIVATE KEPT").decode()
    world.step()
    files = _secret(world, "job-ssh")
    assert files["id_rsa.pub"] == "ssh-rsa KEPT" and files["id_rsa"] == "PRIVATE KEPT"


def test_generated_rsa_key_pair_is_real() -> None:
    from cryptography.hazmat.primitives import serialization

    private, public = generate_rsa_key_pair()
    key = serialization.load_pem_private_key(private.encode(), password=None)
    assert key.key_size == 2048  # type: ignore[union-attr]
    assert public.startswith("ssh-rsa ")


# --------------------------------------------------------------------------- bad arguments


def test_unknown_plugin_or_flag_is_a_plugin_error_and_no_pods() -> None:
    for plugins in ({"nosuch": []}, {"svc": ["--bogus=1"]}):
        world = run(plugins, [worker_task("worker", 1)])
        assert world.pods == {}
        errors = [e for p in world.plans for e in p.events if e.reason == "PluginError"]
        assert errors and errors[0].type == "Warning"


@pytest.mark.parametrize(("args", "expected"), [
    (["--port=1", "--flag"], {"port": 1, "flag": True, "name": "x"}),
    (["--port", "7", "--flag=false", "--name=y"], {"port": 7, "flag": False, "name": "y"}),
])
def test_parse_flags(args: list[str], expected: dict[str, Any]) -> None:
    assert parse_flags("p", args, {"port": 0, "flag": False, "name": "x"}) == expected


@pytest.mark.parametrize("args", [["--port=x"], ["--flag=maybe"], ["--port"], ["loose"]])
def test_parse_flags_rejects(args: list[str]) -> None:
    with pytest.raises(PluginError):
        parse_flags("p", args, {"port": 0, "flag": False})


def test_svc_host_list_follows_scale_up_and_restart_recreates_objects() -> None:
    world = run({"svc": []}, [worker_task("worker", 2)])
    world.update_spec(tasks=[worker_task("worker", 3)])
    world.step()
    assert world.objects[("ConfigMap", "job-svc")]["data"]["VC_WORKER_NUM"] == "3"
    world.extra_requests.append(JobRequest(event=JobEvent.COMMAND_ISSUED, at=world.now, action=JobAction.RESTART_JOB))
    plan = world.step()
    assert set(plan.delete_objects) == {("ConfigMap", "job-svc"), ("Service", "job"), ("NetworkPolicy", "job")}
    assert world.objects == {} and world.job.status.controlled_resources == {}
    world.settle()
    assert ("Service", "job") in world.objects and world.job.status.controlled_resources == {"plugin-svc": "svc"}


def test_pod_templates_read_from_the_jobs_dump_equal_their_own() -> None:
    """The controller reads a task's pod template from the Job's dump (no PodTemplateSpec serializer
    of its own): the same wire data as the template's own to_wire, and a task without a template
    still gets the default one."""
    from member_agent.controllers.job_view import view_job
    from member_agent.controllers.pod_builder import _template_wire

    labelled = worker_task("master", 1, template={
        "metadata": {"labels": {"a": "b"}, "annotations": {"c": "d"}},
        "spec": {"restartPolicy": "OnFailure", "hostname": "h", "nodeSelector": {"x": "y"},
                 "containers": [{"name": "m", "image": "i", "env": [{"name": "E", "value": "1"}],
                                 "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}})
    bare = {"name": "bare", "replicas": 1}
    view = view_job(make_job({"minAvailable": 1, "tasks": [labelled, worker_task(), bare]}))
    for task in view.tasks:
        assert _template_wire(view, task) == task.template.to_wire()
    assert _template_wire(view, view.tasks[0])["metadata"]["labels"] == {"a": "b"}


def test_the_svc_config_map_follows_the_master_task_of_the_same_spec() -> None:
    """The ConfigMap's facts are kept once per spec (JobView.derived) and per master task: the same
    view with another master gets its own VC_MASTER_HOST, and every call hands out a fresh copy."""
    from member_agent.controllers.job_view import view_job
    from member_agent.controllers.plugins.base import PluginContext
    from member_agent.controllers.plugins.svc import MASTER_HOST_ENV, SvcPlugin

    job = view_job(make_job({"tasks": [worker_task("master", 1), worker_task("worker", 2)], "minAvailable": 1}))
    svc = SvcPlugin([])
    first, second = (svc.on_job_update(PluginContext(job=job, master_task=t))[0] for t in ("master", "worker"))
    assert first["data"][MASTER_HOST_ENV].startswith("job-master-0")
    assert second["data"][MASTER_HOST_ENV].startswith("job-worker-0")
    again = svc.on_job_update(PluginContext(job=job, master_task="master"))[0]
    assert again == first and again is not first and again["data"] is not first["data"]


def test_the_svc_config_map_equal_to_the_existing_one_is_that_one() -> None:
    """A resync hands out the pass's own copy of the existing ConfigMap when it is the one the
    plugin makes; any other existing one (stale hosts) gets a fresh copy of the made one."""
    from member_agent.controllers.job_view import view_job
    from member_agent.controllers.plugins.base import PluginContext
    from member_agent.controllers.plugins.svc import SvcPlugin

    job = view_job(make_job({"tasks": [worker_task("worker", 2)], "minAvailable": 1}))
    svc = SvcPlugin([])
    made = svc.on_job_update(PluginContext(job=job, master_task="worker"))[0]
    key = ("ConfigMap", made["metadata"]["name"])
    equal = copy.deepcopy(made)
    assert svc.on_job_update(PluginContext(job=job, existing={key: equal}, master_task="worker"))[0] is equal
    stale = copy.deepcopy(made)
    stale["data"]["VC_WORKER_NUM"] = "1"
    fresh = svc.on_job_update(PluginContext(job=job, existing={key: stale}, master_task="worker"))[0]
    assert fresh == made and fresh is not stale and fresh["data"] is not made["data"]
