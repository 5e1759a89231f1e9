"""Decisions of the scheduler benches' sessions, hashed: a speed change must leave them identical.

Runs the bench workloads for fixed seeds (small enough to finish in a minute on a shared machine)
and prints one SHA-256 per workload over what the session decided: bindings, evictions, pipelined
pods, PodGroup phases and conditions, device allocations, annotations, nominations and where the
next session's node search starts. Run it on the branch before and after a change and compare
the lines (``diff``); any difference is a changed decision.

    python bench/scheduler_digest.py                 # every workload
    python bench/scheduler_digest.py --only mixed    # workloads whose name contains "mixed"
    python bench/scheduler_digest.py --large         # also the 20k-node per-job mix (minutes)
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
from collections.abc import Callable
from typing import Any

from scheduler import CONF, Clock, cluster, jobs
from scheduler_evictions import CONF as EVICTION_CONF
from scheduler_evictions import workload as eviction_workload
from scheduler_mixed import mixed_cluster, mixed_jobs
from scheduler_topology import BASE_CONF, TOPOLOGY_CONF, gangs, nodes_and_hypernodes

from member_agent.scheduler import SessionOptions, build_snapshot, run_cycle
from member_agent.scheduler.framework.result import CycleResult
from policies.scheduler_conf import SchedulerConf, parse_scheduler_conf

Workload = Callable[[], tuple[list[dict[str, Any]], SchedulerConf, SessionOptions]]


def mixed(nodes: int, pods: int, seed: int, per_job: bool, options: SessionOptions = SessionOptions()) -> Workload:
    return lambda: (mixed_cluster(nodes) + mixed_jobs(pods, random.Random(seed), per_job), CONF, options)


def older(nodes: int, pods: int, seed: int, per_job: bool) -> Workload:
    def build() -> tuple[list[dict[str, Any]], SchedulerConf, SessionOptions]:
        rng = random.Random(seed)
        return cluster(nodes, rng) + jobs(pods, rng, per_job), CONF, SessionOptions()
    return build


def topology(nodes: int, pods: int, seed: int, with_hypernodes: bool) -> Workload:
    conf = parse_scheduler_conf(TOPOLOGY_CONF if with_hypernodes else BASE_CONF)
    return lambda: (nodes_and_hypernodes(nodes, with_hypernodes) + gangs(pods, random.Random(seed), with_hypernodes),
                    conf, SessionOptions())


def evictions(kind: str, nodes: int, seed: int) -> Workload:
    return lambda: (eviction_workload(kind, nodes, nodes // 5, random.Random(seed)), EVICTION_CONF,
                    SessionOptions(verbosity=0))


WORKLOADS: dict[str, Workload] = {
    "mixed 5k templates seed 7": mixed(5000, 10000, 7, False),
    "mixed 5k templates seed 11": mixed(5000, 10000, 11, False),
    "mixed 2k templates, over-full (6k pods) seed 3": mixed(2000, 6000, 3, False),
    "mixed 5k templates seed 7, all nodes searched": mixed(5000, 10000, 7, False,
                                                           SessionOptions(percentage_nodes_to_find=100)),
    "mixed 3k per-job seed 7": mixed(3000, 6000, 7, True),
    "older 5k templates seed 7": older(5000, 10000, 7, False),
    "older 2k per-job seed 5": older(2000, 4000, 5, True),
    "topology 1k hypernodes seed 7": topology(1000, 2000, 7, True),
    "topology 1k no topology seed 7": topology(1000, 2000, 7, False),
    "preempt 2k seed 7": evictions("preempt", 2000, 7),
    "reclaim 2k seed 7": evictions("reclaim", 2000, 7),
}
LARGE: dict[str, Workload] = {"mixed 20k per-job seed 7": mixed(20000, 40000, 7, True)}


def decisions(result: CycleResult) -> dict[str, Any]:
    """Everything the session decided, without its timing."""
    out = result.to_json()
    del out["sessionSeconds"]
    out["conditions"] = {k: [{f: v for f, v in c.items() if f != "lastTransitionTime"} for c in cs]
                         for k, cs in sorted(result.conditions.items())}
    out["cursor"] = result.last_processed_node_index
    return out


def digest(build: Workload) -> tuple[str, int]:
    objects, conf, options = build()
    result = run_cycle(build_snapshot(objects), conf, Clock(), options=options)
    text = json.dumps(decisions(result), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16], len(result.bindings)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", help="run only workloads whose name contains this")
    parser.add_argument("--large", action="store_true", help="also the 20k-node per-job mix")
    args = parser.parse_args(argv)
    chosen = {**WORKLOADS, **(LARGE if args.large else {})}
    for name, build in chosen.items():
        if args.only and args.only not in name:
            continue
        sha, bound = digest(build)
        print(f"{sha}  {name} ({bound} bound)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
