"""Property tests (hypothesis) for one session over random small clusters.

Worlds: 1–6 nodes (cpu, memory, GPUs, a small `pods` limit now and then, a pool label),
running pods (some terminating, so their resources are releasing), and 1–5 pending gang jobs
(1–6 identical tasks, minMember 1..size, a master/worker split with minTaskMember now and then,
BestEffort now and then, a pool nodeSelector now and then) spread over up to three queues, under a handful of scheduler configurations.

Nodes carry a NoSchedule taint now and then; pods tolerate it now and then.

Properties:
* every binding and pipelined placement satisfies the pod's node selector and taints;
* no node is over-committed: running + bound this session fits allocatable on every dimension
  (cpu, memory, GPUs, pods), and so does running + bound + pipelined − releasing (FutureIdle ≥ 0);
* a gang that had pods bound this session has at least minMember tasks bound or running, and
  at least minTaskMember of each role when minMember covers the role minima
  (Volcano commits a gang only when JobReady, which counts allocated tasks, not pipelined ones,
  so this is stronger than "bound + pipelined >= minMember"; as in Volcano, BestEffort tasks still
  pending count as ready);
* the session is deterministic: the same objects, in any document order, give the same
  bindings, evictions, pipelined placements, phases and reasons.
"""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from member_agent.scheduler.cycle import run_cycle
from member_agent.scheduler.framework.clock import FixedClock
from member_agent.scheduler.framework.result import CycleResult
from member_agent.scheduler.state import state_from_documents
from policies.scheduler_conf import parse_scheduler_conf

GPU = "nvidia.com/gpu"
DIMS = ("cpu", "memory", GPU, "pods")
POOLS = ("a100", "h100")
QUEUES = ("q1", "q2", "q3")

CONFS = {
    "default": None,
    "helm-binpack": """
actions: "enqueue, allocate, backfill"
tiers:
- plugins: [{name: priority}, {name: gang, enablePreemptable: false}, {name: conformance}]
- plugins:
  - {name: overcommit}
  - {name: drf, enablePreemptable: false}
  - {name: predicates}
  - {name: proportion}
  - {name: nodeorder}
  - name: binpack
    arguments: {binpack.weight: 10, binpack.resources: nvidia.com/gpu, binpack.resources.nvidia.com/gpu: 2}
""",
    "capacity": """
actions: "enqueue, allocate, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: drf}, {name: predicates}, {name: capacity}, {name: nodeorder}]
""",
    "no-enqueue": """
actions: "allocate, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}]
- plugins: [{name: drf}, {name: predicates}, {name: proportion}, {name: binpack}]
""",
}
PARSED = {name: parse_scheduler_conf(text) if text else None for name, text in CONFS.items()}


@dataclass
class World:
    docs: list[dict[str, Any]] = field(default_factory=list)
    allocatable: dict[str, dict[str, int]] = field(default_factory=dict)  # node -> dim -> amount (milli cpu, MiB, units)
    running: dict[str, list[tuple[dict[str, int], bool]]] = field(default_factory=lambda: defaultdict(list))
    pod_request: dict[str, dict[str, int]] = field(default_factory=dict)  # "ns/pod" -> request
    group_shape: dict[str, dict[str, int]] = field(default_factory=dict)  # "ns/group" -> task request
    min_member: dict[str, int] = field(default_factory=dict)
    already_placed: Counter[str] = field(default_factory=Counter)  # running/bound tasks per group before the session
    node_pool: dict[str, str] = field(default_factory=dict)
    node_tainted: dict[str, bool] = field(default_factory=dict)  # carries the NoSchedule taint dedicated=gpu
    pod_selector: dict[str, str | None] = field(default_factory=dict)  # "ns/pod" -> required pool
    pod_tolerates: dict[str, bool] = field(default_factory=dict)
    pod_role: dict[str, str] = field(default_factory=dict)
    min_task_member: dict[str, dict[str, int]] = field(default_factory=dict)  # "ns/group" -> role -> min


def _request(cpu: int, mem: int, gpu: int) -> dict[str, int]:
    return {"cpu": cpu, "memory": mem, GPU: gpu, "pods": 1}


def _container(req: dict[str, int]) -> dict[str, Any]:
    requests: dict[str, str] = {}
    if req["cpu"]:
        requests["cpu"] = f"{req['cpu']}m"
    if req["memory"]:
        requests["memory"] = f"{req['memory']}Mi"
    if req[GPU]:
        requests[GPU] = str(req[GPU])
    return {"name": "main", "resources": {"requests": requests}} if requests else {"name": "main"}


@st.composite
def worlds(draw: st.DrawFn) -> World:
    w = World()
    nodes = draw(st.integers(1, 6))
    for i in range(nodes):
        name = f"n{i}"
        cpu = draw(st.sampled_from([2000, 4000, 8000]))
        mem = draw(st.sampled_from([4096, 16384]))
        gpu = draw(st.sampled_from([0, 2, 4, 8]))
        pods = draw(st.sampled_from([3, 110, 110]))
        w.allocatable[name] = {"cpu": cpu, "memory": mem, GPU: gpu, "pods": pods}
        alloc = {"cpu": f"{cpu}m", "memory": f"{mem}Mi", "pods": str(pods)}
        if gpu:
            alloc[GPU] = str(gpu)
        labels = {"pool": POOLS[i % 2]}
        w.node_pool[name] = labels["pool"]
        node: dict[str, Any] = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
                                "status": {"allocatable": alloc}}
        w.node_tainted[name] = draw(st.integers(0, 3)) == 0
        if w.node_tainted[name]:
            node["spec"] = {"taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]}
        w.docs.append(node)
    for q, queue in enumerate(QUEUES):
        spec: dict[str, Any] = {"weight": draw(st.integers(0, 3)) if q else 1}
        if draw(st.booleans()):
            spec["capability"] = {"cpu": f"{draw(st.sampled_from([2000, 6000, 20000]))}m"}
        w.docs.append({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": queue},
                       "spec": spec})
    # running pods: placed only where they fit, so the starting state is itself valid
    used: dict[str, Counter[str]] = {n: Counter() for n in w.allocatable}
    for r in range(draw(st.integers(0, 4))):
        node = f"n{draw(st.integers(0, nodes - 1))}"
        req = _request(draw(st.sampled_from([500, 1000, 2000])), draw(st.sampled_from([512, 2048])),
                       draw(st.sampled_from([0, 1, 2])))
        if any(used[node][d] + req[d] > w.allocatable[node][d] for d in DIMS):
            continue
        used[node].update(req)
        deleting = draw(st.booleans())
        group = f"run{r}"
        meta: dict[str, Any] = {"name": f"{group}-worker-0", "namespace": "default",
                                "annotations": {"scheduling.k8s.io/group-name": group}}
        if deleting:
            meta["deletionTimestamp"] = "2026-12-02T10:00:00Z"
        w.docs.append({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                       "metadata": {"name": group, "namespace": "default"},
                       "spec": {"minMember": 1, "queue": draw(st.sampled_from(QUEUES))}, "status": {"phase": "Running"}})
        w.docs.append({"apiVersion": "v1", "kind": "Pod", "metadata": meta,
                       "spec": {"nodeName": node, "containers": [_container(req)]}, "status": {"phase": "Running"}})
        w.running[node].append((req, deleting))
        w.already_placed[f"default/{group}"] += 1
    for j in range(draw(st.integers(1, 5))):
        group = f"job{j}"
        size = draw(st.integers(1, 6))
        best_effort = draw(st.integers(0, 9)) == 0
        req = _request(0, 0, 0) if best_effort else _request(
            draw(st.sampled_from([250, 1000, 1500, 3000])), draw(st.sampled_from([0, 256, 1024, 4096])),
            draw(st.sampled_from([0, 0, 1, 2, 4])))
        key = f"default/{group}"
        w.group_shape[key] = req
        w.min_member[key] = draw(st.integers(1, size))
        pg_spec: dict[str, Any] = {"minMember": w.min_member[key], "queue": draw(st.sampled_from(QUEUES))}
        if draw(st.booleans()):
            pg_spec["minResources"] = {k: v for k, v in _container(req).get("resources", {}).get("requests", {}).items()}
        with_master = size > 1 and draw(st.integers(0, 2)) == 0
        if with_master:  # a master/worker job with per-role minima (minTaskMember)
            w.min_task_member[key] = {"master": 1, "worker": draw(st.integers(0, size - 1))}
            pg_spec["minTaskMember"] = w.min_task_member[key]
        w.docs.append({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                       "metadata": {"name": group, "namespace": "default",
                                    "creationTimestamp": f"2026-01-01T00:00:{draw(st.integers(0, 59)):02d}Z"},
                       "spec": pg_spec, "status": {"phase": draw(st.sampled_from(["Pending", "Inqueue"]))}})
        pod_spec: dict[str, Any] = {"containers": [_container(req)]}
        selector = draw(st.sampled_from(POOLS)) if draw(st.integers(0, 3)) == 0 else None
        if selector:
            pod_spec["nodeSelector"] = {"pool": selector}
        tolerates = draw(st.booleans())
        if tolerates:
            pod_spec["tolerations"] = [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}]
        for k in range(size):
            role = "master" if with_master and k == 0 else "worker"
            name = f"{group}-{role}-{k}"
            w.pod_request[f"default/{name}"] = req
            w.pod_selector[f"default/{name}"] = selector
            w.pod_tolerates[f"default/{name}"] = tolerates
            w.pod_role[f"default/{name}"] = role
            w.docs.append({"apiVersion": "v1", "kind": "Pod",
                           "metadata": {"name": name, "namespace": "default",
                                        "annotations": {"scheduling.k8s.io/group-name": group,
                                                        "volcano.sh/task-spec": role}},
                           "spec": pod_spec, "status": {"phase": "Pending"}})
    return w


def run(docs: list[dict[str, Any]], conf_name: str) -> CycleResult:
    state = state_from_documents(docs, conf=PARSED[conf_name])
    return run_cycle(state.snapshot, state.conf, FixedClock())


def decisions(result: CycleResult) -> dict[str, Any]:
    out = result.to_json()
    out.pop("sessionSeconds")
    out["reasons"] = {job: report.reason for job, report in sorted(result.jobs.items())}
    return out


SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
CONF_NAMES = st.sampled_from(sorted(CONFS))


@SETTINGS
@given(worlds(), CONF_NAMES)
def test_no_node_is_over_committed(world: World, conf_name: str) -> None:
    result = run(world.docs, conf_name)
    bound: dict[str, Counter[str]] = {n: Counter() for n in world.allocatable}
    for pod, node in result.bindings.items():
        bound[node].update(world.pod_request[pod])
    pipelined: dict[str, Counter[str]] = {n: Counter() for n in world.allocatable}
    for group, nodes in result.pipelined.items():
        for node in nodes:
            pipelined[node].update(world.group_shape[group])
    for node, alloc in world.allocatable.items():
        used: Counter[str] = Counter()
        releasing: Counter[str] = Counter()
        for req, deleting in world.running[node]:
            used.update(req)
            if deleting:
                releasing.update(req)
        for dim in DIMS:
            now = used[dim] + bound[node][dim]
            assert now <= alloc[dim], f"{node} {dim}: running+bound {now} > allocatable {alloc[dim]}"
            future = now + pipelined[node][dim] - releasing[dim]
            assert future <= alloc[dim], f"{node} {dim}: FutureIdle < 0 ({future} > {alloc[dim]})"


@SETTINGS
@given(worlds(), CONF_NAMES)
def test_bindings_respect_node_selector_and_taints(world: World, conf_name: str) -> None:
    result = run(world.docs, conf_name)
    for pod, node in list(result.bindings.items()) + [
            (group, node) for group, nodes in result.pipelined.items() for node in nodes]:
        if pod in world.pod_selector:  # a pod (pipelined entries name the group: checked below)
            assert world.pod_selector[pod] in (None, world.node_pool[node]), f"{pod} on {node}: selector"
            assert world.pod_tolerates[pod] or not world.node_tainted[node], f"{pod} on {node}: taint"
        else:
            members = [p for p, owner in result.pod_owner.items() if owner == pod and p in world.pod_selector]
            for member in members:
                assert world.pod_selector[member] in (None, world.node_pool[node])
                assert world.pod_tolerates[member] or not world.node_tainted[node]


@SETTINGS
@given(worlds(), CONF_NAMES)
def test_committed_gangs_meet_min_member(world: World, conf_name: str) -> None:
    result = run(world.docs, conf_name)
    bound_now = Counter(result.pod_owner[pod] for pod in result.bindings)
    for group, count in bound_now.items():
        placed = count + world.already_placed[group]
        # Volcano's IsReady also counts BestEffort tasks still pending (they need no resources),
        # so a BestEffort gang may be dispatched before all its pods found a node.
        best_effort_pending = result.jobs[group].pending if _best_effort(world.group_shape[group]) else 0
        ready = placed + best_effort_pending
        assert ready >= world.min_member[group], f"{group}: {ready} ready < minMember {world.min_member[group]}"
        assert result.jobs[group].bound + best_effort_pending >= world.min_member[group]
        minima = world.min_task_member.get(group, {})
        # per-role minima are enforced only when minMember covers them (Volcano's CheckTaskReady)
        if minima and not best_effort_pending and world.min_member[group] >= sum(minima.values()):
            per_role = Counter(world.pod_role[pod] for pod in result.bindings if result.pod_owner[pod] == group)
            for role, need in minima.items():
                assert per_role[role] >= need, f"{group}: {per_role[role]} {role} bound < minTaskMember {need}"


def _best_effort(shape: dict[str, int]) -> bool:
    return not (shape["cpu"] or shape["memory"] or shape[GPU])


@SETTINGS
@given(worlds(), CONF_NAMES, st.randoms(use_true_random=False))
def test_deterministic_for_a_fixed_input_in_any_document_order(world: World, conf_name: str, rnd: random.Random) -> None:
    first = decisions(run(world.docs, conf_name))
    assert decisions(run(world.docs, conf_name)) == first
    shuffled = list(world.docs)
    rnd.shuffle(shuffled)
    assert decisions(run(shuffled, conf_name)) == first
