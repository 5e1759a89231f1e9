"""Federation controller metrics (prometheus-client), served on the API server's ``/metrics``.

Controllers run inside the API server process, so they share these module-level objects::

    from federation import metrics
    metrics.observe_placement_latency(seconds)      # Job created -> ResourceBinding Scheduled=True
    metrics.PLACEMENTS.labels(result="scheduled").inc()
    metrics.OPTIMIZER_CALLS.labels(outcome="solved").inc()   # or "fallback", "infeasible"
    metrics.TWO_PHASE.labels(outcome="released").inc()      # or "cancelled"
    metrics.CLUSTER_READY.labels(cluster="a").set(1)
    metrics.two_phase_outcome("released", waited_seconds)   # + caldera_cross_cluster_gang_wait_seconds
    metrics.observe_schedule("success", "FirstSchedule", seconds)   # Karmada's scheduler metrics

Gauges that describe the fleet as it is (clusters, queues, jobs, holds) are computed at scrape time
from the store by :mod:`federation.fleet_metrics`, not here.

They live in their own :data:`REGISTRY`; :func:`expose_in` bridges it into a server's registry
so one scrape of ``/metrics`` returns both. :func:`placement_latency_summary` gives exact
percentiles of the recent observations for ``GET /status``.
"""

from __future__ import annotations

import math
import threading
from collections import deque
from collections.abc import Iterable, Sequence
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.registry import Collector

REGISTRY = CollectorRegistry()
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)

PLACEMENT_LATENCY = Histogram(
    "caldera_placement_latency_seconds", "Job creation to ResourceBinding Scheduled=True",
    buckets=LATENCY_BUCKETS, registry=REGISTRY)
PLACEMENTS = Counter(
    "caldera_placements", "Placement decisions by result (scheduled, unschedulable, error)",
    ["result"], registry=REGISTRY)
OPTIMIZER_CALLS = Counter(
    "caldera_placement_optimizer_calls", "Gang-aware optimizer runs by outcome (solved, fallback, infeasible)",
    ["outcome"], registry=REGISTRY)
TWO_PHASE = Counter(
    "caldera_two_phase_outcomes", "Two-phase gang starts by outcome (released, cancelled)",
    ["outcome"], registry=REGISTRY)
QUEUE_MOVES = Counter(
    "caldera_scheduling_queue_moves", "Unschedulable jobs moved back to the active queue by an event",
    registry=REGISTRY)
QUEUE_UNSCHEDULABLE = Counter(
    "caldera_scheduling_queue_unschedulable", "Attempts that left a job in the unschedulable set",
    registry=REGISTRY)
CLUSTER_READY = Gauge(
    "caldera_cluster_ready", "1 when the cluster's lease is fresh and it is untainted, else 0",
    ["cluster"], registry=REGISTRY)
CLUSTER_LEASE_AGE = Gauge(
    "caldera_cluster_lease_age_seconds", "Seconds since the cluster's Lease was renewed",
    ["cluster"], registry=REGISTRY)
JOB_PHASE_TRANSITIONS = Counter(
    "caldera_job_phase_transitions", "Federated Job phase changes written by the status controller",
    ["phase"], registry=REGISTRY)
STATUS_WRITES = Counter(
    "caldera_status_writes", "Status subresource writes by the status and health controllers",
    ["kind"], registry=REGISTRY)
GANG_WAIT = Histogram(
    "caldera_cross_cluster_gang_wait_seconds",
    "A gang held across clusters: from its placement to release or cancellation, by outcome",
    ["outcome"], buckets=LATENCY_BUCKETS, registry=REGISTRY)
# Both outcomes exist at zero from the start: a series that first appears already at 1 shows Prometheus no
# increase, so the first held gang would never reach rate() and the recording rules built on it
for _outcome in ("released", "cancelled"):
    TWO_PHASE.labels(outcome=_outcome)
    GANG_WAIT.labels(outcome=_outcome)
# Karmada's scheduler metrics (karmada-scheduler names, without the process prefix Karmada adds)
SCHEDULE_ATTEMPTS = Counter(
    "karmada_scheduler_schedule_attempts", "Placement attempts by result (success, unschedulable, error) and type",
    ["result", "schedule_type"], registry=REGISTRY)
E2E_SCHEDULING = Histogram(
    "karmada_scheduler_e2e_scheduling_duration_seconds", "One placement from its trigger to the decision",
    ["result", "schedule_type"], buckets=LATENCY_BUCKETS, registry=REGISTRY)
INCOMING_BINDINGS = Counter(
    "karmada_scheduler_queue_incoming_bindings", "Jobs queued for placement, by what triggered it",
    ["event"], registry=REGISTRY)

_RECENT: deque[float] = deque(maxlen=10_000)
_LOCK = threading.Lock()


def observe_placement_latency(seconds: float) -> None:
    """Record one placement latency (histogram plus the exact recent sample for /status)."""
    seconds = max(0.0, float(seconds))
    PLACEMENT_LATENCY.observe(seconds)
    with _LOCK:
        _RECENT.append(seconds)


def two_phase_outcome(outcome: str, waited_seconds: float | None) -> None:
    """A held gang was released or cancelled; ``waited_seconds`` since its placement, when known."""
    TWO_PHASE.labels(outcome=outcome).inc()
    if waited_seconds is not None:
        GANG_WAIT.labels(outcome=outcome).observe(max(0.0, waited_seconds))


def schedule_type(generation: int, trigger: str) -> str:
    """Karmada's ``schedule_type`` label for one placement attempt."""
    if generation == 0:
        return "FirstSchedule"
    if trigger.startswith("cluster lost"):
        return "FailoverSchedule"
    return "ReconcileSchedule"


def observe_schedule(result: str, kind: str, seconds: float) -> None:
    SCHEDULE_ATTEMPTS.labels(result=result, schedule_type=kind).inc()
    E2E_SCHEDULING.labels(result=result, schedule_type=kind).observe(max(0.0, seconds))


def trigger_event(trigger: str) -> str:
    """A bounded label value for a placement trigger (the trigger text may name a cluster)."""
    head = trigger.split(":", 1)[0].strip().lower()
    for prefix, event in (("initial placement", "initial"), ("policy bound", "policy_bound"),
                          ("job spec changed", "spec_changed"), ("policy changed", "policy_changed"),
                          ("reschedule requested", "reschedule_requested"), ("cluster lost", "cluster_lost"),
                          ("reservation cancelled", "reservation_cancelled"), ("retry", "cluster_changed")):
        if head.startswith(prefix):
            return event
    return "other"


def recent_placement_latencies() -> list[float]:
    with _LOCK:
        return list(_RECENT)


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile of ascending ``sorted_values`` (q in 0..100)."""
    if not sorted_values:
        raise ValueError("percentile of an empty sample")
    rank = max(1, math.ceil(q / 100.0 * len(sorted_values)))
    return float(sorted_values[min(rank, len(sorted_values)) - 1])


def latency_summary(values: Iterable[float]) -> dict[str, Any]:
    """``{count, p50, p90, p99, max, mean}`` in seconds (only ``count`` when empty)."""
    ordered = sorted(values)
    if not ordered:
        return {"count": 0}
    return {"count": len(ordered), "p50": percentile(ordered, 50), "p90": percentile(ordered, 90),
            "p99": percentile(ordered, 99), "max": ordered[-1], "mean": sum(ordered) / len(ordered)}


def placement_latency_summary() -> dict[str, Any]:
    return latency_summary(recent_placement_latencies())


class _Bridge(Collector):
    """Re-export another registry's metrics from inside a second registry."""

    def __init__(self, source: CollectorRegistry) -> None:
        self.source = source

    def collect(self) -> Any:
        return self.source.collect()

    def describe(self) -> list[Any]:
        return []  # unchecked: names never clash with the API server's apiserver_* metrics


def expose_in(registry: CollectorRegistry) -> None:
    """Make ``registry`` (e.g. an API server's) also serve the federation metrics."""
    registry.register(_Bridge(REGISTRY))

#: client-go's leader-election gauge: 1 while this process holds the Lease ``name``
LEADER = Gauge(
    "leader_election_master_status", "1 while this process leads (holds the Lease), else 0",
    ["name", "identity"], registry=REGISTRY)


def leader_states(name: str) -> dict[str, bool]:
    """identity -> leading now, for this process's candidates for the Lease ``name`` (read from
    :data:`LEADER`, whose values are judged when read: a leader past its renew deadline reads 0)."""
    states: dict[str, bool] = {}
    for family in LEADER.collect():
        for sample in family.samples:
            if sample.labels.get("name") == name:
                states[sample.labels.get("identity", "")] = sample.value >= 1
    return states
