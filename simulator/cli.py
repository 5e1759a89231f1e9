"""``caldera simulate`` (``python -m simulator``): arguments, progress bar, outputs.

    caldera simulate --trace PODS.csv --nodes NODES.csv --mode fgd --scheduler-conf CONF \\
        [--seed S] [--load 1.3] [--batch N] [--compare CONF ...] -o DIR
    caldera simulate --trace FILE --clusters FILE... [--policy PP.yaml] [--scheduler-conf CONF] \\
        [--compare CONF ...] [--period S] [--until S] [--limit N] -o DIR

See docs/simulate.md for the protocol, the outputs and the limits.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any, Sequence

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from member_agent.scheduler.framework.session import SessionOptions
from policies.errors import CalderaError
from policies.scheduler_conf import DEFAULT_CONF, SchedulerConf, parse_scheduler_conf
from simulator.errors import TraceError
from simulator.fgd_mode import FgdRun, run_fgd
from simulator.job_cli import load_trace, run_job_mode
from simulator.job_mode import JobRun
from simulator.job_report import plot_cdfs, plot_utilisation, write_jobs
from simulator.openb import read_nodes, read_pods
from simulator.report import fgd_summary, plot_allocation, write_fgd
from simulator.report_page import report_title, write_comparison_csv, write_report
from simulator.text_table import comparison_table, print_table


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="caldera simulate",
                                description="replay a job trace in virtual time through Caldera's scheduler")
    p.add_argument("--trace", required=True, metavar="FILE", help="the trace (openb pod list csv for --mode fgd)")
    p.add_argument("--nodes", metavar="FILE", help="openb node list csv (the cluster for --mode fgd)")
    p.add_argument("--mode", choices=("fgd", "jobs"),
                   help="fgd: openb pods arrive in order and never leave until the load reaches --load; "
                        "jobs: jobs arrive, run for their duration and leave (default with --clusters)")
    p.add_argument("--scheduler-conf", metavar="CONF", help="volcano-scheduler.conf (default: Volcano's default)")
    p.add_argument("--compare", nargs="+", metavar="CONF", help="run the trace under each conf and print one table")
    p.add_argument("--seed", type=int, default=42, help="chooses the sample of pods (default 42)")
    p.add_argument("--load", type=float, default=1.3, help="arrived GPU request to stop at, × cluster GPUs (1.3)")
    p.add_argument("--batch", type=int, default=50, help="pods arriving per scheduling session (50)")
    p.add_argument("--percentage-nodes-to-find", type=int, default=0, metavar="PCT",
                   help="the scheduler's --percentage-nodes-to-find (0: Volcano's adaptive default)")
    p.add_argument("--skip-bad", action="store_true", help="skip unreadable trace rows (counted in the summary)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--no-wall-clock", action="store_true", help="write wallSeconds as null (byte-identical summary)")
    p.add_argument("--clusters", nargs="+", metavar="FILE", help="cluster layout files (job mode; several: federation)")
    p.add_argument("--policy", metavar="PP.yaml", help="PropagationPolicy dividing jobs over several clusters")
    p.add_argument("--topology", metavar="MODE", default="none",
                   help="every job's networkTopology: none, soft, hard (one cluster) or hard:TIER (job mode)")
    p.add_argument("--topology-slowdown", metavar="TIER=FACTOR,...", default="",
                   help="run time × the factor of the highest tier a job spans; 'fleet=F' when split (job mode)")
    p.add_argument("--period", type=float, default=1.0, metavar="S",
                   help="scheduling period in seconds, arrivals within one are coalesced (job mode, 1)")
    p.add_argument("--coalesce", type=float, metavar="S",
                   help="see arrivals and pod ends on a grid of S seconds (job mode; default: --period)")
    p.add_argument("--until", type=float, metavar="S", help="stop at this simulated second (job mode)")
    p.add_argument("--limit", type=int, metavar="N", help="replay only the first N jobs by arrival (job mode)")
    p.add_argument("-o", "--output", required=True, metavar="DIR", help="directory for summary.json, plots, HTML")
    return p


def _conf(path: str | None) -> SchedulerConf:
    if not path:
        return DEFAULT_CONF
    with open(path, encoding="utf-8") as handle:
        return parse_scheduler_conf(handle.read())


def _run(args: argparse.Namespace, conf_path: str | None, console: Console) -> tuple[FgdRun, dict[str, Any]]:
    nodes = read_nodes(args.nodes)
    pods, bad = read_pods(args.trace, skip_bad=args.skip_bad)
    conf = _conf(conf_path)
    label = os.path.basename(conf_path) if conf_path else "volcano default"
    options = SessionOptions(percentage_nodes_to_find=args.percentage_nodes_to_find)
    with Progress(TextColumn(f"[bold]{label}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console, disable=args.no_progress, transient=False) as progress:
        task = progress.add_task(label, total=None)

        def tick(done: int, total: int) -> None:
            progress.update(task, completed=done, total=total)

        run = run_fgd(nodes, pods, conf, seed=args.seed, load=args.load, batch=args.batch, options=options,
                      progress=tick)
    inputs = {"trace": os.path.basename(args.trace), "nodes": os.path.basename(args.nodes), "seed": args.seed,
              "load": args.load, "batch": args.batch, "schedulerConf": label,
              "percentageNodesToFind": args.percentage_nodes_to_find,
              "badRows": {"count": len(bad), "rows": [b.to_json() for b in bad[:100]]}}
    return run, fgd_summary(run, inputs=inputs, wall_clock=not args.no_wall_clock)


def missing_plotting() -> str | None:
    """Why the run cannot draw its plots, or None: matplotlib is the ``simulate`` extra, not a
    dependency of the federation or the agent, so say so before a replay that would fail at its end."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return ("error: caldera simulate draws its plots with matplotlib, which is not installed: "
                "pip install 'caldera[simulate]' (or pip install 'matplotlib>=3.7,<4')")
    return None


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    missing = missing_plotting()
    if missing:
        print(missing, file=sys.stderr)
        return 2
    console = Console(stderr=True)
    args.mode = args.mode or ("jobs" if args.clusters else "fgd")
    if args.mode == "jobs":
        return job_main(args, console)
    if args.clusters or args.policy:
        print("error: --clusters/--policy belong to the job mode (--mode jobs)", file=sys.stderr)
        return 2
    if args.mode == "fgd" and not args.nodes:
        print("error: --mode fgd needs --nodes NODES.csv (the openb node list)", file=sys.stderr)
        return 2
    if args.batch < 1 or args.load <= 0:
        print("error: --batch must be >= 1 and --load > 0", file=sys.stderr)
        return 2
    confs = args.compare or [args.scheduler_conf]
    results = []
    try:
        for conf_path in confs:
            run, summary = _run(args, conf_path, console)
            out = args.output if len(confs) == 1 else os.path.join(args.output, _slug(conf_path))
            write_fgd(out, run, summary, summary["inputs"]["schedulerConf"])
            results.append((summary["inputs"]["schedulerConf"], run, summary))
    except (TraceError, CalderaError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    summaries = [s for _, _, s in results]
    if len(results) > 1:
        plot = os.path.join(args.output, "allocation.png")
        plot_allocation({label: run.series for label, run, _ in results}, plot)
        write_comparison(args.output, summaries, [plot])
    print_table(comparison_table(summaries, "openb, FGD protocol"))
    return 0


def _slug(path: str | None) -> str:
    return os.path.splitext(os.path.basename(path))[0] if path else "volcano-default"


def job_main(args: argparse.Namespace, console: Console) -> int:
    """The job mode: one run per conf (``--compare``), each under ``DIR/<conf name>/`` when several."""
    if not args.clusters:
        print("error: --mode jobs needs --clusters FILE... (cluster layouts)", file=sys.stderr)
        return 2
    if args.period <= 0 or (args.coalesce is not None and args.coalesce <= 0) or (args.limit is not None and args.limit < 0):
        print("error: --period and --coalesce must be > 0 and --limit >= 0", file=sys.stderr)
        return 2
    if len(args.clusters) > 1 and not args.policy:
        print("error: several --clusters need --policy PP.yaml (how the federation divides a job)", file=sys.stderr)
        return 2
    confs = args.compare or [args.scheduler_conf]
    results: list[tuple[str, JobRun, dict[str, Any]]] = []
    try:
        trace = load_trace(args)
        for conf_path in confs:
            label = os.path.basename(conf_path) if conf_path else "volcano default"
            with Progress(TextColumn(f"[bold]{label}"), BarColumn(), MofNCompleteColumn(), TextColumn("jobs"),
                          TimeElapsedColumn(), console=console, disable=args.no_progress) as progress:
                task = progress.add_task(label, total=len(trace.jobs))
                def tick(done: int, total: int, task: Any = task) -> None:
                    progress.update(task, completed=done, total=total)

                run, summary = run_job_mode(args, trace, _conf(conf_path), label, tick)
            out = args.output if len(confs) == 1 else os.path.join(args.output, _slug(conf_path))
            write_jobs(out, run, summary, label)
            results.append((label, run, summary))
    except (TraceError, CalderaError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    summaries = [s for _, _, s in results]
    if len(results) > 1:
        plots = [os.path.join(args.output, "utilisation.png"), os.path.join(args.output, "cdf.png")]
        plot_utilisation({label: run for label, run, _ in results}, plots[0])
        plot_cdfs({label: run for label, run, _ in results}, plots[1])
        write_comparison(args.output, summaries, plots)
    print_table(comparison_table(summaries, "job trace replay"))
    return 0


def write_comparison(out_dir: str, summaries: list[dict[str, Any]], plots: list[str]) -> None:
    """``--compare``'s own report: ``DIR/comparison.csv`` and ``DIR/index.html`` (per-conf pages stay in ``DIR/<conf>/``)."""
    write_comparison_csv(out_dir, summaries)
    write_report(out_dir, report_title(summaries), summaries, plots)
