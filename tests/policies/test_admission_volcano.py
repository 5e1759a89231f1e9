"""Volcano admission: defaults, every rule with its path, online queue rules, updates."""

from __future__ import annotations

from typing import Any, Optional

import pytest
import yaml
from volcano_seed_blocks import SEED_BLOCKS

from policies.admission import AdmissionContext, admit
from policies.admission.volcano_queue import validate_queue_delete
from policies.admission.volcano_vcjob import CLAMPED_ANNOTATION, vcjob_path
from policies.errors import ValidationFailed
from policies.kinds import lookup
from policies.models.core import Pod
from policies.models.kubeflow import MPIJob, PyTorchJob, TFJob
from policies.models.meta import TypedObject
from policies.models.scheduling_k8s import PriorityClass
from policies.models.volcano_batch import Job, VCJob
from policies.models.volcano_flow import JobFlow
from policies.models.volcano_scheduling import PodGroup, Queue


def seed(key: str) -> TypedObject:
    doc = yaml.safe_load(SEED_BLOCKS[key])
    return lookup(doc["apiVersion"], doc["kind"]).model.model_validate(doc)  # type: ignore[no-any-return]


def job(**spec: Any) -> Job:
    base: dict[str, Any] = {"tasks": [{"name": "worker", "replicas": 2,
                                       "template": {"spec": {"containers": [{"name": "main", "image": "img"}]}}}]}
    base.update(spec)
    return Job.model_validate({"metadata": {"name": "train", "namespace": "ml"}, "spec": base})


def paths_of(obj: TypedObject, old: Optional[TypedObject] = None, ctx: Optional[AdmissionContext] = None) -> list[str]:
    with pytest.raises(ValidationFailed) as info:
        admit(obj, old, ctx or AdmissionContext())
    return info.value.paths


class Store:
    """A tiny in-memory stand-in for the API server behind an online AdmissionContext."""

    def __init__(self, *objects: dict[str, Any]) -> None:
        self.objects = list(objects)

    def get(self, kind: str, namespace: Optional[str], name: str) -> Optional[dict[str, Any]]:
        for obj in self.objects:
            if obj["kind"] == kind and obj["metadata"]["name"] == name:
                return obj
        return None

    def list(self, kind: str, namespace: Optional[str]) -> list[dict[str, Any]]:
        return [o for o in self.objects if o["kind"] == kind]

    def context(self) -> AdmissionContext:
        return AdmissionContext(get=self.get, list=self.list, online=True)


def queue_doc(name: str, parent: Optional[str] = None, state: str = "Open", **spec: Any) -> dict[str, Any]:
    return {"kind": "Queue", "metadata": {"name": name},
            "spec": {**({"parent": parent} if parent else {}), **spec}, "status": {"state": state}}


# --------------------------------------------------------------------------- seed and defaults


@pytest.mark.parametrize("key", sorted(SEED_BLOCKS))
def test_every_seed_block_is_admitted(key: str) -> None:
    admitted = admit(seed(key))
    assert admitted.kind == seed(key).kind


def test_job_defaults_follow_volcanos_mutating_webhook() -> None:
    obj = Job.model_validate({"metadata": {"name": "j"}, "spec": {
        "plugins": {"mpi": ["--master=master"]},
        "tasks": [{"name": "master", "replicas": 1}, {"replicas": 4},
                  {"name": "p", "replicas": 8, "partitionPolicy": {"totalPartitions": 2, "partitionSize": 4,
                                                                 "minPartitions": 1}}]}})
    out = admit(obj)
    assert isinstance(out, Job)
    spec = out.spec
    assert (spec.queue, spec.scheduler_name, spec.max_retry) == ("default", "volcano", 3)
    tasks = spec.tasks or []
    assert [t.name for t in tasks] == ["master", "default1", "p"]
    assert [t.min_available for t in tasks] == [1, 4, 4]  # replicas, or minPartitions × partitionSize
    assert [t.max_retry for t in tasks] == [3, 3, 3]
    assert spec.min_available == 9
    assert spec.plugins == {"mpi": ["--master=master"], "svc": [], "ssh": []}
    assert obj.spec.queue is None, "admission must not change its input"


def test_explicit_values_are_kept_and_scheduler_name_comes_from_the_context() -> None:
    out = admit(job(queue="ai", maxRetry=5, minAvailable=1), context=AdmissionContext(scheduler_name="vc-2"))
    assert isinstance(out, Job)
    assert (out.spec.queue, out.spec.max_retry, out.spec.min_available, out.spec.scheduler_name) == ("ai", 5, 1, "vc-2")


def test_host_network_gets_cluster_first_with_host_net() -> None:
    obj = job(tasks=[{"name": "w", "replicas": 1, "template": {"spec": {"hostNetwork": True, "containers": []}}}])
    out = admit(obj)
    assert isinstance(out, Job)
    assert out.spec.tasks[0].template.spec.dns_policy == "ClusterFirstWithHostNet"  # type: ignore[index,union-attr]


def test_pytorch_plugin_gets_svc_but_not_ssh() -> None:
    out = admit(seed("Job/pytorch-ddp"))
    assert isinstance(out, Job)
    assert set(out.spec.plugins or {}) == {"pytorch", "svc"}


def test_queue_defaults() -> None:
    q = Queue.model_validate({"metadata": {"name": "q", "annotations": {"volcano.sh/hierarchy": "eng/q",
                                                                       "volcano.sh/hierarchy-weights": "2/1"}}})
    out = admit(q)
    assert isinstance(out, Queue)
    assert (out.spec.weight, out.spec.reclaimable) == (1, True)
    assert out.metadata.annotations == {"volcano.sh/hierarchy": "root/eng/q", "volcano.sh/hierarchy-weights": "1/2/1"}
    kept = admit(seed("Queue/inference"))
    assert isinstance(kept, Queue) and kept.spec.reclaimable is False and kept.spec.weight == 1


def test_vcjob_clamps_an_excerpt_gang_and_says_so() -> None:
    out = admit(seed("VCJob/advanced-vcjob"))
    assert isinstance(out, VCJob)
    assert out.spec.min_available == 1
    assert "exceeded the 1 replicas" in (out.metadata.annotations or {})[CLAMPED_ANNOTATION]
    assert out.spec.run_policy is not None and out.spec.run_policy.max_retry == 3


# --------------------------------------------------------------------------- rules


def test_all_errors_of_one_job_are_reported_together() -> None:
    obj = job(minAvailable=-1, maxRetry=-2, ttlSecondsAfterFinished=-3, plugins={"nope": []},
              policies=[{"event": "PodFailed", "action": "Explode"}],
              tasks=[{"name": "a", "replicas": 1, "minAvailable": 2}, {"name": "a", "replicas": -1}])
    assert set(paths_of(obj)) == {"spec.minAvailable", "spec.maxRetry", "spec.ttlSecondsAfterFinished",
                                  "spec.plugins.nope", "spec.policies[0].action", "spec.tasks[0].minAvailable",
                                  "spec.tasks[1].name", "spec.tasks[1].replicas"}


@pytest.mark.parametrize(("policies", "path", "needle"), [
    ([{"event": "PodRunning", "action": "RestartJob"}], "spec.policies[0].event", "internal event"),
    ([{"event": "PodFailed", "action": "SyncJob"}], "spec.policies[0].action", "internal action"),
    ([{"events": ["PodFailed", "PodEvicted"], "action": "RestartJob"},
      {"event": "PodEvicted", "action": "AbortJob"}], "spec.policies[1].event", "duplicate policy event"),
    ([{"event": "PodFailed", "events": ["PodEvicted"], "action": "RestartJob"}], "spec.policies[0].events", "both"),
    ([{"exitCode": 1, "action": "RestartJob"}, {"exitCode": 1, "action": "AbortJob"}], "spec.policies[1].exitCode",
     "duplicate exitCode"),
])
def test_policy_rules(policies: list[dict[str, Any]], path: str, needle: str) -> None:
    with pytest.raises(ValidationFailed) as info:
        admit(job(policies=policies))
    assert path in info.value.paths
    assert needle in str(info.value)


def test_valid_policies_pass() -> None:
    admit(job(policies=[{"events": ["PodFailed", "PodEvicted"], "action": "RestartJob"},
                        {"exitCode": 137, "action": "RestartTask"}, {"event": "PodPending", "action": "AbortJob",
                                                                     "timeout": "10m"}]))


def test_lone_wildcard_policy_is_valid() -> None:
    admit(job(policies=[{"event": "*", "action": "AbortJob"}]))


def test_topology_policy_accepts_whole_cpus_and_no_cpu() -> None:
    tasks = [{"name": "w", "replicas": 1, "topologyPolicy": "restricted", "template": {"spec": {"containers": [
        {"name": "a", "resources": {"requests": {"cpu": "4"}, "limits": {"cpu": "4500m"}}},
        {"name": "b", "resources": {"limits": {"nvidia.com/gpu": 8}}}]}}}]
    admit(job(tasks=tasks))
    tasks[0]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "3500m"
    assert paths_of(job(tasks=tasks)) == ["spec.tasks[0].template.spec.containers[0].resources"]


def test_dependency_dag_is_accepted_and_a_cycle_is_not() -> None:
    def t(name: str, deps: list[str]) -> dict[str, Any]:
        return {"name": name, "replicas": 1, "dependsOn": {"name": deps}}
    admit(job(tasks=[t("a", []), t("b", ["a"]), t("c", ["a", "b"])]))
    assert paths_of(job(tasks=[t("a", ["c"]), t("b", ["a"]), t("c", ["b"])])) == ["spec.tasks"]


def test_mpi_master_flag_names_the_task() -> None:
    admit(job(plugins={"mpi": ["--master=worker"]}))
    assert paths_of(job(plugins={"mpi": []})) == ["spec.plugins.mpi"]  # default master task "master"


def test_pod_name_length_uses_the_largest_index() -> None:
    name = "j" * 53  # <name>-worker-9 is 62 characters; <name>-workers-10 is 64, over the limit of 63
    ok = Job.model_validate({"metadata": {"name": name}, "spec": {"tasks": [{"name": "worker", "replicas": 10}]}})
    admit(ok)
    bad = Job.model_validate({"metadata": {"name": name}, "spec": {"tasks": [{"name": "workers", "replicas": 11}]}})
    assert paths_of(bad) == ["spec.tasks[0].name"]


def test_job_without_a_name_is_checked_but_not_named() -> None:
    admitted = admit(seed("Job/unnamed"))
    assert admitted.metadata.name is None


# --------------------------------------------------------------------------- online queue rules


def test_online_queue_rules_for_jobs() -> None:
    store = Store(queue_doc("root"), queue_doc("eng", parent="root"), queue_doc("ml", parent="eng"),
                  queue_doc("closed", parent="root", state="Closed"))
    ctx = store.context()
    admit(job(queue="ml"), context=ctx)
    for queue, needle in (("missing", "unable to find"), ("closed", "state `Open`"), ("root", "root queue"),
                          ("eng", "leaf queue")):
        with pytest.raises(ValidationFailed, match=needle) as info:
            admit(job(queue=queue), context=ctx)
        assert info.value.paths == ["spec.queue"]
    admit(job(queue="missing"))  # offline: skipped


def test_podgroup_queue_rules_and_namespace_default_queue() -> None:
    store = Store(queue_doc("ai-training"), queue_doc("closed", state="Closing"),
                  {"kind": "Namespace", "metadata": {"name": "ml", "annotations": {
                      "scheduling.volcano.sh/queue-name": "ai-training"}}})
    pg = PodGroup.model_validate({"metadata": {"name": "pg", "namespace": "ml"}, "spec": {"minMember": 1}})
    out = admit(pg, context=store.context())
    assert isinstance(out, PodGroup) and out.spec.queue == "ai-training"
    assert isinstance(admit(pg), PodGroup) and admit(pg).spec.queue == "default"  # type: ignore[attr-defined]
    closed = PodGroup.model_validate({"metadata": {"name": "pg"}, "spec": {"queue": "closed"}})
    assert paths_of(closed, ctx=store.context()) == ["spec.queue"]


def test_hierarchical_queue_rules() -> None:
    store = Store(queue_doc("root"),
                  queue_doc("eng", parent="root", capability={"cpu": "100"}, guarantee={"resource": {"cpu": "50"}}),
                  queue_doc("a", parent="eng", guarantee={"resource": {"cpu": "30"}}))
    ctx = store.context()

    def q(**spec: Any) -> Queue:
        return Queue.model_validate({"metadata": {"name": "b"}, "spec": {"parent": "eng", **spec}})

    admit(q(capability={"cpu": "80"}, guarantee={"cpu": "20"}), context=ctx)
    assert paths_of(q(capability={"cpu": "120"}), ctx=ctx) == ["spec.capability.cpu"]
    assert paths_of(q(guarantee={"cpu": "25"}), ctx=ctx) == ["spec.guarantee.resource.cpu"]  # 30 + 25 > 50
    assert paths_of(q(parent="nowhere"), ctx=ctx) == ["spec.parent"]


def test_queue_depth_limit() -> None:
    chain = [queue_doc("root")] + [queue_doc(f"l{i}", parent="root" if i == 1 else f"l{i - 1}") for i in range(1, 6)]
    ctx = Store(*chain).context()
    admit(Queue.model_validate({"metadata": {"name": "x"}, "spec": {"parent": "l4"}}), context=ctx)
    deep = Queue.model_validate({"metadata": {"name": "x"}, "spec": {"parent": "l5"}})
    with pytest.raises(ValidationFailed, match="depth"):
        admit(deep, context=ctx)


def test_queue_delete_rules() -> None:
    ctx = Store(queue_doc("eng"), queue_doc("a", parent="eng")).context()
    assert validate_queue_delete("default", ctx)[0].path == "metadata.name"
    assert validate_queue_delete("root", ctx)
    assert "child queues" in validate_queue_delete("eng", ctx)[0].message
    assert validate_queue_delete("a", ctx) == []


def test_root_queue_quotas_are_immutable() -> None:
    old = Queue.model_validate({"metadata": {"name": "root"}, "spec": {"capability": {"cpu": "100"}}})
    new = Queue.model_validate({"metadata": {"name": "root"}, "spec": {"capability": {"cpu": "200"}}})
    assert paths_of(new, old) == ["spec.capability"]


# --------------------------------------------------------------------------- updates


def test_job_update_may_change_only_replicas_and_gang_fields() -> None:
    stored = admit(job())
    assert isinstance(stored, Job)
    scaled = stored.model_copy(deep=True)
    scaled.spec.tasks[0].replicas = 4  # type: ignore[index]
    scaled.spec.min_available = 3
    scaled.spec.priority_class_name = "high"
    admit(scaled, stored)
    renamed = stored.model_copy(deep=True)
    renamed.spec.queue = "other"
    assert paths_of(renamed, stored) == ["spec"]
    grown = job(tasks=[{"name": "worker", "replicas": 2}, {"name": "ps", "replicas": 1}])
    assert "spec.tasks" in paths_of(grown, stored)


def test_update_with_omitted_defaults_is_not_a_change() -> None:
    stored = admit(job())
    admit(job(), stored)  # the user re-applies the manifest without the defaulted fields


# --------------------------------------------------------------------------- VCJob, JobFlow, PriorityClass


@pytest.mark.parametrize(("job_path", "vcjob_path_"), [
    ("spec.maxRetry", "spec.runPolicy.maxRetry"),
    ("spec.tasks[2].template.spec.containers[0].resources.requests.cpu", "spec.tasks[2].resources.requests.cpu"),
    ("spec.tasks[0].template.spec.containers[0].env[1]", "spec.tasks[0].pod.env[1]"),
    ("spec.tasks[0].template.spec.tolerations[0].value", "spec.tasks[0].pod.tolerations[0].value"),
    ("spec.tasks[1].minAvailable", "spec.tasks[1].minAvailable"),
])
def test_vcjob_paths_map_back_to_what_the_user_wrote(job_path: str, vcjob_path_: str) -> None:
    assert vcjob_path(job_path) == vcjob_path_


def test_jobflow_dag_rules() -> None:
    admit(seed("JobFlow/ml-pipeline"))
    flows = [{"name": "a", "dependsOn": {"targets": ["b"]}}, {"name": "b", "dependsOn": {"targets": ["c"]}},
             {"name": "c", "dependsOn": {"targets": ["a", "zzz"]}}]
    with pytest.raises(ValidationFailed) as info:
        admit(JobFlow.model_validate({"metadata": {"name": "f"}, "spec": {"flows": flows}}))
    assert info.value.paths == ["spec.flows[2].dependsOn.targets[1]", "spec.flows"]
    assert "a -> b -> c -> a" in str(info.value)


def test_priority_class_rules() -> None:
    admit(PriorityClass.model_validate({"metadata": {"name": "system-cluster-critical"}, "value": 2000000000}))
    stored = admit(seed("PriorityClass/high-priority"))
    assert isinstance(stored, PriorityClass) and stored.preemption_policy == "PreemptLowerPriority"
    changed = stored.model_copy(update={"value": 5})
    assert paths_of(changed, stored) == ["value"]
    store = Store({"kind": "PriorityClass", "metadata": {"name": "default-pc"}, "globalDefault": True, "value": 1})
    second = PriorityClass.model_validate({"metadata": {"name": "other"}, "value": 2, "globalDefault": True})
    assert paths_of(second, ctx=store.context()) == ["globalDefault"]


# --------------------------------------------------------------------------- Kubeflow


def _replica(n: int, **container: Any) -> dict[str, Any]:
    return {"replicas": n, "template": {"spec": {"containers": [{"name": "main", **container}]}}}


@pytest.mark.parametrize(("model", "spec", "paths"), [
    (PyTorchJob, {"pytorchReplicaSpecs": {"Master": _replica(1), "Worker": _replica(-1)}},
     ["spec.pytorchReplicaSpecs.Worker.replicas"]),
    (PyTorchJob, {"pytorchReplicaSpecs": {"Worker": _replica(2, resources={"requests": {"cpu": "2"},
                                                                            "limits": {"cpu": "1"}})},
                  "runPolicy": {"backoffLimit": -1, "schedulingPolicy": {"minAvailable": 3}}},
     ["spec.runPolicy.backoffLimit", "spec.pytorchReplicaSpecs.Worker.template.spec.containers[0].resources.requests.cpu",
      "spec.runPolicy.schedulingPolicy.minAvailable"]),
    (PyTorchJob, {"pytorchReplicaSpecs": {}}, ["spec.pytorchReplicaSpecs"]),
    (MPIJob, {"mpiReplicaSpecs": {"Worker": _replica(2)}}, ["spec.mpiReplicaSpecs"]),
    (TFJob, {"tfReplicaSpecs": {"Chief": _replica(1), "Worker": _replica(2, name="Bad_Name")}},
     ["spec.tfReplicaSpecs.Worker.template.spec.containers[0].name"]),
])
def test_training_jobs_report_job_rules_at_their_own_paths(model: Any, spec: dict[str, Any], paths: list[str]) -> None:
    obj = model.model_validate({"metadata": {"name": "kf"}, "spec": spec})
    assert paths_of(obj) == paths


def test_training_job_queue_is_checked_online() -> None:
    obj = PyTorchJob.model_validate({"metadata": {"name": "kf"}, "spec": {
        "pytorchReplicaSpecs": {"Master": _replica(1)}, "runPolicy": {"schedulingPolicy": {"queue": "gone"}}}})
    admit(obj)
    assert paths_of(obj, ctx=Store().context()) == ["spec.runPolicy.schedulingPolicy.queue"]


# --------------------------------------------------------------------------- Pods


@pytest.mark.parametrize(("annotations", "scheduler", "ok"), [
    ({"volcano.sh/jdb-min-available": "3"}, "volcano", True),
    ({"volcano.sh/jdb-max-unavailable": "25%"}, None, True),
    ({"volcano.sh/jdb-max-unavailable": "0"}, "volcano", False),
    ({"volcano.sh/jdb-max-unavailable": "100%"}, "volcano", False),
    ({"volcano.sh/jdb-min-available": "1", "volcano.sh/jdb-max-unavailable": "1"}, "volcano", False),
    ({"volcano.sh/jdb-max-unavailable": "0"}, "default-scheduler", True),  # not Volcano's pod
])
def test_pod_disruption_budget_annotations(annotations: dict[str, str], scheduler: Optional[str], ok: bool) -> None:
    spec: dict[str, Any] = {"containers": [{"name": "main"}]}
    if scheduler:
        spec["schedulerName"] = scheduler
    pod = Pod.model_validate({"metadata": {"name": "p", "annotations": annotations}, "spec": spec})
    if ok:
        admit(pod)
    else:
        assert all(p.startswith("metadata.annotations[volcano.sh/jdb-") for p in paths_of(pod))
