"""Network-topology benchmark (``python bench/scheduler.py --topology``): one session placing gangs
into HyperNodes, and the same workload without HyperNodes.

The cluster: N GPU nodes (8 GPUs, 128 CPU, 1 TiB each) under three tiers of HyperNodes: leaves of
8 nodes (tier 1), spines of 64 nodes (tier 2, eight leaves) and one top HyperNode (tier 3); the
session adds the virtual ``<cluster-top-hypernode>`` above it. The workload: pending gangs of
1–16 pods of 1, 2, 4 or 8 GPUs, 10,000 pods by default, in four queues; a third hard with
``highestTierAllowed: 1`` (those one leaf can hold: at most 64 GPUs), a third hard at tier 2
(and the larger ones of the first third), a third soft. Three runs, each in its own process (its own peak RSS):

* ``topology``: HyperNodes, the jobs' networkTopology, network-topology-aware in the conf;
* ``plugin, no HyperNodes``: the same conf and jobs, no HyperNodes (the plugin registers nothing);
* ``no topology``: the benchmark's usual conf (no plugin), no HyperNodes, no networkTopology.

Prints per run: snapshot build, session CPU and wall seconds, pods bound, peak RSS, and for the
topology run how many gangs ended inside one tier-1 / tier-2 HyperNode.
"""

from __future__ import annotations

import json
import random
import resource
import subprocess
import sys
import time
from collections import Counter
from typing import Any

from scheduler import CONF_TEXT as BASE_CONF  # the plain benchmark's conf; the topology run adds its plugin
from scheduler_mixed import worker_pods

from member_agent.scheduler import SessionOptions, build_snapshot, run_cycle
from policies.scheduler_conf import parse_scheduler_conf

TOPOLOGY_CONF = BASE_CONF + """  - name: network-topology-aware
    arguments:
      weight: 10
      hypernode.binpack.resources: nvidia.com/gpu
      hypernode.binpack.resources.nvidia.com/gpu: 2
"""
QUEUES = ("research", "training", "inference", "batch")
LEAF, SPINE = 8, 64
ALLOCATED = "volcano.sh/job-allocated-hypernode"


class Clock:
    def now(self) -> float:
        return 1_780_000_000.0

    def monotonic(self) -> float:
        return time.perf_counter()


def nodes_and_hypernodes(n: int, with_hypernodes: bool) -> list[dict[str, Any]]:
    objs: list[dict[str, Any]] = []
    for i in range(n):
        objs.append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"node-{i:05d}"},
                     "status": {"allocatable": {"cpu": "128", "memory": "1024Gi", "nvidia.com/gpu": "8",
                                                "pods": "110"}}})
    for q, name in enumerate(QUEUES):
        objs.append({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": name},
                     "spec": {"weight": q + 1}})
    if not with_hypernodes:
        return objs

    def hypernode(name: str, tier: int, kind: str, members: list[str]) -> dict[str, Any]:
        return {"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode", "metadata": {"name": name},
                "spec": {"tier": tier, "members": [{"type": kind, "selector": {"exactMatch": {"name": m}}}
                                                   for m in members]}}

    leaves = [f"leaf-{j:04d}" for j in range((n + LEAF - 1) // LEAF)]
    for j, leaf in enumerate(leaves):
        objs.append(hypernode(leaf, 1, "Node", [f"node-{i:05d}" for i in range(j * LEAF, min(n, (j + 1) * LEAF))]))
    per_spine = SPINE // LEAF
    spines = [f"spine-{s:03d}" for s in range((len(leaves) + per_spine - 1) // per_spine)]
    for s, spine in enumerate(spines):
        objs.append(hypernode(spine, 2, "HyperNode", leaves[s * per_spine:(s + 1) * per_spine]))
    objs.append(hypernode("top", 3, "HyperNode", spines))
    return objs


def gangs(pods: int, rng: random.Random, with_topology: bool) -> list[dict[str, Any]]:
    objs: list[dict[str, Any]] = []
    made = j = 0
    while made < pods:
        gpus = rng.choice((1, 2, 4, 8))
        size = min(rng.randint(1, 16), pods - made)  # 8-GPU gangs over 8 pods need a spine
        name = f"job-{j:05d}"
        spec: dict[str, Any] = {"minMember": size, "queue": QUEUES[j % len(QUEUES)]}
        if with_topology:
            kind = j % 3
            fits_a_leaf = size * gpus <= 8 * LEAF
            if kind == 0 and fits_a_leaf:
                spec["networkTopology"] = {"mode": "hard", "highestTierAllowed": 1}
            elif kind in (0, 1):
                spec["networkTopology"] = {"mode": "hard", "highestTierAllowed": 2}
            else:
                spec["networkTopology"] = {"mode": "soft"}
        objs.append({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                     "metadata": {"name": name, "namespace": "bench"}, "spec": spec, "status": {"phase": "Inqueue"}})
        requests = {"cpu": str(8 * gpus), "memory": f"{64 * gpus}Gi", "nvidia.com/gpu": str(gpus)}
        objs.extend(worker_pods(name, size, requests))
        made += size
        j += 1
    return objs


MODES = {"topology": (True, True, TOPOLOGY_CONF), "plugin, no HyperNodes": (False, True, TOPOLOGY_CONF),
         "no topology": (False, False, BASE_CONF)}


def run_one(mode: str, nodes: int, pods: int, seed: int) -> dict[str, Any]:
    with_hypernodes, with_topology, conf = MODES[mode]
    rng = random.Random(seed)
    objects = nodes_and_hypernodes(nodes, with_hypernodes) + gangs(pods, rng, with_topology)
    t0 = time.perf_counter()
    snapshot = build_snapshot(objects)
    build = time.perf_counter() - t0
    cpu0 = time.process_time()
    result = run_cycle(snapshot, parse_scheduler_conf(conf), Clock(), options=SessionOptions())
    cpu = time.process_time() - cpu0
    tiers = Counter(v.get(ALLOCATED, "")[:4] for v in result.pod_group_annotations.values())
    return {"mode": mode, "build": build, "wall": result.session_seconds, "cpu": cpu, "bound": len(result.bindings),
            "pods": pods, "jobs": len(snapshot.jobs), "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "leaf": tiers.get("leaf", 0), "spine": tiers.get("spin", 0), "top": tiers.get("top", 0)}


def main_topology(nodes_list: list[int], pods: int | None, seed: int) -> int:
    for nodes in nodes_list:
        count = pods or 2 * nodes
        for mode in MODES:
            argv = [sys.executable, __file__, mode, str(nodes), str(count), str(seed)]
            out = subprocess.run(argv, check=True, capture_output=True, text=True).stdout
            f = json.loads(out.strip().splitlines()[-1])
            extra = (f"; gangs placed in one leaf {f['leaf']}, one spine {f['spine']}, the top {f['top']}"
                     if mode == "topology" else "")
            print(f"[{nodes} nodes, {count} pods, {f['jobs']} gangs] {mode:22s} snapshot {f['build']:.2f}s  "
                  f"session {f['cpu']:.3f}s CPU ({f['wall']:.3f}s wall)  bound {f['bound']}/{count}  "
                  f"peak RSS {f['rss']:.0f} MiB{extra}", flush=True)
    return 0


if __name__ == "__main__":
    mode_arg, nodes_arg, pods_arg, seed_arg = sys.argv[1:5]
    print(json.dumps(run_one(mode_arg, int(nodes_arg), int(pods_arg), int(seed_arg))))
