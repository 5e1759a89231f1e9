"""Two (or more) agent replicas per member cluster: one leads, the others wait.

The replicas campaign with kubernetes-asyncio's own leader election (client-go's algorithm on a
coordination.k8s.io/v1 Lease) and kube-controller-manager's flag names and defaults. The Lease is
``caldera-system/caldera-agent-<cluster>`` in the *member* cluster (``--member-kubeconfig``: it
outlives a federation outage), or, for a simulated cluster (``--sim``, no member API),
the same Lease in the federation
(:mod:`member_agent.federation_lease_lock`). Only the
leader schedules, runs the job controller and talks to the federation; a standby keeps nothing but
its process warm. A leader that loses the Lease stops acting at once (within the renew deadline,
before any other replica may take the Lease over), so a deposed agent never goes on binding pods.
With a member API it then exits (as kube-scheduler does) and its Deployment restarts it as a standby.
A ``--sim`` agent *is* its member cluster (the simulated kubelet runs in the process), so it stays up:
its pods keep running, and it campaigns again under the same identity, so when a federation endpoint
answers again it renews its own Lease (the holder needs no expiry) and resumes.
"""

from __future__ import annotations

import argparse
import logging
import secrets
import socket
from collections.abc import Awaitable, Callable
from typing import Any

from policies.k8s.durations import duration_flag as duration

log = logging.getLogger("caldera.agent.leader")
LEASE_NAMESPACE = "caldera-system"


def boolean(text: str) -> bool:
    if text.strip().lower() in ("true", "1", "yes", "false", "0", "no"):
        return text.strip().lower() in ("true", "1", "yes")
    raise argparse.ArgumentTypeError(f"{text!r} is not true or false")


def add_flags(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("leader election (kube-controller-manager's flags)")
    group.add_argument("--leader-elect", type=boolean, nargs="?", const=True, default=False, metavar="BOOL",
                       help="act only while holding the Lease caldera-system/caldera-agent-CLUSTER (in the member "
                            "cluster; with --sim in the federation) (default false)")
    group.add_argument("--leader-elect-lease-duration", type=duration, default=15.0, metavar="DURATION")
    group.add_argument("--leader-elect-renew-deadline", type=duration, default=10.0, metavar="DURATION")
    group.add_argument("--leader-elect-retry-period", type=duration, default=2.0, metavar="DURATION")
    group.add_argument("--leader-elect-identity", default="", metavar="ID",
                       help="holder identity (default: hostname plus a random suffix)")


def check(args: argparse.Namespace) -> str | None:
    """Why the flags cannot work together, or None."""
    if not args.leader_elect:
        return None
    if not args.leader_elect_lease_duration > args.leader_elect_renew_deadline:
        return "--leader-elect-lease-duration must be greater than --leader-elect-renew-deadline"
    if not args.leader_elect_renew_deadline > 1.2 * args.leader_elect_retry_period:
        return "--leader-elect-renew-deadline must be greater than 1.2 x --leader-elect-retry-period"
    if args.leader_elect_retry_period < 1:  # kubernetes-asyncio's election refuses shorter periods
        return "--leader-elect-retry-period must be at least 1s"
    return None


def make_lock(args: argparse.Namespace, member_api_client: Any, federation: Any) -> Any:
    """The Lease lock: in the member cluster when there is one, else in the federation."""
    identity = args.leader_elect_identity or f"{socket.gethostname()}_{secrets.token_hex(8)}"
    if args.sim:
        from member_agent.federation_lease_lock import FederationLeaseLock

        return FederationLeaseLock(args.cluster, identity, federation)
    from kubernetes_asyncio.leaderelection.resourcelock.leaselock import LeaseLock

    return LeaseLock(f"caldera-agent-{args.cluster}", LEASE_NAMESPACE, identity, member_api_client)


async def lead_while_elected(args: argparse.Namespace, lock: Any, lead: Callable[[], Awaitable[None]],
                             on_change: Callable[[bool], None] = lambda leading: None,
                             rejoin: bool = False) -> None:
    """Campaign; run ``lead()`` while leading. A lost Lease returns (the caller exits), or with
    ``rejoin`` stops ``lead()`` and campaigns again under the same identity."""
    from kubernetes_asyncio.leaderelection import electionconfig, leaderelection

    identity = lock.identity

    async def started() -> None:
        on_change(True)
        await lead()

    async def stopped() -> None:
        on_change(False)
        what = "stepping down, campaigning again" if rejoin else "exiting"
        log.warning("agent %s lost Lease %s/%s; %s", identity, lock.namespace, lock.name, what)

    while True:
        log.info("agent %s campaigning for Lease %s/%s", identity, lock.namespace, lock.name)
        config = electionconfig.Config(lock, args.leader_elect_lease_duration, args.leader_elect_renew_deadline,
                                       args.leader_elect_retry_period, started, stopped)
        await leaderelection.LeaderElection(config).run()
        if not rejoin:
            return
