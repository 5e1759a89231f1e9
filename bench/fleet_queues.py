"""Fleet admission speed: one fleet session (``FleetQueues.decide``: enqueue, then allocate, in
Volcano's order) over N pending Jobs in Q queues with the fleet total of C member clusters, then the
moves that follow frees (one placed job finishes, the next session runs).

Run: ``python bench/fleet_queues.py [--jobs 10000] [--queues 100] [--clusters 20] [--conf proportion|capacity|hierarchy]``.
Prints figures only (decisions per second: jobs whose verdict a session decided, per second of CPU).
"""

from __future__ import annotations

import argparse
import random
import time

from federation.fleet_queues import FleetConf, FleetJob, FleetQueue, FleetQueues
from policies.resources import ResourceVector

GPU = "nvidia.com/gpu"
CONFS = {
    "proportion": FleetConf(plugin="proportion"),
    "capacity": FleetConf(plugin="capacity"),
    "hierarchy": FleetConf(plugin="capacity", hierarchical=True),
    "proportion+overcommit": FleetConf(plugin="proportion", overcommit_factor=1.2),
}


def vec(gpus: float, cpus: float) -> ResourceVector:
    return ResourceVector({GPU: gpus * 1000, "cpu": cpus * 1000, "memory": cpus * 4 * 2**30})


def build(jobs: int, queues: int, clusters: int, conf: FleetConf, seed: int) -> FleetQueues:
    rng = random.Random(seed)
    fleet = FleetQueues(conf)
    parents = [f"org-{i}" for i in range(max(1, queues // 10))] if conf.hierarchical else []
    specs = [FleetQueue(p, capability=vec(clusters * 64 / len(parents) * 1.5, 1e6)) for p in parents]
    for i in range(queues):
        cap = rng.choice([None, 8, 16, 32, 64, 128])
        specs.append(FleetQueue(f"q{i}", weight=rng.randint(1, 5), priority=rng.choice([0, 0, 0, 1]),
                                parent=parents[i % len(parents)] if parents else None,
                                capability=vec(cap, 1e6) if cap else ResourceVector(),
                                deserved=vec(rng.choice([8, 16, 32]), 64)))
    fleet.set_queues(specs)
    fleet.set_capacity(vec(clusters * 64, clusters * 1024))  # 20 clusters x 8 nodes x 8 GPUs
    for j in range(jobs):
        pods, gpus = rng.choice([(1, 1), (1, 8), (2, 8), (4, 4), (8, 8)])
        need = vec(pods * gpus, pods * 8)
        fleet.add_job(FleetJob(("bench", f"j{j}"), f"q{rng.randrange(queues)}", need, need,
                               priority=rng.choice([0, 0, 100]), created=float(j)))
    return fleet


def run(args: argparse.Namespace, name: str) -> None:
    fleet = build(args.jobs, args.queues, args.clusters, CONFS[name], args.seed)
    started = time.process_time()
    allowed = fleet.decide()
    first = time.process_time() - started
    decided = len(fleet.verdicts)
    frees = 0
    started = time.process_time()
    for key in allowed[: args.frees]:  # each free is an event: one finished job, one session
        fleet.remove_job(key)
        fleet.decide()
        frees += 1
    per_free = (time.process_time() - started) / max(frees, 1)
    print(f"{name:22s} jobs {args.jobs:6d}  queues {args.queues:4d}  clusters {args.clusters:3d}  "
          f"first session {first * 1000:7.1f} ms  ({decided / first:8.0f} decisions/s, {len(allowed)} admitted)  "
          f"session after a free {per_free * 1000:6.1f} ms ({(decided - len(allowed)) / per_free:8.0f} decisions/s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--queues", type=int, default=100)
    parser.add_argument("--clusters", type=int, default=20)
    parser.add_argument("--frees", type=int, default=20, help="sessions after one job finishes, averaged")
    parser.add_argument("--conf", default="all", choices=["all", *CONFS])
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    for name in CONFS if args.conf == "all" else [args.conf]:
        run(args, name)


if __name__ == "__main__":
    main()
