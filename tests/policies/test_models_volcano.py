"""Volcano, Kubernetes-core and Kubeflow models: the seed's blocks validate and round-trip,
bad fields fail at their path, pod requests aggregate as Volcano does."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError
from volcano_seed_blocks import SEED_BLOCKS

from policies.kinds import KINDS, lookup
from policies.models.core import Affinity, Container, Event, Lease, Node, Pod, PodSpec
from policies.models.fields import duration_seconds
from policies.models.kubeflow import PyTorchJob
from policies.models.pod_resources import container_request, pod_spec_request
from policies.models.volcano_batch import Job, VCJob
from policies.models.volcano_flow import JobFlow
from policies.models.volcano_scheduling import PodGroup, Queue

OUR_MODULES = ("volcano_batch", "volcano_scheduling", "volcano_flow", "scheduling_k8s", "core", "kubeflow")


def load(key: str) -> dict[str, Any]:
    doc = yaml.safe_load(SEED_BLOCKS[key])
    assert isinstance(doc, dict)
    return doc


def errors_at(exc: ValidationError) -> list[str]:
    return [".".join(str(p) for p in e["loc"]) for e in exc.errors()]


# --------------------------------------------------------------------------- the table and the seed


@pytest.mark.parametrize("info", [k for k in KINDS if k.model_path.split(".")[2] in OUR_MODULES],
                         ids=lambda k: k.kind)
def test_every_kind_of_ours_resolves_to_a_model_with_matching_envelope(info: Any) -> None:
    model = info.model
    assert model.__name__ == info.kind
    assert info.api_version == model.API_VERSION
    assert info.kind == model.KIND


@pytest.mark.parametrize("key", sorted(SEED_BLOCKS))
def test_seed_block_validates_and_round_trips(key: str) -> None:
    doc = load(key)
    obj = lookup(doc["apiVersion"], doc["kind"]).model.model_validate(doc)
    expected = copy.deepcopy(doc)
    guarantee = expected.get("spec", {}).get("guarantee")
    if doc["kind"] == "Queue" and guarantee is not None and "resource" not in guarantee:
        expected["spec"]["guarantee"] = {"resource": guarantee}  # the one canonical form
    assert obj.to_wire() == expected


def test_flat_and_nested_guarantee_store_the_same_canonical_form() -> None:
    flat = Queue.model_validate(load("Queue/elastic-ai-training"))
    nested_doc = load("Queue/elastic-ai-training")
    nested_doc["spec"]["guarantee"] = {"resource": nested_doc["spec"]["guarantee"]}
    nested = Queue.model_validate(nested_doc)
    assert flat == nested
    assert flat.spec.guarantee_resources() == {"nvidia.com/gpu": "16", "cpu": "64", "memory": "256Gi"}
    vector = flat.spec.guarantee_vector()
    assert vector["nvidia.com/gpu"] == 16000 and vector["cpu"] == 64000 and vector["memory"] == 256 * 2**30


def test_queue_without_guarantee_has_empty_accessor() -> None:
    queue = Queue.model_validate(load("Queue/ai-training"))
    assert queue.spec.guarantee_resources() == {}
    assert queue.spec.capability_vector()["nvidia.com/gpu"] == 32000


def test_seed_task_topology_and_plugins_are_typed() -> None:
    tf = Job.model_validate(load("Job/tf-dist-training"))
    worker = tf.spec.tasks[1]  # type: ignore[index]
    assert worker.task_topology is not None and worker.task_topology.affinity is not None
    term = worker.task_topology.affinity.pod[0]  # type: ignore[index]
    assert (term.task, term.topology_key, term.weight) == ("ps", "kubernetes.io/hostname", 100)
    ddp = Job.model_validate(load("Job/pytorch-ddp"))
    assert ddp.spec.plugins == {"pytorch": ["--master=master", "--worker=worker"]}


def test_seed_jobflow_accepts_upstream_and_seed_template_references() -> None:
    flow = JobFlow.model_validate(load("JobFlow/ml-pipeline"))
    flows = flow.spec.flows or []
    assert [f.template_name() for f in flows] == ["preprocess-job", "training-job", "eval-job", "export-job"]
    assert flows[1].targets() == ["data-preprocess"]
    upstream = JobFlow.model_validate({"metadata": {"name": "f"}, "spec": {"flows": [{"name": "tpl-a"}]}})
    assert upstream.spec.flows[0].template_name() == "tpl-a"  # type: ignore[index]


def test_seed_affinity_fragment_validates() -> None:
    fragment = yaml.safe_load("""
podAntiAffinity:
  requiredDuringSchedulingIgnoredDuringExecution:
    - labelSelector:
        matchLabels:
          app: volcano-scheduler
      topologyKey: kubernetes.io/hostname
""")
    affinity = Affinity.model_validate(fragment)
    assert affinity.pod_anti_affinity is not None
    terms = affinity.pod_anti_affinity.required_during_scheduling_ignored_during_execution or []
    assert terms[0].topology_key == "kubernetes.io/hostname"


# --------------------------------------------------------------------------- envelope and strictness


@pytest.mark.parametrize(("model", "field", "value", "needle"), [
    (Job, "apiVersion", "batch.volcano.sh/v1beta1", "batch.volcano.sh/v1alpha1"),
    (Job, "kind", "Deployment", "'Job'"),
    (Queue, "apiVersion", "scheduling.volcano.sh/v1alpha1", "scheduling.volcano.sh/v1beta1"),
    (Pod, "kind", "Node", "'Pod'"),
])
def test_wrong_envelope_is_rejected_with_the_expected_value(model: Any, field: str, value: str,
                                                            needle: str) -> None:
    with pytest.raises(ValidationError) as info:
        model.model_validate({field: value, "metadata": {"name": "x"}})
    assert errors_at(info.value) == [field]
    assert needle in str(info.value) and value in str(info.value)


def test_envelope_defaults_to_the_class_values() -> None:
    job = Job.model_validate({"metadata": {"name": "j"}})
    assert (job.api_version, job.kind) == ("batch.volcano.sh/v1alpha1", "Job")


@pytest.mark.parametrize(("key", "mutate", "path"), [
    ("Job/pytorch-ddp", lambda d: d["spec"].__setitem__("minAvaliable", 1), "spec.minAvaliable"),
    ("Job/pytorch-ddp", lambda d: d["spec"]["tasks"][1].__setitem__("replica", 3), "spec.tasks.1.replica"),
    ("Job/tf-dist-training", lambda d: d["spec"]["tasks"][1]["taskTopology"]["affinity"]["pod"][0]
     .__setitem__("topologykey", "x"), "spec.tasks.1.taskTopology.affinity.pod.0.topologykey"),
    ("Queue/ai-training", lambda d: d["spec"].__setitem__("reclaimble", True), "spec.reclaimble"),
    ("PodGroup/llm-fine-tuning", lambda d: d["spec"].__setitem__("minMembers", 4), "spec.minMembers"),
    ("VCJob/advanced-vcjob", lambda d: d["spec"]["runPolicy"].__setitem__("retries", 1), "spec.runPolicy.retries"),
    ("PyTorchJob/pytorch-dist", lambda d: d["spec"]["pytorchReplicaSpecs"].__setitem__("Chief", {}),
     "spec.pytorchReplicaSpecs.Chief.[key]"),
])
def test_unknown_fields_are_rejected_at_their_path(key: str, mutate: Any, path: str) -> None:
    doc = load(key)
    mutate(doc)
    with pytest.raises(ValidationError) as info:
        lookup(doc["apiVersion"], doc["kind"]).model.model_validate(doc)
    assert path in errors_at(info.value)


def test_pod_template_keeps_unmodelled_kubernetes_fields() -> None:
    doc = load("Job/gpu-training")
    spec = doc["spec"]["tasks"][0]["template"]["spec"]
    spec["serviceAccountName"] = "trainer"
    spec["containers"][0]["securityContext"] = {"privileged": True}
    job = Job.model_validate(doc)
    assert job.to_wire() == doc


def test_labels_and_annotations_accept_any_keys() -> None:
    doc = load("Job/slo-training")
    doc["metadata"]["labels"] = {"team.example.com/owner": "ml"}
    assert Job.model_validate(doc).to_wire()["metadata"]["labels"] == {"team.example.com/owner": "ml"}


@pytest.mark.parametrize(("key", "path_to_limits", "bad"), [
    ("Job/resv-example", ("spec", "tasks", 0, "template", "spec", "containers", 0, "resources", "limits"), "1.5.0"),
    ("PodGroup/pytorch-training-pg", ("spec", "minResources"), "eight"),
    ("Queue/elastic-ai-training", ("spec", "guarantee"), "16Gb"),
    ("VCJob/advanced-vcjob", ("spec", "tasks", 0, "resources", "limits"), "64 cores"),
])
def test_bad_quantity_names_text_and_path(key: str, path_to_limits: tuple[Any, ...], bad: str) -> None:
    doc = load(key)
    target: Any = doc
    for step in path_to_limits:
        target = target[step]
    target["nvidia.com/gpu"] = bad
    with pytest.raises(ValidationError) as info:
        lookup(doc["apiVersion"], doc["kind"]).model.model_validate(doc)
    paths = errors_at(info.value)
    assert len(paths) == 1 and paths[0].endswith("nvidia.com/gpu")
    assert paths[0].startswith(".".join(str(p) for p in path_to_limits))
    assert repr(bad) in str(info.value)


def test_boolean_is_not_a_quantity() -> None:
    with pytest.raises(ValidationError) as info:
        PodGroup.model_validate({"spec": {"minResources": {"cpu": True}}})
    assert "spec.minResources.cpu" in errors_at(info.value)


def test_bad_resource_name_is_rejected() -> None:
    with pytest.raises(ValidationError, match="not a valid resource name"):
        PodGroup.model_validate({"spec": {"minResources": {"nvidia.com/gpu/x": "1"}}})


@pytest.mark.parametrize(("field", "value"), [("topologyPolicy", "strict"), ("dependsOn", {"iteration": "some"})])
def test_closed_sets_are_literals(field: str, value: Any) -> None:
    doc = load("Job/gpu-dist-training")
    doc["spec"]["tasks"][0][field] = value
    with pytest.raises(ValidationError) as info:
        Job.model_validate(doc)
    assert any(p.startswith(f"spec.tasks.0.{field}") for p in errors_at(info.value))


def test_policy_timeout_is_a_go_duration() -> None:
    doc = load("Job/pytorch-dist-training")
    doc["spec"]["policies"][0]["timeout"] = "10 minutes"
    with pytest.raises(ValidationError, match="not a duration"):
        Job.model_validate(doc)
    doc["spec"]["policies"][0]["timeout"] = "1h30m"
    job = Job.model_validate(doc)
    assert duration_seconds(job.spec.policies[0].timeout or "") == 5400  # type: ignore[index]


def test_kubeflow_scheduling_policy_is_typed() -> None:
    job = PyTorchJob.model_validate(load("PyTorchJob/pytorch-dist"))
    policy = job.spec.run_policy.scheduling_policy  # type: ignore[union-attr]
    assert policy is not None
    assert (policy.min_available, policy.queue, policy.priority_class) == (4, "ai-training", "high-priority")


def test_vcjob_lifecycle_and_pod_volumes_are_kept() -> None:
    job = VCJob.model_validate(load("VCJob/advanced-vcjob"))
    task = (job.spec.tasks or [])[0]
    assert task.lifecycle is not None and "postStart" in task.lifecycle
    assert task.pod is not None and task.pod.volumes is not None and task.pod.volumes[0].name == "shm"


# --------------------------------------------------------------------------- core kinds


def test_node_lease_event_models() -> None:
    node = Node.model_validate({
        "apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "labels": {"zone": "a"}},
        "spec": {"taints": [{"key": "gpu", "value": "true", "effect": "NoSchedule"}], "unschedulable": False},
        "status": {"allocatable": {"cpu": "63500m", "nvidia.com/gpu": "8", "pods": "110"},
                   "capacity": {"cpu": "64"},
                   "conditions": [{"type": "Ready", "status": "False"}]},
    })
    assert not node.is_ready()
    with pytest.raises(ValidationError) as info:
        Node.model_validate({"spec": {"taints": [{"key": "gpu", "effect": "NoScheduleNow"}]}})
    assert errors_at(info.value) == ["spec.taints.0.effect"]
    lease = Lease.model_validate({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                                  "metadata": {"name": "c1", "namespace": "karmada-cluster"},
                                  "spec": {"holderIdentity": "c1", "leaseDurationSeconds": 40,
                                           "renewTime": "2026-12-02T10:00:00.000000Z"}})
    assert lease.spec.lease_duration_seconds == 40
    event = Event.model_validate({"involvedObject": {"kind": "Job", "name": "j", "namespace": "ns"},
                                  "reason": "Scheduled", "type": "Normal", "count": 2,
                                  "source": {"component": "caldera-agent"}})
    assert event.involved_object.kind == "Job" and event.count == 2


# --------------------------------------------------------------------------- pod requests


def _container(requests: dict[str, Any] | None = None, limits: dict[str, Any] | None = None,
               **extra: Any) -> dict[str, Any]:
    resources: dict[str, Any] = {}
    if requests is not None:
        resources["requests"] = requests
    if limits is not None:
        resources["limits"] = limits
    return {"name": extra.pop("name", "c"), "resources": resources, **extra}


def test_limits_count_as_requests_when_requests_are_absent() -> None:
    c = Container.model_validate(_container(requests={"cpu": "500m"}, limits={"cpu": "2", "nvidia.com/gpu": 4}))
    request = container_request(c)
    assert request["cpu"] == 500 and request["nvidia.com/gpu"] == 4000


@pytest.mark.parametrize(("spec", "expected"), [
    # two containers add up; pods: 1 is always added
    ({"containers": [_container({"cpu": "1", "memory": "1Gi"}), _container({"cpu": "500m"})]},
     {"cpu": 1500, "memory": 2**30, "pods": 1}),
    # a big init container wins per dimension over the containers' sum
    ({"containers": [_container({"cpu": "1", "memory": "1Gi"})],
      "initContainers": [_container({"cpu": "3", "memory": "10Mi"})]},
     {"cpu": 3000, "memory": 2**30, "pods": 1}),
    # a sidecar counts with the containers and under every later init container
    ({"containers": [_container({"cpu": "1"})],
      "initContainers": [_container({"cpu": "500m"}, restartPolicy="Always", name="side"),
                         _container({"cpu": "2"}, name="init")]},
     {"cpu": 2500, "pods": 1}),
    # overhead is added on top
    ({"containers": [_container({"cpu": "1"})], "overhead": {"cpu": "250m", "memory": "120Mi"}},
     {"cpu": 1250, "memory": 120 * 2**20, "pods": 1}),
    # no containers: only the pod slot
    ({}, {"pods": 1}),
])
def test_pod_request_aggregates_like_volcano(spec: dict[str, Any], expected: dict[str, float]) -> None:
    request = pod_spec_request(PodSpec.model_validate(spec))
    for name, amount in expected.items():
        assert request[name] == amount
    assert {n for n in request if request[n]} == set(expected)


# --------------------------------------------------------------------------- PodGroup minResources (§9.5)


def _job_with(tasks: list[tuple[str, int, int | None, str | None, str]], min_available: int) -> Job:
    out = []
    for name, replicas, task_min, pc, gpu in tasks:
        spec: dict[str, Any] = {"containers": [_container(limits={"nvidia.com/gpu": gpu, "cpu": "1"})]}
        if pc:
            spec["priorityClassName"] = pc
        task: dict[str, Any] = {"name": name, "replicas": replicas, "template": {"spec": spec}}
        if task_min is not None:
            task["minAvailable"] = task_min
        out.append(task)
    return Job.model_validate({"metadata": {"name": "j"}, "spec": {"minAvailable": min_available, "tasks": out}})


@pytest.mark.parametrize(("tasks", "min_available", "gpus", "cpus"), [
    # gang = every task's minimum: master 1×8 + workers 3×4
    ([("master", 1, None, None, "8"), ("worker", 3, None, None, "4")], 4, 20, 4),
    # gang above the minimums: the extra pods come from the highest-priority task first
    ([("worker", 4, 1, None, "1"), ("master", 2, 1, "high", "8")], 3, 1 + 8 + 8, 3),
    # gang below the task minimums: the first pods in priority order
    ([("worker", 4, None, None, "1"), ("master", 1, None, "high", "8")], 2, 8 + 1, 2),
])
def test_job_min_resources_follows_volcano(tasks: Any, min_available: int, gpus: int, cpus: int) -> None:
    from policies.models.pod_resources import job_min_resources

    total = job_min_resources(_job_with(tasks, min_available), {"high": 1000})
    assert total["nvidia.com/gpu"] == gpus * 1000
    assert total["cpu"] == cpus * 1000
    assert "pods" not in total


# --------------------------------------------------------------------------- kubectl output


KUBECTL_POD = """
apiVersion: v1
kind: Pod
metadata:
  annotations: {scheduling.k8s.io/group-name: train-0d1c, volcano.sh/task-spec: worker}
  creationTimestamp: "2026-12-01T10:00:00Z"
  labels: {volcano.sh/job-name: train}
  name: train-worker-0
  namespace: ml
  ownerReferences:
  - {apiVersion: batch.volcano.sh/v1alpha1, blockOwnerDeletion: true, controller: true, kind: Job, name: train,
     uid: 0d1c}
  resourceVersion: "1234"
  uid: 7f3e
spec:
  containers:
  - image: pytorch/pytorch:2.0.0
    imagePullPolicy: IfNotPresent
    name: worker
    resources:
      limits: {nvidia.com/gpu: "8"}
      requests: {cpu: "16", memory: 64Gi, nvidia.com/gpu: "8"}
    terminationMessagePath: /dev/termination-log
    terminationMessagePolicy: File
    volumeMounts:
    - {mountPath: /var/run/secrets/kubernetes.io/serviceaccount, name: kube-api-access, readOnly: true}
  dnsPolicy: ClusterFirst
  enableServiceLinks: true
  nodeName: gpu-node-3
  preemptionPolicy: PreemptLowerPriority
  priority: 1000
  priorityClassName: high-priority
  restartPolicy: OnFailure
  schedulerName: volcano
  securityContext: {}
  tolerations:
  - {effect: NoExecute, key: node.kubernetes.io/not-ready, operator: Exists, tolerationSeconds: 300}
  volumes:
  - name: kube-api-access
    projected: {defaultMode: 420, sources: [{serviceAccountToken: {expirationSeconds: 3607, path: token}}]}
status:
  conditions:
  - {lastProbeTime: null, lastTransitionTime: "2026-12-01T10:00:05Z", status: "True", type: PodScheduled}
  hostIP: 10.0.0.3
  phase: Running
  podIP: 10.244.3.7
  qosClass: Burstable
  startTime: "2026-12-01T10:00:05Z"
"""

KUBECTL_NODE = """
apiVersion: v1
kind: Node
metadata:
  labels: {kubernetes.io/hostname: gpu-node-3, nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB}
  name: gpu-node-3
spec:
  podCIDR: 10.244.3.0/24
  taints: [{effect: NoSchedule, key: nvidia.com/gpu, value: present}]
status:
  addresses: [{address: 10.0.0.3, type: InternalIP}]
  allocatable: {cpu: 63500m, ephemeral-storage: "1699825208843", hugepages-2Mi: "0", memory: 1056420440Ki,
                nvidia.com/gpu: "8", pods: "110"}
  capacity: {cpu: "64", memory: 1056522840Ki, nvidia.com/gpu: "8", pods: "110"}
  conditions:
  - {lastHeartbeatTime: "2026-12-01T10:00:00Z", lastTransitionTime: "2026-11-01T00:00:00Z",
     message: kubelet is posting ready status, reason: KubeletReady, status: "True", type: Ready}
  daemonEndpoints: {kubeletEndpoint: {Port: 10250}}
  nodeInfo: {kubeletVersion: v1.30.2, architecture: amd64}
"""


def test_kubectl_pod_and_node_output_validates_and_round_trips() -> None:
    from policies.models.pod_resources import pod_request

    pod_doc = yaml.safe_load(KUBECTL_POD)
    pod = Pod.model_validate(pod_doc)
    assert pod.to_wire() == pod_doc
    request = pod_request(pod)
    assert (request["cpu"], request["memory"], request["nvidia.com/gpu"], request["pods"]) == \
        (16000, 64 * 2**30, 8000, 1)
    node_doc = yaml.safe_load(KUBECTL_NODE)
    node = Node.model_validate(node_doc)
    assert node.to_wire() == node_doc
    assert node.is_ready()
    assert node.spec.pod_cidr == "10.244.3.0/24" and pod.status is not None and pod.status.pod_ip == "10.244.3.7"
    assert node.spec.taints is not None and node.spec.taints[0].effect == "NoSchedule"


def test_binding_namespace_configmap_models() -> None:
    from policies.models.core import Binding, ConfigMap, Namespace

    binding = Binding.model_validate({"apiVersion": "v1", "kind": "Binding",
                                      "metadata": {"name": "train-worker-0", "namespace": "ml"},
                                      "target": {"apiVersion": "v1", "kind": "Node", "name": "gpu-node-3"}})
    assert binding.target.name == "gpu-node-3"
    with pytest.raises(ValidationError) as info:
        Binding.model_validate({"metadata": {"name": "p"}})
    assert errors_at(info.value) == ["target"]
    ns = Namespace.model_validate({"metadata": {"name": "ml", "annotations": {
        "scheduling.volcano.sh/queue-name": "ai-training"}}, "status": {"phase": "Active"}})
    assert ns.to_wire()["apiVersion"] == "v1"
    cm = ConfigMap.model_validate(load("ConfigMap/volcano-scheduler-config"))
    assert "volcano-scheduler.conf" in (cm.data or {})


@given(st.dictionaries(
    st.sampled_from(["cpu", "memory", "pods", "nvidia.com/gpu", "nvidia.com/gpumem", "hugepages-2Mi"]),
    st.one_of(st.integers(min_value=0, max_value=10**6),
              st.builds(lambda n, s: f"{n}{s}", st.integers(min_value=0, max_value=10**6),
                        st.sampled_from(["", "m", "k", "M", "G", "Ki", "Mi", "Gi", "e3"]))),
    max_size=6))
def test_resource_lists_keep_the_users_text_and_read_in_scheduler_units(resources: dict[str, Any]) -> None:
    from policies.models.fields import resource_vector
    from policies.resources import to_internal

    group = PodGroup.model_validate({"spec": {"minResources": resources}})
    assert group.to_wire()["spec"]["minResources"] == resources
    vector = resource_vector(group.spec.min_resources)
    assert dict(vector) == {name: to_internal(name, text) for name, text in resources.items()}
