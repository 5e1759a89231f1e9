"""Digests of what topology sessions decide, to show a speed change keeps every decision.

    python bench/topology_decisions.py            # prints one sha256 line per workload
    python bench/topology_decisions.py --check    # and compares with bench/data/topology-decisions.txt
    python bench/topology_decisions.py > a.txt    # before a change; after it: diff a.txt <(...)

Each workload is ``bench/scheduler_topology.py``'s cluster and gangs (fixed seeds) in one of its
modes, run through one session, then (``second``) a second session on the same cluster after the
first one's pods run, a quarter of them Terminating (releasing: pipelined placements, partly
full HyperNodes) and a fresh set of gangs pending. The digest covers the bindings, pipelined
pods, PodGroup phases and annotations (the allocated HyperNode) and each job's reason.
"""

from __future__ import annotations

import hashlib
import json
import random
import sys
from pathlib import Path
from typing import Any

from scheduler_topology import MODES, Clock, gangs, nodes_and_hypernodes

from member_agent.scheduler import SessionOptions, build_snapshot, run_cycle
from member_agent.scheduler.framework.result import CycleResult
from policies.scheduler_conf import parse_scheduler_conf

#: (mode, nodes, pods, seed, second session)
WORKLOADS = (("topology", 5000, 10000, 7, False), ("topology", 1000, 1500, 3, True),
             ("topology", 600, 2600, 11, False), ("topology", 400, 500, 5, True),
             ("plugin, no HyperNodes", 1000, 2000, 7, True), ("no topology", 1000, 2000, 7, True))


def digest(result: CycleResult) -> str:
    decided = {"bindings": sorted(result.bindings.items()), "pipelined": sorted(result.pipelined.items()),
               "phases": sorted(result.pod_groups.items()),
               "annotations": sorted((k, sorted(v.items())) for k, v in result.pod_group_annotations.items()),
               "reasons": sorted((k, r.reason, r.message) for k, r in result.jobs.items()),
               "evictions": sorted(result.evictions), "nominations": sorted(result.nominations.items())}
    return hashlib.sha256(json.dumps(decided).encode()).hexdigest()[:16]


def second_objects(objects: list[dict[str, Any]], result: CycleResult, rng: random.Random,
                   pods: int, with_topology: bool) -> list[dict[str, Any]]:
    """The cluster after ``result``: bound pods Running (every fourth Terminating), its gangs
    Running, the unplaced gangs dropped, and new pending gangs (renamed ``next-``)."""
    out: list[dict[str, Any]] = []
    running_groups = {key.split("/", 1)[1] for key, phase in result.pod_groups.items() if phase == "Running"}
    for k, obj in enumerate(objects):
        kind, meta = obj["kind"], obj.get("metadata") or {}
        key = f"{meta.get('namespace')}/{meta.get('name')}"
        if kind == "Pod":
            node = result.bindings.get(key)
            if node is None:
                continue
            pod = {**obj, "spec": {**obj["spec"], "nodeName": node}, "status": {"phase": "Running"}}
            if k % 4 == 0:
                pod["metadata"] = {**meta, "deletionTimestamp": "2026-01-01T00:00:00Z"}
            out.append(pod)
        elif kind == "PodGroup":
            if meta.get("name") in running_groups:
                out.append({**obj, "status": {"phase": "Running"}})
        else:
            out.append(obj)
    for obj in gangs(pods, rng, with_topology):
        out.append(json.loads(json.dumps(obj).replace('"job-', '"next-')))
    return out


def run(mode: str, nodes: int, pods: int, seed: int, second: bool) -> list[str]:
    with_hypernodes, with_topology, conf_text = MODES[mode]
    conf = parse_scheduler_conf(conf_text)
    rng = random.Random(seed)
    objects = nodes_and_hypernodes(nodes, with_hypernodes) + gangs(pods, rng, with_topology)
    result = run_cycle(build_snapshot(objects), conf, Clock(), options=SessionOptions())
    lines = [f"{mode} {nodes} nodes {pods} pods seed {seed}: {digest(result)} (bound {len(result.bindings)}, "
             f"pipelined {sum(len(v) for v in result.pipelined.values())})"]
    if second:
        objects = second_objects(objects, result, rng, pods, with_topology)
        result = run_cycle(build_snapshot(objects), conf, Clock(), options=SessionOptions())
        lines.append(f"  second session: {digest(result)} (bound {len(result.bindings)}, "
                     f"pipelined {sum(len(v) for v in result.pipelined.values())})")
    return lines


EXPECTED = Path(__file__).parent / "data" / "topology-decisions.txt"


def main(argv: list[str]) -> int:
    lines = []
    for workload in WORKLOADS:
        lines += run(*workload)
        print("\n".join(lines[-2:] if workload[-1] else lines[-1:]), flush=True)
    if "--check" not in argv:
        return 0
    expected = EXPECTED.read_text().splitlines()
    if lines != expected:
        print(f"decisions differ from {EXPECTED}:", *(f"  want {w}\n  got  {g}" for w, g in
                                                      zip(expected, lines, strict=False) if w != g), sep="\n")
        return 1
    print(f"decisions as in {EXPECTED.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
