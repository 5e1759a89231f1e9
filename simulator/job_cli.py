"""``caldera simulate --trace FILE --clusters FILE... [--policy PP.yaml]``: the job mode's command.

Reads the trace (any format of :func:`~simulator.trace_formats.read_trace`) and the cluster files
(the sim layouts ``caldera agent --sim`` reads), builds one :class:`~simulator.member.Member` per
cluster, divides each job (one cluster: whole; several: the federation's placement under
``--policy``), replays, and writes the outputs of :mod:`simulator.job_report`.
"""

from __future__ import annotations

import argparse
import os
from typing import Any, Callable, Optional

from member_agent.scheduler.framework.session import SessionOptions
from policies.cluster_layout import load_cluster_file
from policies.scheduler_conf import SchedulerConf
from simulator.clock import VirtualClock
from simulator.job_mode import EPOCH, Divider, JobRun, Releaser, run_jobs, single_cluster
from simulator.job_report import job_summary
from simulator.member import Member
from simulator.topology import TopologyReplay, parse_mode, parse_slowdown
from simulator.trace import Trace, priority_class_name
from simulator.trace_formats import read_trace


def load_trace(args: argparse.Namespace) -> Trace:
    trace = read_trace(args.trace, skip_bad=args.skip_bad)
    if args.limit is not None:
        trace.jobs = trace.jobs[: args.limit]
    return trace


def build_members(paths: list[str], trace: Trace, conf: SchedulerConf, clock: VirtualClock,
                  options: SessionOptions) -> list[Member]:
    queues = tuple(sorted({j.queue for j in trace.jobs} | {"default"}))
    classes = {priority_class_name(j.priority): j.priority for j in trace.jobs if j.priority is not None}
    members = []
    for index, path in enumerate(paths):
        layout = load_cluster_file(path)
        name = layout.name or f"cluster-{index + 1}"
        if any(m.name == name for m in members):
            name = f"{name}-{index + 1}"  # the same file twice: two clusters of that layout
        members.append(Member(name, layout.nodes, conf, clock, options=options, queues=queues,
                              priority_classes=classes, hyper_nodes=tuple(layout.hyper_nodes)))
    return members


def topology_replay(args: argparse.Namespace, members: list[Member]) -> Optional[TopologyReplay]:
    """The tiers jobs span and their slowdown, when a cluster has HyperNodes or a topology flag is given."""
    mode = parse_mode(getattr(args, "topology", None))
    slowdown = parse_slowdown(getattr(args, "topology_slowdown", None) or "")
    if mode is None and not slowdown and not any(m.hyper_nodes for m in members):
        return None
    replay = TopologyReplay({m.name: (m.nodes, m.hyper_nodes) for m in members}, slowdown, mode)
    for member in members:
        member.on_bind = replay.on_bind
    return replay


def with_network_topology(divide: Divider, topology: TopologyReplay) -> Divider:
    """Every job's manifest carries the ``--topology`` networkTopology before it is divided."""

    def divide_with(job: Any, manifest: dict) -> Any:
        return divide(job, topology.with_topology(manifest))

    return divide_with


def run_job_mode(args: argparse.Namespace, trace: Trace, conf: SchedulerConf, label: str,
                 progress: Optional[Callable[[int, int], None]] = None) -> tuple[JobRun, dict[str, Any]]:
    clock = VirtualClock(EPOCH)
    options = SessionOptions(percentage_nodes_to_find=args.percentage_nodes_to_find)
    members = build_members(args.clusters, trace, conf, clock, options)
    topology = topology_replay(args, members)
    divide: Divider
    release: Optional[Releaser] = None
    federation = None
    if len(members) == 1 and not args.policy:
        divide = single_cluster(members[0])
    else:
        from simulator.federated import Federation  # the federation's placement, only when several clusters

        federation = Federation(members, args.policy, clock)
        divide, release = federation.divide, federation.release
    if topology is not None:
        divide = with_network_topology(divide, topology)
    run = run_jobs(trace.jobs, members, divide, clock, period=args.period, coalesce=args.coalesce,
                   until=args.until, release=release,
                   progress=progress)
    if federation is not None:
        run.cross_cluster_jobs = federation.cross_cluster
    if topology is not None:
        run.topology = topology.summary(run.jobs)
    inputs = {"trace": os.path.basename(args.trace), "clusters": [os.path.basename(c) for c in args.clusters],
              "clusterNames": [m.name for m in members],
              "policy": os.path.basename(args.policy) if args.policy else None, "schedulerConf": label,
              "seed": args.seed, "period": args.period, "coalesce": args.coalesce, "until": args.until, "limit": args.limit,
              "percentageNodesToFind": args.percentage_nodes_to_find,
              "badRows": {"count": len(trace.bad), "rows": [b.to_json() for b in trace.bad[:100]]}}
    return run, job_summary(run, inputs=inputs, wall_clock=not args.no_wall_clock)
