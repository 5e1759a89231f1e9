"""kube-controller-manager's leader-election flags, shared by ``caldera controllers`` and ``caldera serve``."""

from __future__ import annotations

import argparse
from typing import Any

from policies.k8s.durations import duration_flag as duration


def boolean(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("true", "1", "yes"):
        return True
    if lowered in ("false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"{text!r} is not true or false")


def add_leader_election_flags(parser: argparse.ArgumentParser, default: bool | None,
                              default_text: str = "") -> None:
    """``default`` None: the command decides later (``caldera serve``: true on a shared store), and
    ``default_text`` says how in the help."""
    group = parser.add_argument_group("leader election (kube-controller-manager's flags)")
    group.add_argument("--leader-elect", type=boolean, nargs="?", const=True, default=default, metavar="BOOL",
                       help="run the controllers only while holding the Lease caldera-system/caldera-controllers "
                            f"(default {default_text or str(default).lower()})")
    group.add_argument("--leader-elect-lease-duration", type=duration, default=15.0, metavar="DURATION",
                       help="how long a non-leader waits after the last renewal it saw before taking over (15s)")
    group.add_argument("--leader-elect-renew-deadline", type=duration, default=10.0, metavar="DURATION",
                       help="how long the leader keeps trying to renew before it steps down (10s)")
    group.add_argument("--leader-elect-retry-period", type=duration, default=2.0, metavar="DURATION",
                       help="time between attempts to acquire or renew (2s)")
    group.add_argument("--leader-elect-identity", default="", metavar="ID",
                       help="holder identity (default: hostname plus a random suffix)")


def election_config(args: argparse.Namespace) -> Any:
    """An ElectionConfig from the flags, or None without --leader-elect (SystemExit naming a bad flag)."""
    if not args.leader_elect:
        return None
    from federation.controllers.leader_election import ElectionConfig, default_identity

    config = ElectionConfig(identity=args.leader_elect_identity or default_identity(),
                            lease_duration=args.leader_elect_lease_duration,
                            renew_deadline=args.leader_elect_renew_deadline,
                            retry_period=args.leader_elect_retry_period)
    try:
        config.check()
    except ValueError as exc:
        raise SystemExit(f"error: {exc}") from None
    return config
