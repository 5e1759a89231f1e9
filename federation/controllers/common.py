"""What the job controllers share: kinds, annotation keys, options, small pure helpers.

Annotation contract (docs/federation-controllers.md):

* on the ResourceBinding ``<job>-job`` (written by placement unless noted)
  - ``caldera.io/placement-generation``: the division's generation, bumped on every new division;
  - ``caldera.io/placement``: JSON of the division (``caldera place -o json``'s shape plus
    per-cluster ``minAvailable``, per-task ``offset``, job ``totals``, ``generation``);
  - ``caldera.io/policy``: the governing policy (``PropagationPolicy ns/name``);
  - ``policy.karmada.io/applied-placement``: the policy's placement the binding was made with;
  - ``caldera.io/placed-at``: when the current generation was written (RFC 3339);
  - two-phase (written by dispatch): ``caldera.io/cancelled-generation``,
    ``caldera.io/reserve-caps``, ``caldera.io/reserve-attempts``, ``caldera.io/retry-after``.
* on the Job (user): ``caldera.io/reserve-timeout-seconds`` overrides the reserve timeout.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from federation.fleet_queues.model import DEFAULT_FLEET_CONF, FleetConf
from federation.placement.request import Options
from policies.k8s.timestamps import instant
from policies.kinds import lookup

# the protocol keys, re-exported so controllers keep writing ``c.TASK_OFFSETS`` and friends
from policies.models.karmada_work import JOB_LABEL as JOB_LABEL
from policies.models.karmada_work import JOB_UID, PLACEMENT_GENERATION, binding_name, execution_namespace
from policies.models.karmada_work import TASK_OFFSETS as TASK_OFFSETS
from policies.models.karmada_work import TASK_TOTALS as TASK_TOTALS
from policies.models.karmada_work import WORLD_SIZE as WORLD_SIZE

JOBS = lookup("batch.volcano.sh/v1alpha1", "Job")
PROPAGATION_POLICIES = lookup("policy.karmada.io/v1alpha1", "PropagationPolicy")
CLUSTER_PROPAGATION_POLICIES = lookup("policy.karmada.io/v1alpha1", "ClusterPropagationPolicy")
OVERRIDE_POLICIES = lookup("policy.karmada.io/v1alpha1", "OverridePolicy")
CLUSTER_OVERRIDE_POLICIES = lookup("policy.karmada.io/v1alpha1", "ClusterOverridePolicy")
CLUSTERS = lookup("cluster.karmada.io/v1alpha1", "Cluster")
BINDINGS = lookup("work.karmada.io/v1alpha2", "ResourceBinding")
WORKS = lookup("work.karmada.io/v1alpha1", "Work")
NAMESPACES = lookup("v1", "Namespace")

GENERATION = PLACEMENT_GENERATION
PLACEMENT = "caldera.io/placement"
POLICY = "caldera.io/policy"
APPLIED_PLACEMENT = "policy.karmada.io/applied-placement"
PLACED_AT = "caldera.io/placed-at"
CANCELLED_GENERATION = "caldera.io/cancelled-generation"
RESERVE_CAPS = "caldera.io/reserve-caps"
RESERVE_ATTEMPTS = "caldera.io/reserve-attempts"
RETRY_AFTER = "caldera.io/retry-after"
RESCHEDULED_FOR = "caldera.io/rescheduled-for"
RESERVE_TIMEOUT = "caldera.io/reserve-timeout-seconds"
#: set by placement when a lost cluster ended the job under its policies (JSON {phase, action, message});
#: the status aggregator shows that phase, and the job is never placed again
ENDED = "caldera.io/ended"
JOB_UID_LABEL = JOB_UID

#: Work gang phases meaning "the cluster holds (or no longer needs) the share's resources"
CONFIRMED_PHASES = ("Released", "Running", "Failed", "Cancelled", "Unschedulable")
#: Volcano job phases in a Work's manifest status meaning the same
CONFIRMED_JOB_PHASES = ("Running", "Completing", "Completed", "Failed", "Terminated", "Aborted")
#: Volcano job phases after which a job is never re-placed
FINISHED_JOB_PHASES = ("Completed", "Failed", "Terminated", "Aborted")
#: the NoExecute taint cluster health puts on a cluster whose lease expired past the grace period
FAILOVER_TAINT_EFFECT = "NoExecute"


@dataclass
class ControllerOptions:
    """Knobs of the placement and dispatch controllers (tests shorten the timers)."""

    workers: int = 4
    #: default two-phase reserve timeout; a Job's ``caldera.io/reserve-timeout-seconds`` overrides it
    reserve_timeout_seconds: int = 60
    #: after the release every share must have started within this (``caldera.io/start-deadline-seconds``
    #: on a Job overrides it), else the gang is torn down (federation/controllers/post_release.py)
    start_deadline_seconds: float = 60.0
    #: backoff between retries of an unschedulable job and between two-phase attempts
    retry_base_seconds: float = 5.0
    retry_max_seconds: float = 300.0
    #: the placement scheduling queue (federation/controllers/sched_queue.py; Karmada's defaults):
    #: backoff after a transient failure, and how long an unschedulable job waits with no event
    queue_initial_backoff_seconds: float = 1.0
    queue_max_backoff_seconds: float = 10.0
    queue_max_unschedulable_seconds: float = 300.0
    #: feature gates by Karmada's names, e.g. {"ResourceBindingPreemption": True}
    feature_gates: Mapping[str, bool] = field(default_factory=dict)
    #: how long a preemptor waits for its victims' clusters to report before it may preempt again
    preemption_grace_seconds: float = 30.0
    #: how long a failed reservation keeps lowering its cluster's estimate for that job
    cap_ttl_seconds: float = 900.0
    #: consecutive failed reservations after which a cluster is left out of that job's placements
    #: for ``cap_ttl_seconds`` (0: never excluded, only its estimate is lowered)
    exclude_after_failures: int = 2
    #: placement core options (readiness damping, optimizer limits)
    placement: Options = Options()
    #: fleet queues (federation/fleet_queues): the queue rule of the federation's scheduler conf
    #: (``caldera serve --scheduler-conf``); None: Jobs are placed without fleet admission
    fleet_queues: FleetConf | None = DEFAULT_FLEET_CONF
    watch_timeout: int = 300
    request_timeout: float = 30.0
    clock: Callable[[], float] = time.time


def job_key(namespace: str, name: str) -> tuple[str, str]:
    return (namespace, name)


def rb_name(job_name: str) -> str:
    return binding_name(job_name, "job")


def execution_ns(cluster: str) -> str:
    return execution_namespace(cluster)


def work_name(namespace: str, name: str) -> str:
    return f"{namespace}.{name}"


def rfc3339(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(text: Any) -> float | None:
    """Epoch seconds of a timestamp field, or None when absent or unreadable."""
    moment = instant(text)
    return moment.timestamp() if moment is not None else None


def annotations_of(obj: Mapping[str, Any] | None) -> dict[str, str]:
    return dict(((obj or {}).get("metadata") or {}).get("annotations") or {})


def int_annotation(obj: Mapping[str, Any] | None, key: str, default: int = 0) -> int:
    try:
        return int(annotations_of(obj).get(key, default))
    except (TypeError, ValueError):
        return default


def json_annotation(obj: Mapping[str, Any] | None, key: str) -> Any:
    text = annotations_of(obj).get(key)
    if not text:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def set_condition(conditions: list[dict[str, Any]] | None, type_: str, status: str, reason: str, message: str,
                  now: float, observed_generation: int | None = None) -> list[dict[str, Any]]:
    """``conditions`` with ``type_`` set; lastTransitionTime moves only when the status changes."""
    out = [dict(c) for c in conditions or [] if c.get("type") != type_]
    previous = next((c for c in conditions or [] if c.get("type") == type_), None)
    since = rfc3339(now) if previous is None or previous.get("status") != status else previous.get(
        "lastTransitionTime")
    condition: dict[str, Any] = {"type": type_, "status": status, "reason": reason, "message": message,
                                 "lastTransitionTime": since}
    if observed_generation is not None:
        condition["observedGeneration"] = observed_generation
    out.append(condition)
    return sorted(out, key=lambda c: str(c.get("type")))


def drop_condition(conditions: list[dict[str, Any]] | None, type_: str) -> list[dict[str, Any]]:
    return [dict(c) for c in conditions or [] if c.get("type") != type_]


def condition(obj: Mapping[str, Any] | None, type_: str) -> dict[str, Any] | None:
    for c in ((obj or {}).get("status") or {}).get("conditions") or []:
        if c.get("type") == type_:
            return dict(c)
    return None


