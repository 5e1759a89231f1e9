"""``caldera serve`` and ``caldera controllers`` flags for the cluster health controller (kept
import-light for the CLI).

The values travel as ``ControllerManager(options=...)`` -> ``ControllerContext.extra`` and are
read by :func:`federation.controllers.health.config_from`. Unset flags keep the defaults of
:class:`federation.controllers.health_state.HealthConfig` (Karmada's: lease duration, 300 s
failover grace, 30 s success threshold, 60 s startup grace, 5 s monitor period).
"""

from __future__ import annotations

import argparse
from typing import Any

#: flag -> (ControllerContext.extra key, help)
FLAGS: dict[str, tuple[str, str]] = {
    "--cluster-lease-grace": ("cluster_lease_grace",
                              "seconds without a Lease renewal before a cluster is Ready=Unknown and tainted "
                              "cluster.karmada.io/unreachable:NoSchedule (default: the lease's "
                              "leaseDurationSeconds, 40)"),
    "--cluster-failover-grace": ("cluster_failover_grace",
                                 "seconds a cluster stays unhealthy before the NoExecute taint that makes "
                                 "placement move its jobs elsewhere (default 300)"),
    "--cluster-success-threshold": ("cluster_success_threshold",
                                    "seconds a recovered cluster's lease must stay fresh before its taints are "
                                    "removed and it is Ready again (default 30)"),
    "--cluster-startup-grace": ("cluster_startup_grace",
                                "seconds a new Cluster may go without any Lease before it is marked "
                                "unhealthy (default 60)"),
    "--cluster-monitor-period": ("cluster_monitor_period",
                                 "seconds between two health checks of every cluster (default 5)"),
    "--gang-start-deadline": ("gang_start_deadline",
                              "seconds after the release of a gang spanning clusters by which every share must have "
                              "started, else the whole gang is torn down (default 60; a Job's annotation "
                              "caldera.io/start-deadline-seconds overrides it)"),
    "--pod-termination-grace": ("pod_termination_grace",
                                "grace period of the pods a cut-off agent deletes when it fences itself; published "
                                "to the agents in Cluster status.failoverTiming (default 30)"),
}


def add_health_flags(parser: argparse.ArgumentParser) -> None:
    for flag, (dest, text) in FLAGS.items():
        parser.add_argument(flag, dest=dest, type=float, default=None, metavar="SECONDS", help=text)


def health_options(args: argparse.Namespace) -> dict[str, Any]:
    """The flags the user set, as ControllerContext.extra entries."""
    values = {dest: getattr(args, dest, None) for dest, _text in FLAGS.values()}
    for dest, value in values.items():
        if value is not None and value < 0:
            raise SystemExit(f"caldera serve: --{dest.replace('_', '-')} must be >= 0, got {value}")
    from federation.controllers.fence_check import unsafe_flags

    unsafe = unsafe_flags(values["cluster_lease_grace"], values["cluster_failover_grace"],
                          values["pod_termination_grace"])
    if unsafe:
        raise SystemExit(f"caldera serve: unsafe fencing: {unsafe}")
    return {dest: value for dest, value in values.items() if value is not None}
