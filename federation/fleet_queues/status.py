"""A Queue's status as the federation writes it (pure): Volcano's fields with fleet meanings.

* ``allocated``: what the queue's running pods hold across the fleet, the sum of the members'
  reports (``Cluster.status.queues[].allocated``), and ``allocatedByCluster`` the breakdown;
* ``deserved`` (Caldera): the fleet-wide deserved share of the federation's queue rule;
* ``pending`` / ``inqueue`` / ``running`` / ``completed``: the queue's federated Jobs, counted as
  Volcano's queue controller counts PodGroups: Pending (not admitted), Inqueue (admitted, not
  running yet), Running, and finished (Completed, Failed, Terminated, Aborted);
* ``state`` is kept as the user set it (default ``Open``).
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from federation.fleet_queues.accounting import QueueAttr
from federation.fleet_queues.model import INF
from policies.resources import ResourceVector

Obj = Mapping[str, Any]
FINISHED = ("Completed", "Failed", "Terminated", "Aborted")
RUNNING = ("Running", "Restarting", "Completing", "Terminating", "Aborting")


def reported_allocated(clusters: Iterable[Obj]) -> dict[str, dict[str, ResourceVector]]:
    """queue -> cluster -> what the agent reports the queue's pods hold there."""
    out: dict[str, dict[str, ResourceVector]] = {}
    for cluster in clusters:
        name = str((cluster.get("metadata") or {}).get("name") or "")
        for entry in (cluster.get("status") or {}).get("queues") or []:
            if not isinstance(entry, Mapping):
                continue
            try:
                amounts = ResourceVector.from_resource_list(entry.get("allocated"))
            except (ValueError, TypeError):
                continue
            out.setdefault(str(entry.get("name")), {})[name] = amounts
    return out


def job_counts(jobs: Iterable[tuple[str, str, str]]) -> dict[str, dict[str, int]]:
    """(queue, Job phase, ledger phase) per job -> queue -> Volcano's counts."""
    out: dict[str, dict[str, int]] = {}
    for queue, phase, ledger in jobs:
        counts = out.setdefault(queue, {"pending": 0, "inqueue": 0, "running": 0, "completed": 0})
        if phase in FINISHED:
            counts["completed"] += 1
        elif phase in RUNNING:
            counts["running"] += 1
        elif ledger == "Pending":
            counts["pending"] += 1
        else:
            counts["inqueue"] += 1
    return out


def queue_status(queue: Obj, attr: QueueAttr | None, by_cluster: Mapping[str, ResourceVector],
                 counts: Mapping[str, int]) -> dict[str, Any]:
    total = ResourceVector()
    for amounts in by_cluster.values():
        total = total + amounts
    deserved = {} if attr is None else {n: v for n, v in attr.deserved.items() if 0 < v < INF}
    return {
        "state": ((queue.get("status") or {}).get("state")) or "Open",
        "allocated": total.to_resource_list(),
        "allocatedByCluster": {name: amounts.to_resource_list() for name, amounts in sorted(by_cluster.items())},
        "deserved": ResourceVector(deserved).to_resource_list(),
        **{k: int(counts.get(k, 0)) for k in ("pending", "inqueue", "running", "completed")},
    }
