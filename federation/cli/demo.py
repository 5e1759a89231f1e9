"""``caldera demo``: the whole system on this machine, driven by the seed's jobs (docs/demo.md).

Starts ``caldera serve`` and one sim ``caldera agent`` per member cluster as real processes on
loopback, applies the seed objects, shows progress until every job reaches its final phase (or
``--timeout``), prints where and how fast each job ran, and stops everything. Exit 0 only when
every job reached its expected phase.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from federation.demo.manifests import NAMESPACE, TERMINAL_PHASES, DemoPlan, default_clusters, demo_plan, dump
from federation.demo.processes import StartupError, System, free_port

if TYPE_CHECKING:
    from rich.console import Console

    from federation.client import ResourceClient
    from federation.demo.observe import Snapshot

NAME = "demo"
HELP = "run a federation and sim member agents on this machine and drive the seed's jobs through them"
POLL_SECONDS = 0.5
PLAIN_EVERY = 5.0  # the clusters' line at least this often in plain mode, even when nothing changed


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--timeout", type=float, default=180.0,
                        help="seconds for every job to reach its final phase (default 180)")
    parser.add_argument("--speed", type=float, default=10.0,
                        help="simulated pods start and run this many times faster (default 10)")
    parser.add_argument("--clusters", type=Path, default=None, metavar="FILE",
                        help="member clusters: one sim cluster file, or a YAML list of {name, file} "
                             "(default: the seed's cluster-a 8x8 A100 and cluster-b 16x8 H100)")
    parser.add_argument("--data-dir", type=Path, default=None, metavar="DIR",
                        help="keep the store, kubeconfigs and logs here (default: a temporary directory, "
                             "removed after a successful run)")
    parser.add_argument("--keep", action="store_true",
                        help="leave everything running at the end and print the kubeconfig path (Ctrl-C stops)")
    parser.add_argument("--prometheus", action="store_true",
                        help="also run a real Prometheus (needs the 'prometheus' binary) scraping the federation "
                             "and every agent with deploy/prometheus's rules; prints its URL")
    parser.add_argument("--plain", action="store_true",
                        help="plain progress lines even on a terminal (the default when stdout is not a TTY)")


def _on_sigterm(signum: int, frame: Any) -> None:
    """SIGTERM leaves through Ctrl-C's path. An exception raised here could land inside one of asyncio's own
    callbacks, which logs it and runs on; SIGINT is what ``asyncio.run`` turns into cancelling the demo."""
    signal.raise_signal(signal.SIGINT)


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from federation.demo.manifests import clusters_from_file

    console = Console(highlight=False)
    plain = args.plain or not console.is_terminal
    if not console.is_terminal:
        # logs and CI: wide enough for the summary ($COLUMNS wins)
        console = Console(highlight=False, width=int(os.environ.get("COLUMNS") or 0) or 140)
    if not args.speed > 0 or not args.timeout > 0:
        print("error: --speed and --timeout must be positive", file=sys.stderr)
        return 2
    try:
        clusters = clusters_from_file(args.clusters) if args.clusters else default_clusters()
        plan = demo_plan(cluster_names=[c.name for c in clusters])
    except (ValueError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.prometheus and shutil.which("prometheus") is None:
        print("error: --prometheus needs the 'prometheus' binary on PATH (Debian package 'prometheus')",
              file=sys.stderr)
        return 2
    temporary = args.data_dir is None
    data_dir = Path(tempfile.mkdtemp(prefix="caldera-demo-")) if temporary else args.data_dir
    system = System(data_dir, clusters, speed=args.speed)
    prometheus = None
    if args.prometheus:
        from federation.demo.prometheus import PrometheusProcess, secure_agent_metrics

        secure_agent_metrics(clusters, data_dir)  # HTTPS + token; restarted agents keep their scrape address
        prometheus = PrometheusProcess(system, interval="5s", port=free_port())
        system.serve_args.extend(["--prometheus-url", prometheus.url])  # the dashboard's GPU chart reads it
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    previous_int = signal.signal(signal.SIGINT, signal.default_int_handler)  # even if started with SIGINT ignored
    code = 1
    try:
        started = time.monotonic()
        console.print(f"caldera demo: federation + {len(clusters)} sim agents "
                      f"({', '.join(c.name for c in clusters)}), speed x{args.speed:g}, data in {data_dir}")
        system.start()
        console.print(f"federation {system.url}, agents started in {time.monotonic() - started:.1f}s")
        console.print(f"dashboard {system.url}/ui (sign in with the token in {write_viewer_token(system)})")
        if prometheus is not None:
            prometheus.start()
            console.print(f"prometheus {prometheus.url} (scraping the federation and {len(clusters)} agents; "
                          f"config {prometheus.home / 'prometheus.yml'})")
        (data_dir / "demo-manifests.yaml").write_text(dump(plan))
        for note in plan.notes:
            console.print(f"note: {note}")
        code = asyncio.run(drive(system, plan, args, console, plain, started))
        if args.keep:
            keep_running(system, console)  # until Ctrl-C / SIGTERM: then the run's own exit code
        return code
    except KeyboardInterrupt:
        console.print("interrupted: stopping the federation and the agents")
        code = 130
        return code
    except StartupError as exc:
        console.print(f"error: {exc}")
        return 1
    except Exception:  # noqa: BLE001 - say what broke, then still stop every process (finally)
        console.print_exception()
        console.print("error: the demo itself failed (traceback above)")
        return 1
    finally:
        if prometheus is not None:
            prometheus.stop()
        stopped = system.stop()
        signal.signal(signal.SIGTERM, previous)
        signal.signal(signal.SIGINT, previous_int)
        unclean = {name: rc for name, rc in stopped.items() if rc not in (0, None, -signal.SIGTERM)}
        if unclean:
            console.print(f"warning: exit codes at shutdown: {unclean}")
        if temporary and code == 0:
            shutil.rmtree(data_dir, ignore_errors=True)
        elif code != 0:
            console.print(f"logs: {system.log_dir}")


def write_viewer_token(system: System) -> Path:
    """A viewer token for the dashboard, in a file only its owner reads (never printed)."""
    from federation.demo.prometheus import mint_viewer_token

    path = system.data_dir / "viewer.token"
    if not path.exists():
        from federation import private_files

        private_files.write_text(path, mint_viewer_token(system) + "\n")  # 0600 from creation
    return path


def keep_running(system: System, console: "Console") -> None:
    console.print(f"\nthe system keeps running. In another shell:\n"
                  f"  export KUBECONFIG={system.kubeconfig}\n"
                  f"  caldera get vcjob   |   kubectl get clusters   |   caldera describe job gpu-dist-training\n"
                  f"  kubectl get pods -A -o wide   |   caldera logs gpu-dist-training --task worker --index 3\n"
                  f"press Ctrl-C to stop everything")
    try:
        while all(p.alive for p in system.processes()):
            time.sleep(1.0)
    except KeyboardInterrupt:
        console.print("stopping the federation and the agents")
        return
    dead = [p.name for p in system.processes() if not p.alive]
    console.print(f"stopped: {', '.join(dead)} exited")


async def drive(system: System, plan: DemoPlan, args: argparse.Namespace, console: "Console", plain: bool,
                started: float) -> int:
    from federation.cli.apply import apply_one
    from federation.client import ResourceClient, api_client_from_dict, load_kubeconfig
    from federation.demo.observe import Timeline, wait_clusters_ready

    deadline = started + args.timeout
    async with api_client_from_dict(load_kubeconfig(system.kubeconfig)) as api:
        rc = ResourceClient(api, timeout=15)
        names = [c.name for c in system.clusters]
        try:
            ready = await wait_clusters_ready(rc, names, max(1.0, deadline - time.monotonic()))
        except TimeoutError as exc:
            console.print(f"FAILED: {exc}")
            return 1
        console.print("clusters Ready: " + ", ".join(f"{c.name} ({c.gpus_total} GPUs)" for c in ready))
        timeline = Timeline()
        apply_args = argparse.Namespace(namespace=NAMESPACE)
        for manifest in plan.manifests:
            line = await apply_one(rc, manifest, apply_args)
            key = (manifest["kind"], manifest["metadata"]["name"])
            if key in plan.expected:
                timeline.submitted(key, time.time())
            if plain:
                console.print(line)
        console.print(f"applied {len(plan.manifests)} objects; waiting for {len(plan.expected)} jobs "
                      f"(timeout {args.timeout:.0f}s)")
        code, reason, snap = await follow(rc, system, plan, timeline, console, plain, started, deadline, args.timeout)
    from federation.demo.render import summary_table

    console.print(summary_table(timeline, snap, plan.expected))
    total = time.monotonic() - started
    if code == 0:
        console.print(f"OK: every job reached its final phase in {total:.1f}s")
    else:
        console.print(f"FAILED after {total:.1f}s: {reason}")
    return code


async def follow(rc: "ResourceClient", system: System, plan: DemoPlan, timeline: Any, console: "Console",
                 plain: bool, started: float, deadline: float, timeout: float) -> tuple[int, str, "Snapshot"]:
    """Poll until done, a wrong terminal phase, a dead process, or the deadline; show progress meanwhile."""
    import aiohttp
    from kubernetes_asyncio import client as k8s
    from rich.live import Live

    from federation.demo.observe import snapshot
    from federation.demo.render import PlainLog, live_view

    live = None if plain else Live(console=console, refresh_per_second=4, transient=False)
    log = PlainLog(PLAIN_EVERY)
    if live is not None:
        live.start()
    try:
        snap = None
        while True:
            try:
                snap = await snapshot(rc, NAMESPACE)
            except (k8s.ApiException, aiohttp.ClientError, OSError) as exc:  # one failed poll is not fatal
                if snap is None or time.monotonic() > deadline:
                    raise
                console.print(f"warning: polling the API failed ({exc.__class__.__name__}); retrying")
                await asyncio.sleep(POLL_SECONDS)
                continue
            timeline.observe(snap, TERMINAL_PHASES)
            elapsed = time.monotonic() - started
            if live is not None:
                live.update(live_view(snap, plan.expected, elapsed, timeout))
            else:
                for line in log.lines(snap, plan.expected, elapsed):
                    console.print(line, soft_wrap=True)
            code, reason = verdict(snap, plan, system)
            if code is not None:
                return code, reason, snap
            if time.monotonic() > deadline:
                return 1, f"timeout after {timeout:.0f}s: {waiting_for(snap, plan)}", snap
            await asyncio.sleep(POLL_SECONDS)
    finally:
        if live is not None:
            live.stop()


def verdict(snap: "Snapshot", plan: DemoPlan, system: System) -> tuple[int | None, str]:
    for proc in system.processes():
        if not proc.alive:
            return 1, f"{proc.name} exited unexpectedly:\n{proc.tail()}"
    wrong = [f"{name} is {snap.jobs[(kind, name)].phase} (expected {want})"
             + (f": {snap.jobs[(kind, name)].reason}" if snap.jobs[(kind, name)].reason else "")
             for (kind, name), want in plan.expected.items()
             if (kind, name) in snap.jobs and snap.jobs[(kind, name)].phase in TERMINAL_PHASES
             and snap.jobs[(kind, name)].phase != want]
    if wrong:
        return 1, "; ".join(wrong)
    if all(key in snap.jobs and snap.jobs[key].phase == want for key, want in plan.expected.items()):
        return 0, ""
    return None, ""


def waiting_for(snap: "Snapshot", plan: DemoPlan) -> str:
    """Which jobs were not done, and a hint when nothing was ever placed."""
    parts = []
    for (kind, name), want in plan.expected.items():
        view = snap.jobs.get((kind, name))
        if view is None:
            parts.append(f"{name} not found")
        elif view.phase != want:
            parts.append(f"{name} {view.phase} (want {want})" + (f": {view.reason}" if view.reason else ""))
    if not any(v.shares for v in snap.jobs.values()):
        parts.append("no job was ever placed: the federation created no Works "
                     "(are the placement/dispatch controllers in federation.controllers.CONTROLLERS?)")
    return "; ".join(parts)
