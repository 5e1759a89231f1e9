"""``caldera schedule``: dry-run one Volcano scheduling session on a cluster-state file.

    caldera schedule -f STATE.yaml [-f MORE.yaml] [-o json|table] [--conf FILE] [-v N]
        [--percentage-nodes-to-find PCT] [--minimum-feasible-nodes N] [--minimum-percentage-nodes-to-find PCT]

STATE holds Kubernetes objects as ``kubectl get -o yaml`` prints them (Nodes, Pods,
PodGroups, Queues, PriorityClasses and optionally the scheduler ConfigMap). Nothing is
changed anywhere: the command prints what one session would bind, evict and pipeline, and
the PodGroup phases (docs/scheduler.md).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from typing import Any, TextIO

from member_agent import node_search_flags
from member_agent.cluster.clock import RealClock
from member_agent.scheduler import SessionOptions, run_cycle
from member_agent.scheduler.framework.result import CycleResult
from member_agent.scheduler.state import State, load_documents, state_from_documents
from member_agent.session_gc import relaxed_gc
from policies.errors import CalderaError
from policies.scheduler_conf import parse_scheduler_conf

NAME = "schedule"
HELP = "dry-run one scheduling session on a cluster-state file"


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-f", "--filename", action="append", required=True, metavar="STATE",
                        help="multi-document YAML of Nodes, Pods, PodGroups, Queues, PriorityClasses "
                             "and the scheduler ConfigMap ('-' reads stdin; repeatable)")
    parser.add_argument("-o", "--output", choices=("json", "table"), default="json",
                        help="json: bindings/evictions/pipelined/podGroups/sessionSeconds; table: per-job summary")
    parser.add_argument("--conf", metavar="FILE",
                        help="volcano-scheduler.conf to use instead of the ConfigMap in STATE (or the default)")
    parser.add_argument("-v", "--verbosity", type=int, default=0, metavar="N",
                        help="klog-style verbosity of the scheduler log on stderr (3: decisions, 5: everything)")
    node_search_flags.add_flags(parser)


def _read(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def load_state(paths: list[str], conf_path: str | None) -> State:
    docs: list[dict[str, Any]] = []
    for path in paths:
        docs.extend(load_documents(_read(path), path))
    conf = parse_scheduler_conf(_read(conf_path)) if conf_path else None
    return state_from_documents(docs, conf, conf_path or "")


def print_table(result: CycleResult, state: State, out: TextIO) -> None:
    snapshot = state.snapshot
    out.write(f"Session {result.session_uid}: {len(snapshot.nodes)} nodes, {len(snapshot.jobs)} jobs, "
              f"conf from {state.conf_source}; actions {', '.join(state.conf.actions)}\n")
    rows = [("JOB", "QUEUE", "PHASE", "MIN", "BOUND", "PIPELINED", "PENDING", "REASON")]
    for key in sorted(result.jobs):
        r = result.jobs[key]
        rows.append((key, r.queue, r.phase, str(r.min_available), f"{r.bound}/{r.tasks}", str(r.pipelined),
                     str(r.pending), r.reason or "-"))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    for row in rows:
        out.write("  ".join(cell.ljust(w) for cell, w in zip(row[:-1], widths, strict=True)) + "  " + row[-1] + "\n")
    out.write(f"{len(result.bindings)} binding(s), {len(result.evictions)} eviction(s), "
              f"{sum(len(v) for v in result.pipelined.values())} pipelined; {result.session_seconds:.3f}s\n")
    for line in eviction_lines(result) + device_lines(result):
        out.write(line + "\n")
    for problem in result.problems:
        out.write(f"problem: {problem}\n")
    for warning in result.warnings:
        out.write(f"warning: {warning}\n")


def eviction_lines(result: CycleResult) -> list[str]:
    """``preempt: evicted team-b/job-x-worker-3 (priority 10 < 1000) for ai-training/critical-training``."""
    lines = []
    for pod in sorted(result.evictions):
        reason = result.eviction_reasons.get(pod, "")
        action, sep, rest = reason.partition(": evicted")
        lines.append(f"{action}: evicted {pod}{rest}" if sep else f"evicted {pod}: {reason or 'no reason given'}")
    return lines


def device_lines(result: CycleResult) -> list[str]:
    """``gpus default/infer-0 on n1: 7`` for every pod bound this session with devices."""
    lines = []
    for pod, devices in sorted(result.device_allocations.items()):
        node = result.bindings.get(pod, "?")
        parts = [f"{kind} {','.join(str(i) for i in ids)}" for kind, ids in sorted(devices.items()) if ids]
        lines.append(f"devices {pod} on {node}: {'; '.join(parts)}")
    return lines


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.INFO - max(0, args.verbosity), format="%(message)s", stream=sys.stderr)
    try:
        state = load_state(args.filename, args.conf)
        options = node_search_flags.session_options(args, SessionOptions(verbosity=max(0, args.verbosity)))
        with relaxed_gc():  # as the agent runs its sessions
            result = run_cycle(state.snapshot, state.conf, RealClock(), options=options)
    except (CalderaError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if args.output == "table":
        print_table(result, state, sys.stdout)
    else:
        json.dump(result.to_json(), sys.stdout, indent=2)
        sys.stdout.write("\n")
        for problem in result.problems:
            print(f"problem: {problem}", file=sys.stderr)
    return 0
