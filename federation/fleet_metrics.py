"""Gauges of the fleet as it is, computed from the store at scrape time (served on ``/metrics``).

Counters and histograms of decisions live in :mod:`federation.metrics` (the controllers feed
them). What a dashboard shows as *state* is read here, once per scrape, from the objects
themselves, so it is right after a restart and never drifts from the store:

* Karmada's cluster metrics (``cluster_ready_state``, ``cluster_node_number``, the resource
  summary as ``cluster_{cpu,memory,pod}_*``), label ``cluster_name`` as Karmada's;
* ``caldera_cluster_resource_{allocatable,allocated}{cluster, resource, <resource label>}`` for every
  resource of the summary (GPUs and HAMi shares included; labels as the seed's queue selector wants);
* ``caldera_cluster_gpus``, ``caldera_cluster_gpus_free``, ``caldera_cluster_gpus_fragmented`` ``{cluster, model}``;
* ``caldera_cluster_shares{cluster}`` / ``caldera_cluster_share_replicas{cluster}`` and
  ``caldera_job_share_replicas{job_namespace, job_name, cluster}`` from the bindings' decisions;
* ``volcano_job_pending_duration_seconds{job_namespace, job_name, queue}`` (the seed's alert);
* ``volcano_queue_{allocated,deserved,capability}{queue_name, scope="fleet", <resource label>}`` from the
  Queues' fleet status (the seed's saturation alert reads these);
* ``caldera_jobs{phase}``, ``caldera_resource_bindings{scheduled}``;
* ``caldera_two_phase_held_gangs`` and ``caldera_two_phase_hold_seconds{job_namespace, job_name}``:
  gangs whose shares are held (two-phase start), and for how long since their placement.

:func:`fleet_families` is pure (objects and a clock reading in, metric families out).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from policies.k8s.timestamps import instant
from policies.kinds import lookup
from policies.resource_labels import natural_amount, resource_labels

Obj = dict[str, Any]
CLUSTERS = lookup("cluster.karmada.io/v1alpha1", "Cluster")
JOBS = lookup("batch.volcano.sh/v1alpha1", "Job")
BINDINGS = lookup("work.karmada.io/v1alpha2", "ResourceBinding")
WORKS = lookup("work.karmada.io/v1alpha1", "Work")
QUEUES = lookup("scheduling.volcano.sh/v1beta1", "Queue")
JOB_LABEL = "caldera.io/job"
PLACED_AT = "caldera.io/placed-at"
#: Karmada's resource summary gauges: (metric, summary field, resource, help)
SUMMARY_GAUGES = (
    ("cluster_cpu_allocatable_number", "allocatable", "cpu", "Allocatable CPU cores of the cluster"),
    ("cluster_cpu_allocated_number", "allocated", "cpu", "CPU cores allocated to pods in the cluster"),
    ("cluster_memory_allocatable_bytes", "allocatable", "memory", "Allocatable memory of the cluster"),
    ("cluster_memory_allocated_bytes", "allocated", "memory", "Memory allocated to pods in the cluster"),
    ("cluster_pod_allowed_number", "allocatable", "pods", "Pods the cluster allows"),
    ("cluster_pod_allocated_number", "allocated", "pods", "Pods allocated in the cluster"),
)


def _time(text: Any) -> float | None:
    parsed = instant(text)
    return None if parsed is None else parsed.timestamp()


def _ready(cluster: Obj) -> bool:
    for cond in (cluster.get("status") or {}).get("conditions") or []:
        if isinstance(cond, dict) and cond.get("type") == "Ready":
            return cond.get("status") == "True"
    return False


def _amount(resource: str, quantity: Any) -> float | None:
    try:
        return natural_amount(resource, quantity)
    except (ValueError, TypeError):
        return None


def cluster_families(clusters: Iterable[Obj]) -> list[GaugeMetricFamily]:
    ready = GaugeMetricFamily("cluster_ready_state", "1 when the cluster is Ready, else 0", labels=["cluster_name"])
    nodes = GaugeMetricFamily("cluster_node_number", "Nodes of the cluster", labels=["cluster_name"])
    ready_nodes = GaugeMetricFamily("cluster_ready_node_number", "Ready nodes of the cluster", labels=["cluster_name"])
    summary = {name: GaugeMetricFamily(name, text, labels=["cluster_name"]) for name, _, _, text in SUMMARY_GAUGES}
    per_resource = {field: GaugeMetricFamily(f"caldera_cluster_resource_{field}",
                                             f"Resource summary {field}, per resource in natural units "
                                             "(GPUs and HAMi shares included)")
                    for field in ("allocatable", "allocated")}
    gpu = {state: GaugeMetricFamily(name, text, labels=["cluster", "model"])
           for state, name, text in (("total", "caldera_cluster_gpus", "GPUs on Ready nodes, by model"),
                                     ("free", "caldera_cluster_gpus_free", "Free GPUs on schedulable Ready nodes"),
                                     ("fragmented", "caldera_cluster_gpus_fragmented",
                                      "Free GPUs on partly used nodes (no use to a whole-node job)"))}
    for cluster in clusters:
        name = str((cluster.get("metadata") or {}).get("name"))
        status = cluster.get("status") or {}
        ready.add_metric([name], 1.0 if _ready(cluster) else 0.0)
        node_summary = status.get("nodeSummary") or {}
        nodes.add_metric([name], float(node_summary.get("totalNum") or 0))
        ready_nodes.add_metric([name], float(node_summary.get("readyNum") or 0))
        resources = status.get("resourceSummary") or {}
        for metric, field, resource, _ in SUMMARY_GAUGES:
            amount = _amount(resource, (resources.get(field) or {}).get(resource, 0))
            if amount is not None:
                summary[metric].add_metric([name], amount)
        for field, family in per_resource.items():
            for resource, quantity in sorted((resources.get(field) or {}).items()):
                amount = _amount(str(resource), quantity)
                if amount is not None:
                    family.add_sample(family.name, {"cluster": name, **resource_labels(str(resource))}, amount)
        for entry in status.get("gpus") or []:
            if not isinstance(entry, dict):
                continue
            model = str(entry.get("product") or "unknown")
            for state, family in gpu.items():
                family.add_metric([name, model], float(entry.get(state) or 0))
    return [ready, nodes, ready_nodes, *summary.values(), *per_resource.values(), *gpu.values()]


def job_families(jobs: Iterable[Obj], now: float) -> list[GaugeMetricFamily]:
    pending = GaugeMetricFamily("volcano_job_pending_duration_seconds",
                                "Seconds a federated Job has been Pending (since its last phase change)",
                                labels=["job_namespace", "job_name", "queue"])
    phases: Counter[str] = Counter()
    for job in jobs:
        meta, spec = job.get("metadata") or {}, job.get("spec") or {}
        state = (job.get("status") or {}).get("state") or {}
        phase = str(state.get("phase") or "Pending")
        phases[phase] += 1
        if phase != "Pending":
            continue
        since = _time(state.get("lastTransitionTime")) or _time(meta.get("creationTimestamp"))
        if since is not None:
            pending.add_metric([str(meta.get("namespace")), str(meta.get("name")), str(spec.get("queue") or "default")],
                               max(0.0, now - since))
    by_phase = GaugeMetricFamily("caldera_jobs", "Federated Jobs by phase", labels=["phase"])
    for phase, count in sorted(phases.items()):
        by_phase.add_metric([phase], float(count))
    return [pending, by_phase]


def binding_families(bindings: Iterable[Obj], works: Iterable[Obj], now: float) -> list[GaugeMetricFamily]:
    shares = GaugeMetricFamily("caldera_cluster_shares", "Job shares placed on the cluster", labels=["cluster"])
    replicas = GaugeMetricFamily("caldera_cluster_share_replicas", "Replicas placed on the cluster",
                                 labels=["cluster"])
    per_job = GaugeMetricFamily("caldera_job_share_replicas", "Replicas of the job placed on each cluster",
                                labels=["job_namespace", "job_name", "cluster"])
    by_scheduled = GaugeMetricFamily("caldera_resource_bindings", "ResourceBindings by their Scheduled condition",
                                     labels=["scheduled"])
    share_count: Counter[str] = Counter()
    replica_count: Counter[str] = Counter()
    scheduled: Counter[str] = Counter()
    placed_at: dict[str, float | None] = {}
    for rb in bindings:
        meta = rb.get("metadata") or {}
        job_name = str(meta.get("name") or "").removesuffix("-job")
        namespace = str(meta.get("namespace"))
        placed_at[f"{namespace}.{job_name}"] = _time((meta.get("annotations") or {}).get(PLACED_AT))
        cond = next((c for c in (rb.get("status") or {}).get("conditions") or []
                     if isinstance(c, dict) and c.get("type") == "Scheduled"), {})
        scheduled[str(cond.get("status") or "Unknown")] += 1
        for target in (rb.get("spec") or {}).get("clusters") or []:
            count = int(target.get("replicas") or 0)
            if count <= 0:
                continue
            share_count[str(target.get("name"))] += 1
            replica_count[str(target.get("name"))] += count
            per_job.add_metric([namespace, job_name, str(target.get("name"))], float(count))
    for cluster in sorted(share_count):
        shares.add_metric([cluster], float(share_count[cluster]))
        replicas.add_metric([cluster], float(replica_count[cluster]))
    for value, count in sorted(scheduled.items()):
        by_scheduled.add_metric([value], float(count))
    return [shares, replicas, per_job, by_scheduled, *hold_families(works, placed_at, now)]


def hold_families(works: Iterable[Obj], placed_at: dict[str, float | None], now: float) -> list[GaugeMetricFamily]:
    held = {str(((w.get("metadata") or {}).get("labels") or {}).get(JOB_LABEL)) for w in works
            if ((w.get("spec") or {}).get("placement") or {}).get("hold")
            and not ((w.get("spec") or {}).get("placement") or {}).get("cancelled")}
    held.discard("None")
    count = GaugeMetricFamily("caldera_two_phase_held_gangs", "Gangs whose shares are held (two-phase start)")
    count.add_metric([], float(len(held)))
    age = GaugeMetricFamily("caldera_two_phase_hold_seconds", "Seconds since a held gang was placed",
                            labels=["job_namespace", "job_name"])
    for key in sorted(held):
        namespace, _, name = key.partition(".")
        since = placed_at.get(key)
        if since is not None:
            age.add_metric([namespace, name], max(0.0, now - since))
    return [count, age]


def queue_families(queues: Iterable[Obj]) -> list[GaugeMetricFamily]:
    """``volcano_queue_{allocated,deserved,capability}{queue_name, scope="fleet", <resource label>}``: a
    Queue's fleet-wide numbers as the federation writes them in its status (docs/queues.md); the agents
    export the same names with ``scope="cluster"``. A resource named in the capability or deserved is
    exported as allocated 0 while nothing holds it, so the seed's ratio exists from the start."""
    text = {"allocated": "Resources the queue's running pods hold across the fleet",
            "deserved": "The queue's fleet-wide deserved share", "capability": "The queue's fleet-wide limit"}
    families = {kind: GaugeMetricFamily(f"volcano_queue_{kind}", help_) for kind, help_ in text.items()}
    for queue in queues:
        name = str((queue.get("metadata") or {}).get("name"))
        status, spec = queue.get("status") or {}, queue.get("spec") or {}
        values = {"allocated": dict(status.get("allocated") or {}), "deserved": dict(status.get("deserved") or {}),
                  "capability": dict(spec.get("capability") or {})}
        for resource in set(values["capability"]) | set(values["deserved"]):
            values["allocated"].setdefault(resource, 0)
        for kind, amounts in values.items():
            for resource, quantity in sorted(amounts.items()):
                try:
                    amount = natural_amount(resource, quantity)
                except (ValueError, TypeError):
                    continue
                families[kind].add_sample(f"volcano_queue_{kind}",
                                          {"queue_name": name, "scope": "fleet", **resource_labels(resource)}, amount)
    return list(families.values())


def fleet_families(clusters: Iterable[Obj], jobs: Iterable[Obj], bindings: Iterable[Obj], works: Iterable[Obj],
                   now: float, queues: Iterable[Obj] = ()) -> list[GaugeMetricFamily]:
    return [*cluster_families(clusters), *job_families(jobs, now), *binding_families(bindings, works, now),
            *queue_families(queues)]


class FleetCollector(Collector):
    """Lists the store on each scrape (``list_objects(kind_info)`` returns every object of a kind)."""

    def __init__(self, list_objects: Callable[[Any], list[Obj]], clock: Callable[[], float]) -> None:
        self.list_objects = list_objects
        self.clock = clock

    def collect(self) -> list[GaugeMetricFamily]:
        lists = self.list_objects
        return fleet_families(lists(CLUSTERS), lists(JOBS), lists(BINDINGS), lists(WORKS), self.clock(),
                              lists(QUEUES))

    def describe(self) -> list[Any]:
        return []
