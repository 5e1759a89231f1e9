"""Properties of preempt, reclaim and GPU sharing over random cluster states (hypothesis)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.scheduler.part2_builders import (
    GPU_MEMORY_GIB,
    conf,
    cycle,
    node,
    pod,
    pod_group,
    priority_class,
    queue,
)

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
PRIORITIES = (1, 10, 100, 1000)

running_job = st.tuples(st.integers(2, 6), st.integers(1, 4), st.sampled_from(PRIORITIES), st.integers(1, 3))
pending_job = st.tuples(st.integers(1, 2), st.integers(1, 4), st.sampled_from(PRIORITIES[1:]))


def _priority_classes() -> list[dict[str, Any]]:
    return [priority_class(f"p{p}", p) for p in PRIORITIES]


@FAST
@given(nodes=st.integers(1, 2), running=st.lists(running_job, min_size=2, max_size=5),
       pending=st.lists(pending_job, min_size=1, max_size=3), gang=st.booleans())
def test_preempt_never_evicts_for_a_lower_or_equal_priority(nodes: int, running: list[Any], pending: list[Any],
                                                            gang: bool) -> None:
    """preempt and gangpreempt: victims always have a lower job priority than the job they make
    room for; preempt (not gangpreempt, which may break gangs) never leaves a victim job below minMember."""
    objects: list[dict[str, Any]] = [node(f"n{i}") for i in range(nodes)] + _priority_classes() + [queue("q")]
    priority: dict[str, int] = {}
    minimum: dict[str, int] = {}
    members: dict[str, list[str]] = defaultdict(list)
    used = [0] * nodes
    for j, (count, gpus, prio, min_member) in enumerate(running):
        name = f"run{j}"
        priority[f"default/{name}"] = prio
        minimum[f"default/{name}"] = min(min_member, count)
        objects.append(pod_group(name, min(min_member, count), "q", "Running", f"p{prio}"))
        for k in range(count):
            row = next((r for r in range(nodes) if used[r] + gpus <= 8), None)
            if row is None:
                break
            used[row] += gpus
            objects.append(pod(f"{name}-w-{k}", name, {"cpu": "1", "nvidia.com/gpu": gpus}, f"n{row}", prio))
            members[f"default/{name}"].append(f"default/{name}-w-{k}")
    for j, (count, gpus, prio) in enumerate(pending):
        name = f"new{j}"
        priority[f"default/{name}"] = prio
        objects.append(pod_group(name, count, "q", "Inqueue", f"p{prio}"))
        objects += [pod(f"{name}-w-{k}", name, {"cpu": "1", "nvidia.com/gpu": gpus}, None, prio) for k in range(count)]
    actions = "enqueue, allocate, preempt" + (", gangpreempt" if gang else "")
    result = cycle(objects, conf(actions, ["drf", "predicates", "proportion", "nodeorder"]))
    evicted = set(result.evictions)
    for victim in result.evictions:
        group = result.pod_owner[victim]
        preemptor = result.eviction_reasons[victim].rsplit(" for ", 1)[1]
        assert priority[group] < priority[preemptor], (victim, result.eviction_reasons[victim])
    by_preempt = {p for p in evicted if result.eviction_reasons[p].startswith("preempt:")}
    for group, pods in members.items():
        if any(p in evicted for p in pods) and not any(p in evicted - by_preempt for p in pods):
            kept = sum(1 for p in pods if p not in evicted)
            assert kept >= minimum[group], (group, kept, minimum[group])


@FAST
@given(holdings=st.lists(st.tuples(st.integers(0, 12), st.integers(4, 8)), min_size=2, max_size=3),
       wanted=st.integers(1, 4), gpus=st.sampled_from((1, 2, 4)), plugin=st.sampled_from(("proportion", "capacity")))
def test_reclaim_never_takes_a_queue_below_its_guarantee(holdings: list[tuple[int, int]], wanted: int, gpus: int,
                                                         plugin: str) -> None:
    nodes = 2
    objects: list[dict[str, Any]] = [node(f"n{i}") for i in range(nodes)]
    guarantees: dict[str, int] = {}
    held: dict[str, list[tuple[str, int]]] = defaultdict(list)
    used = [0] * nodes
    for q, (guarantee, pods) in enumerate(holdings):
        name = f"q{q}"
        guarantees[name] = guarantee
        objects.append(queue(name, guarantee={"nvidia.com/gpu": str(guarantee)} if guarantee else None))
        objects.append(pod_group(f"job{q}", 1, name, "Running"))
        for k in range(pods):
            row = next((r for r in range(nodes) if used[r] + 2 <= 8), None)
            if row is None:
                break
            used[row] += 2
            objects.append(pod(f"job{q}-w-{k}", f"job{q}", {"cpu": "1", "nvidia.com/gpu": 2}, f"n{row}"))
            held[name].append((f"default/job{q}-w-{k}", 2))
    objects.append(queue("hungry"))
    objects.append(pod_group("hungry", wanted, "hungry", "Inqueue"))
    objects += [pod(f"hungry-w-{k}", "hungry", {"cpu": "1", "nvidia.com/gpu": gpus}) for k in range(wanted)]
    result = cycle(objects, conf("enqueue, allocate, reclaim", ["drf", "predicates", plugin, "nodeorder"]))
    evicted = set(result.evictions)
    for name, pods in held.items():
        before = sum(g for _, g in pods)
        after = sum(g for p, g in pods if p not in evicted)
        if after < before:
            assert after >= guarantees[name], (name, before, after, guarantees[name])


shared_pod = st.tuples(st.integers(1, 80), st.integers(0, 100), st.integers(0, 2))


@FAST
@given(gpus=st.integers(1, 4), existing=st.lists(shared_pod, max_size=4), pending=st.lists(shared_pod, min_size=1, max_size=8),
       policy=st.sampled_from(("", "binpack", "spread")))
def test_gpu_memory_and_cores_never_exceed_a_gpu(gpus: int, existing: list[tuple[int, int, int]],
                                                  pending: list[tuple[int, int, int]], policy: str) -> None:
    args = f"\n    arguments: {{deviceshare.SchedulePolicy: {policy}, deviceshare.ScheduleWeight: 5}}" if policy else ""
    scheduler_conf = conf("enqueue, allocate", ["predicates", "proportion", "nodeorder", f"deviceshare{args}"])
    objects: list[dict[str, Any]] = [node("n0", gpus=gpus, hami=True), node("n1", gpus=gpus, hami=True)]
    memory: dict[tuple[str, int], float] = defaultdict(float)
    cores: dict[tuple[str, int], float] = defaultdict(float)
    holders: dict[tuple[str, int], int] = defaultdict(int)
    whole: set[tuple[str, int]] = set()
    demand: dict[str, tuple[int, int, int]] = {}
    objects.append(pod_group("old", 1, "default", "Running"))
    for k, (mem, core, index) in enumerate(existing):
        gpu = index % gpus
        if memory[("n0", gpu)] + mem > GPU_MEMORY_GIB or cores[("n0", gpu)] + core > 100:
            continue
        memory[("n0", gpu)] += mem
        cores[("n0", gpu)] += core
        holders[("n0", gpu)] += 1
        objects.append(pod(f"old-w-{k}", "old", {"cpu": "1", "nvidia.com/gpumem": mem, "nvidia.com/gpucores": core},
                           "n0", annotations={"volcano.sh/gpu-index": str(gpu)}))
    for k, (mem, core, kind) in enumerate(pending):
        name = f"new{k}"
        objects.append(pod_group(name, 1, "default", "Inqueue"))
        requests: dict[str, Any] = {"cpu": "1"}
        if kind == 2:  # a whole GPU
            requests["nvidia.com/gpu"] = 1
        else:
            requests.update({"nvidia.com/gpumem": mem, "nvidia.com/gpucores": core})
        demand[f"default/{name}-w-0"] = (mem, core, kind)
        objects.append(pod(f"{name}-w-0", name, requests))
    result = cycle(objects, scheduler_conf)
    assert set(result.device_allocations) == set(result.bindings)
    for pod_key, devices in result.device_allocations.items():
        mem, core, kind = demand[pod_key]
        node_name = result.bindings[pod_key]
        assert len(devices["gpus"]) == 1
        for gpu in devices["gpus"]:
            key = (node_name, gpu)
            assert key not in whole
            if kind == 2:
                assert holders[key] == 0, "a whole GPU must be free"
                whole.add(key)
            else:
                memory[key] += mem
                cores[key] += core
            holders[key] += 1
    assert all(v <= GPU_MEMORY_GIB for v in memory.values()), dict(memory)
    assert all(v <= 100 for v in cores.values()), dict(cores)
