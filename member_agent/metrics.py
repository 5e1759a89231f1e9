"""The agent's Prometheus metrics, with Volcano's names (reference/volcano.md §11.1).

The seed's alert names ``volcano_queue_allocated`` / ``volcano_queue_capability`` (not Volcano
names): :mod:`member_agent.queue_metrics` provides them next to Volcano's own.

Each agent has its own registry (several agents may share a test process). Queue gauges come
in Volcano's three variants: ``*_milli_cpu``, ``*_memory_bytes`` and ``*_scalar_resources``
(label ``resource``). Volcano names the capability gauges ``volcano_queue_capacity_*``.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from member_agent.queue_metrics import QueueGauges
from member_agent.scheduler.framework.result import CycleResult
from policies.resources import to_internal


def _span(low: float, high: float, count: int) -> list[float]:
    factor = (high / low) ** (1.0 / (count - 1))
    return [round(low * factor**i, 3) for i in range(count)]


CONTENT_TYPE = CONTENT_TYPE_LATEST
QUEUE_KINDS = ("allocated", "deserved", "capacity")
POD_GROUP_PHASES = ("Pending", "Inqueue", "Running", "Unknown", "Completed")


class AgentMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.e2e_latency = Histogram("volcano_e2e_scheduling_latency_milliseconds",
                                     "E2e scheduling latency in milliseconds (scheduling algorithm + binding)",
                                     buckets=_span(1, 5000, 20), registry=r)
        self.job_latency = Histogram("volcano_e2e_job_scheduling_latency_milliseconds",
                                     "E2e job scheduling latency in milliseconds", buckets=_span(100, 120000, 30),
                                     registry=r)
        self.job_duration = Gauge("volcano_e2e_job_scheduling_duration", "E2e job scheduling duration",
                                  ["job_name", "queue", "job_namespace"], registry=r)
        self.job_start_time = Gauge("volcano_e2e_job_scheduling_start_time", "E2e job scheduling start time",
                                    ["job_name", "queue", "job_namespace"], registry=r)
        self.job_last_time = Gauge("volcano_e2e_job_scheduling_last_time", "E2e job scheduling last time",
                                   ["job_name", "queue", "job_namespace"], registry=r)
        self.pod_creation_latency = Histogram("volcano_controller_job_to_pod_creation_latency_milliseconds",
                                              "Latency from the job's creation to its first pod's creation",
                                              buckets=_span(1, 60000, 24), registry=r)
        self.attempts = Counter("volcano_schedule_attempts_total",
                                "Number of attempts to schedule pods, by the result", ["result"], registry=r)
        self.unschedule_jobs = Gauge("volcano_unschedule_job_count", "Number of jobs could not be scheduled",
                                     registry=r)
        self.unschedule_tasks = Gauge("volcano_unschedule_task_count", "Number of tasks could not be scheduled",
                                      ["job_id"], registry=r)
        self.evictions = Counter("volcano_eviction_transactions_total", "Evictions committed", ["action"], registry=r)
        self.queue: dict[tuple[str, str], Gauge] = {}
        for kind in QUEUE_KINDS:
            self.queue[(kind, "cpu")] = Gauge(f"volcano_queue_{kind}_milli_cpu", f"{kind} CPU of the queue",
                                              ["queue_name"], registry=r)
            self.queue[(kind, "memory")] = Gauge(f"volcano_queue_{kind}_memory_bytes", f"{kind} memory of the queue",
                                                 ["queue_name"], registry=r)
            self.queue[(kind, "scalar")] = Gauge(f"volcano_queue_{kind}_scalar_resources",
                                                 f"{kind} scalar resources of the queue", ["queue_name", "resource"],
                                                 registry=r)
        self.pod_groups = {
            phase: Gauge(f"volcano_queue_pod_group_{phase.lower()}_count", f"PodGroups {phase} in the queue",
                         ["queue_name"], registry=r)
            for phase in POD_GROUP_PHASES
        }
        self.job_completed = Gauge("volcano_job_completed_phase_count", "Jobs in phase Completed", ["job_name", "queue_name"],
                                   registry=r)
        self.job_failed = Gauge("volcano_job_failed_phase_count", "Jobs in phase Failed", ["job_name", "queue_name"],
                                registry=r)
        self.preemption_attempts = Counter("volcano_total_preemption_attempts",
                                           "Sessions whose preempt or reclaim actions evicted pods", registry=r)
        self.preemption_victims = Gauge("volcano_pod_preemption_victims",
                                        "Pods evicted by the last session that preempted", registry=r)
        self.queue_gauges = QueueGauges()
        r.register(self.queue_gauges)
        self.sync_errors = Counter("caldera_agent_sync_errors_total", "Federation calls that failed after retries",
                                   ["operation"], registry=r)

    def observe_cycle(self, result: CycleResult, milliseconds: float) -> None:
        self.e2e_latency.observe(milliseconds)
        if result.bindings:
            self.attempts.labels("scheduled").inc(len(result.bindings))
        unschedulable_jobs = 0
        for job, report in result.jobs.items():
            stuck = report.pending if report.reason else 0
            if stuck:
                unschedulable_jobs += 1
                self.attempts.labels("unschedulable").inc(stuck)
            self.unschedule_tasks.labels(job).set(stuck)
        self.unschedule_jobs.set(unschedulable_jobs)

    def observe_evictions(self, evictions: list[str], reasons: dict[str, str]) -> None:
        """One transaction per action that evicted in this session; the action is the reason's
        prefix (``preempt: ...``, ``reclaim: ...``, ``gangpreempt: ...``)."""
        actions = {(reasons.get(pod, "").split(":", 1)[0].strip() or "preempt") for pod in evictions}
        for action in sorted(actions):
            self.evictions.labels(action if action.isidentifier() else "preempt").inc()
        if evictions:
            self.preemption_attempts.inc()
            self.preemption_victims.set(len(evictions))

    def observe_job_scheduled(self, name: str, namespace: str, queue: str, seconds: float) -> None:
        self.job_latency.observe(seconds * 1000.0)
        self.job_duration.labels(name, queue, namespace).set(seconds)

    def observe_job_placed(self, name: str, namespace: str, queue: str, first_seen: float, now: float) -> None:
        """A session placed tasks of the job (Volcano sets these on each allocate)."""
        self.job_start_time.labels(name, queue, namespace).set(first_seen)
        self.job_last_time.labels(name, queue, namespace).set(now)

    def observe_first_pod(self, seconds: float) -> None:
        self.pod_creation_latency.observe(seconds * 1000.0)

    def set_job_phase(self, name: str, namespace: str, queue: str, phase: str) -> None:
        """``volcano_job_{completed,failed}_phase_count`` (job_name is ``namespace/name`` as in Volcano)."""
        job = f"{namespace}/{name}"
        if phase == "Completed":
            self.job_completed.labels(job, queue).set(1)
        elif phase == "Failed":
            self.job_failed.labels(job, queue).set(1)

    def forget_job(self, name: str, namespace: str, pod_group: str) -> None:
        """The job is gone (its Work deleted and its pods with it): its series go too, as Volcano's
        ``DeleteJobMetrics`` drops them when a job leaves the cache (else every job ever run keeps
        five label children, for as long as the agent runs)."""
        job = {"job_name": name, "job_namespace": namespace}
        for gauge in (self.job_duration, self.job_start_time, self.job_last_time):
            _remove_children(gauge, ("job_name", "queue", "job_namespace"), job)
        for gauge in (self.job_completed, self.job_failed):
            _remove_children(gauge, ("job_name", "queue_name"), {"job_name": f"{namespace}/{name}"})
        self.unschedule_tasks.remove(f"{namespace}/{pod_group}")

    def set_queues(self, summaries: Iterable[Mapping[str, Any]]) -> None:
        summaries = list(summaries)
        self.queue_gauges.update(summaries)
        for entry in summaries:
            name = str(entry.get("name"))
            for kind, field in (("allocated", "allocated"), ("deserved", "deserved"), ("capacity", "capability")):
                values = entry.get(field) or {}
                for resource, quantity in values.items():
                    amount = to_internal(resource, quantity)
                    if resource == "cpu":
                        self.queue[(kind, "cpu")].labels(name).set(amount)
                    elif resource == "memory":
                        self.queue[(kind, "memory")].labels(name).set(amount)
                    else:
                        self.queue[(kind, "scalar")].labels(name, resource).set(amount)

    def set_pod_groups(self, phases_by_queue: Mapping[str, Mapping[str, int]]) -> None:
        for phase, gauge in self.pod_groups.items():
            for queue, counts in phases_by_queue.items():
                gauge.labels(queue).set(counts.get(phase, 0))

    def render(self) -> bytes:
        return generate_latest(self.registry)


def _remove_children(metric: Gauge, names: tuple[str, ...], match: Mapping[str, str]) -> None:
    """Remove every labelled child of ``metric`` whose labels include ``match`` (whatever the others,
    e.g. the queue, were when it was set). ``names`` is the metric's label order."""
    for family in metric.collect():
        for sample in family.samples:
            if all(sample.labels.get(k) == v for k, v in match.items()):
                metric.remove(*(sample.labels[n] for n in names))

