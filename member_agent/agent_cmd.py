"""``caldera agent``: run the member-cluster agent (docs/agent.md)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ctypes
import importlib
import logging
import os
import signal
import ssl
import sys
import types
from typing import TYPE_CHECKING, Any, Optional

from member_agent import node_search_flags
from member_agent.agent import Agent, AgentOptions
from member_agent.cluster.clock import RealClock
from member_agent.cluster.gateway import ClusterGateway
from member_agent.cluster.sim import SimCluster, SimGateway
from member_agent.cluster.sim_kubelet import KubeletOptions
from member_agent.fencing import Fence
from member_agent.log_shipper import LogShipper
from member_agent.member_report import MemberReporter
from member_agent.sync import FederationSync
from policies.cluster_layout import load_cluster_file
from policies.cluster_report import SIM_KUBERNETES_VERSION
from policies.errors import CalderaError

if TYPE_CHECKING:  # aiohttp.web is imported by serve(), after run() told mimetypes to skip the system files
    from aiohttp import web

NAME = "agent"
HELP = "run the member-cluster agent (scheduler, job controller, sync with the federation)"
log = logging.getLogger("caldera.agent")


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cluster", required=True, help="member cluster name (Cluster object, karmada-es-<name>)")
    parser.add_argument("--kubeconfig", required=True,
                        help="kubeconfig of the federation API (an agent token); with several clusters listed, "
                             "the agent fails over between them")
    parser.add_argument("--server", action="append", default=[], metavar="URL",
                        help="a federation API replica, with the kubeconfig's credentials (repeatable: the agent "
                             "moves to the next with backoff when one fails)")
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--sim", metavar="CLUSTER.yaml", help="simulate the member cluster from a cluster file")
    target.add_argument("--member-kubeconfig", metavar="FILE", help="kubeconfig of a real member cluster API server")
    parser.add_argument("--scheduler-conf", metavar="FILE",
                        help="volcano-scheduler.conf (YAML; reloaded when it changes); default: Volcano's built-in")
    parser.add_argument("--speed", type=float, default=1.0,
                        help="simulated pods run this many times faster (start delay, duration, grace)")
    parser.add_argument("--schedule-period", type=float, default=1.0,
                        help="seconds between scheduling sessions while work is pending; a change (new pods, an "
                             "enqueued PodGroup, freed capacity) starts a session at once")
    parser.add_argument("--listen", default="127.0.0.1:8090",
                        help="HOST:PORT for /healthz, /readyz, /metrics, /status (port 0: any free port)")
    parser.add_argument("--metrics-bind-address", metavar="HOST:PORT",
                        help="also serve /metrics over HTTPS here, each scrape's bearer token checked by the "
                             "federation (a viewer token suffices); /metrics then leaves --listen. Needs "
                             "--tls-cert-file and --tls-private-key-file")
    parser.add_argument("--tls-cert-file", metavar="FILE", help="PEM certificate of --metrics-bind-address")
    parser.add_argument("--tls-private-key-file", metavar="FILE", help="PEM private key of --metrics-bind-address")
    parser.add_argument("--start-delay", type=float, default=1.0, help="sim: seconds from bind to Running")
    parser.add_argument("--default-duration", type=float, default=30.0,
                        help="sim: seconds a pod runs without a caldera.io/sim-duration annotation")
    parser.add_argument("--lease-period", type=float, default=10.0, help="seconds between Lease renewals")
    parser.add_argument("--status-period", type=float, default=0.5,
                        help="Cluster status reports come at most this often: a change after a quiet spell is "
                             "reported at once (once its burst settled, 50 ms), one report covers a burst; "
                             "unchanged status is re-sent every 30 s")
    parser.add_argument("--hypernode-label-keys", default="", metavar="KEY,KEY",
                        help="build HyperNodes from these node label keys, from the highest network domain down, "
                             "as Volcano's label discovery lists them (docs/topology.md)")
    parser.add_argument("--hypernode-period", type=float, default=30.0,
                        help="seconds between reads of the member's HyperNodes and label discovery")
    parser.add_argument("--stand-in-scheduler", action="store_true",
                        help="use the agent's minimal first-fit gang scheduler instead of the session scheduler")
    parser.add_argument("--no-report-pods", dest="report_pods", action="store_false",
                        help="do not report pods and PodGroups to the federation (kubectl get pods and kubectl logs "
                             "at the federation then show nothing of this cluster; docs/protocol.md 'Member pods')")
    parser.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    parser.add_argument("--fence-after", type=float, default=None, metavar="SECONDS",
                        help="stop re-placeable shares after this long without a Lease renewal (default: derived "
                             "from the federation's graces, lease + failover - termination grace - margin; "
                             "a value above the derived one is not used)")
    parser.add_argument("--fence-termination-grace", type=int, default=None, metavar="SECONDS",
                        help="grace period of the pods a fence deletes (default: the federation's "
                             "--pod-termination-grace, 30)")
    parser.add_argument("--no-self-fence", action="store_true",
                        help="never stop shares when cut off from the federation (the federation reports the "
                             "cluster's fence as unsafe: a partition can then run a job twice)")
    node_search_flags.add_flags(parser)
    from member_agent.leader import add_flags

    add_flags(parser)


def _host_port(text: str, flag: str = "--listen") -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit():
        raise CalderaError(f"{flag} must be HOST:PORT, got {text!r}")
    return host, int(port)


def _check_metrics_flags(args: argparse.Namespace) -> None:
    tls = (args.tls_cert_file, args.tls_private_key_file)
    if args.metrics_bind_address is None:
        if any(tls):
            raise CalderaError("--tls-cert-file and --tls-private-key-file serve --metrics-bind-address; give it too")
        return
    _host_port(args.metrics_bind_address, "--metrics-bind-address")
    if not all(tls):
        raise CalderaError("--metrics-bind-address serves HTTPS only: give --tls-cert-file and "
                           "--tls-private-key-file (PEM files)")


async def _start_site(runner: web.AppRunner, address: str, flag: str,
                      context: Optional[ssl.SSLContext] = None) -> int:
    from aiohttp import web

    host, port = _host_port(address, flag)
    site = web.TCPSite(runner, host, port, ssl_context=context)
    try:
        await site.start()
    except OSError as exc:  # the port is taken, or the address is not this machine's
        reason = os.strerror(exc.errno) if exc.errno else str(exc)
        raise CalderaError(f"{flag} {address}: cannot listen there ({reason})") from None
    sockets = site._server.sockets if site._server else None  # type: ignore[union-attr]
    return int(sockets[0].getsockname()[1]) if sockets else port


async def _metrics_runner(args: argparse.Namespace, agent: Agent, clock: RealClock) -> Optional[web.AppRunner]:
    """The secure metrics listener (member_agent.metrics_server), or None without --metrics-bind-address."""
    if args.metrics_bind_address is None:
        return None
    from aiohttp import web

    from member_agent.federation_failover import endpoint_kubeconfigs
    from member_agent.federation_rest import kubeconfig_parts
    from member_agent.metrics_server import ScrapeAuth, build_metrics_app, federation_review, server_context

    try:
        context = server_context(args.tls_cert_file, args.tls_private_key_file)
    except (OSError, ssl.SSLError) as exc:
        raise CalderaError(f"--tls-cert-file/--tls-private-key-file: {exc}") from None
    base = os.path.dirname(os.path.abspath(args.kubeconfig))
    endpoints = [(server, tls) for server, _, tls in (kubeconfig_parts(c, base)
                                                     for c in endpoint_kubeconfigs(args.kubeconfig, args.server))]
    auth = ScrapeAuth(federation_review(endpoints), clock.monotonic)
    runner = web.AppRunner(build_metrics_app(agent.metrics.render, auth), access_log=None)
    await runner.setup()
    bound = await _start_site(runner, args.metrics_bind_address, "--metrics-bind-address", context)
    host = args.metrics_bind_address.rpartition(":")[0]
    print(f"caldera agent {args.cluster} serving metrics on https://{host}:{bound}/metrics", flush=True)
    return runner


async def serve(args: argparse.Namespace) -> int:
    from aiohttp import web

    from member_agent.endpoints import build_app
    from member_agent.federation_failover import FailoverFederationAPI

    if not args.speed > 0:
        raise CalderaError(f"--speed must be positive, got {args.speed}")
    if args.fence_after is not None and args.fence_after < 0:
        raise CalderaError(f"--fence-after must be >= 0, got {args.fence_after}")
    if args.fence_termination_grace is not None and args.fence_termination_grace < 0:
        raise CalderaError(f"--fence-termination-grace must be >= 0, got {args.fence_termination_grace}")
    from member_agent import leader

    why = leader.check(args)
    if why:
        raise CalderaError(why)
    _check_metrics_flags(args)
    clock = RealClock()
    sim: Optional[SimCluster] = None
    gateway: ClusterGateway
    cluster_spec: dict[str, Any] = {}
    version = "v1.30.0"
    if args.sim:
        cluster_file = load_cluster_file(args.sim, args.cluster)
        sim = SimCluster(cluster_file.nodes, clock, KubeletOptions(args.start_delay, args.default_duration, args.speed))
        gateway = SimGateway(sim)
        cluster_spec = {"provider": cluster_file.provider, "region": cluster_file.region, "zone": cluster_file.zone,
                        "labels": cluster_file.labels}
        version = SIM_KUBERNETES_VERSION
    else:
        from member_agent.cluster.kube import KubeGateway

        gateway = await KubeGateway.from_kubeconfig(args.member_kubeconfig)
    try:
        federation = await FailoverFederationAPI.from_kubeconfig(args.kubeconfig, args.server)
    except (OSError, ValueError, KeyError) as exc:
        raise CalderaError(f"--kubeconfig {args.kubeconfig}: {exc}") from None
    options = AgentOptions(cluster=args.cluster, schedule_period=args.schedule_period,
                           scheduler_conf_path=args.scheduler_conf, use_real_scheduler=not args.stand_in_scheduler,
                           session_options=node_search_flags.session_options(args),
                           cluster_spec=cluster_spec, kubernetes_version=version)
    agent = Agent(options, gateway, clock)
    agent.fence = Fence(clock, args.lease_period, termination_grace=args.fence_termination_grace,
                        fence_after=args.fence_after, enabled=not args.no_self_fence)
    if sim is None:  # a real member cluster outlives the agent: the fence's record lives there
        from member_agent.fence_store import ConfigMapFenceStore

        agent.fence_store = ConfigMapFenceStore(gateway.core, gateway, args.cluster)  # type: ignore[attr-defined]
    label_keys = [k.strip() for k in args.hypernode_label_keys.split(",") if k.strip()]
    fixed_hyper_nodes = cluster_file.hyper_nodes if sim is not None else []
    agent.set_hyper_nodes(fixed_hyper_nodes)
    sync = FederationSync(agent, federation, clock, lease_period=args.lease_period, status_period=args.status_period)
    secure = args.metrics_bind_address is not None
    runner = web.AppRunner(build_app(agent, sync, sim, plain_metrics=not secure), access_log=None)
    await runner.setup()
    try:
        bound = await _start_site(runner, args.listen, "--listen")
    except CalderaError:
        await runner.cleanup()  # close what is open, so the one-line error is all that is printed
        await gateway.close()
        await federation.close()
        raise
    metrics_runner = await _metrics_runner(args, agent, clock)  # announced first: "listening" means all are up
    print(f"caldera agent {args.cluster} listening on http://{args.listen.rpartition(':')[0]}:{bound}", flush=True)
    reporter = MemberReporter(agent, federation, clock)  # pods and PodGroups, read at the federation
    shipper = LogShipper(args.cluster, federation, gateway, clock)  # their logs, when the federation asks
    acting = [agent.controller_loop, agent.schedule_loop, sync.run, *([reporter.run, shipper.run]
                                                                      if args.report_pods else [])]
    # the simulated member cluster runs whoever leads: its pods go on while the agent stands by
    cluster_loops = [agent.cache.run(), *([sim.kubelet.run()] if sim is not None else [])]
    if sim is None or label_keys:  # the member's HyperNodes (and those its node labels describe)
        from member_agent.hypernode_discovery import hypernode_loop

        cluster_loops.append(hypernode_loop(agent, None if sim is not None else gateway, label_keys,
                                            fixed_hyper_nodes, args.hypernode_period))

    async def act() -> None:
        await asyncio.gather(*(loop() for loop in acting))

    if args.leader_elect:  # only the Lease holder schedules and writes
        lock = leader.make_lock(args, getattr(gateway, "api_client", None), federation)
        agent.leading = False

        def on_change(leading: bool) -> None:
            agent.leading = leading

        # a real agent that loses the Lease exits; a --sim one is its member cluster, so it campaigns again
        election = leader.lead_while_elected(args, lock, act, on_change, rejoin=sim is not None)
        loops = [election, *cluster_loops]
    else:
        loops = [act(), *cluster_loops]
    tasks = [asyncio.ensure_future(loop) for loop in loops]
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    waiter = asyncio.ensure_future(stop.wait())
    done, _ = await asyncio.wait([waiter, *tasks], return_when=asyncio.FIRST_COMPLETED)
    for task in done:
        if task is not waiter and task.exception() is not None:
            log.error("agent loop ended: %r", task.exception())
    for task in [waiter, *tasks]:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    await runner.cleanup()
    if metrics_runner is not None:
        await metrics_runner.cleanup()
    await gateway.close()
    await federation.close()
    log.info("agent %s stopped", args.cluster)
    lost = args.leader_elect and tasks[0] in done
    return 1 if lost else 0  # a deposed leader exits non-zero: its Deployment restarts it as a standby


def one_malloc_arena() -> None:
    """One glibc malloc arena for the process: the session's worker thread would otherwise get an
    arena of its own (~1 MiB resident after the first Jobs, never handed back); under the GIL the
    threads never allocate at the same time, so the second arena buys nothing."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").mallopt(M_ARENA_MAX, 1)


#: glibc's ``mallopt`` parameter number for the arena limit (malloc.h)
M_ARENA_MAX = -8


#: pydantic's plugin discovery (imports importlib.metadata at its top)
PYDANTIC_PLUGIN_LOADER = "pydantic.plugin._loader"


def skip_pydantic_plugin_discovery() -> None:
    """With ``PYDANTIC_DISABLE_PLUGINS=__all__`` pydantic finds no plugins, but the first model it
    builds still imports its plugin loader, whose module top imports ``importlib.metadata`` (with
    ``zipfile``, ``csv``, ``importlib.resources``: ~0.7 MiB of live objects after the first Job, for a
    lookup it then skips). A stand-in answers ``get_plugins()`` with no plugins, as the loader does
    when they are disabled; any other name it is asked for loads the real loader in its place."""
    if os.environ.get("PYDANTIC_DISABLE_PLUGINS") not in ("__all__", "1", "true") or \
            PYDANTIC_PLUGIN_LOADER in sys.modules:
        return
    stand_in = types.ModuleType(PYDANTIC_PLUGIN_LOADER, "pydantic plugins disabled (member_agent.agent_cmd)")

    def get_plugins() -> tuple[()]:
        return ()

    def real_attribute(name: str) -> Any:
        if name.startswith("__"):  # the import system's probes (``__path__``, ...): a plain module
            raise AttributeError(name)
        if sys.modules.get(PYDANTIC_PLUGIN_LOADER) is stand_in:
            del sys.modules[PYDANTIC_PLUGIN_LOADER]
        return getattr(importlib.import_module(PYDANTIC_PLUGIN_LOADER), name)

    stand_in.get_plugins = get_plugins  # type: ignore[attr-defined]
    stand_in.__getattr__ = real_attribute  # type: ignore[attr-defined]
    sys.modules[PYDANTIC_PLUGIN_LOADER] = stand_in


def skip_system_mime_types() -> None:
    """aiohttp.web builds a ``mimetypes.MimeTypes()`` when it is imported (for the files it could
    serve; the agent serves none). The instance holds Python's built-in table only, but the first
    one made also initialises the module's global tables from the system's ``/etc/mime.types``
    (~0.35 MiB kept, never read by the agent). Marking the module initialised (``mimetypes.inited``,
    documented) skips that; aiohttp's instance is the same, and the module's own functions
    (``guess_type``, ...) still read the system files on first use."""
    import mimetypes

    if "aiohttp.web_fileresponse" not in sys.modules and not mimetypes.inited:
        mimetypes.inited = True


#: bytes asyncio reads from a TLS connection at once (and the read buffer each connection holds)
TLS_READ_BUFFER = 64 * 1024


def small_tls_read_buffers() -> None:
    """asyncio gives every TLS connection a 256 KiB read buffer, zeroed (so resident) when the
    connection opens; the agent keeps four to the federation open (the Works watch and the pooled
    requests, each reused every few seconds): 1 MiB for reads of a few KiB. A quarter of it (four
    full TLS records per read) is plenty; a bigger response is read in more chunks."""
    from asyncio import sslproto

    if getattr(sslproto.SSLProtocol, "max_size", 0) > TLS_READ_BUFFER:
        sslproto.SSLProtocol.max_size = TLS_READ_BUFFER


def run(args: argparse.Namespace) -> int:
    # pydantic looks its plugins up in every installed distribution's entry points the first time a
    # model is built (importlib.metadata, zipfile, ~1 MiB kept); the agent uses none
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    skip_pydantic_plugin_discovery()
    skip_system_mime_types()
    small_tls_read_buffers()
    one_malloc_arena()
    logging.basicConfig(level=getattr(logging, args.log_level), stream=sys.stderr,
                        format="%(asctime)s %(levelname).1s %(name)s] %(message)s")
    try:
        return asyncio.run(serve(args))
    except CalderaError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
