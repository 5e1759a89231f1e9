"""The exposition of the federation and of an agent passes ``promtool check metrics``, and carries the
names and labels the seed's alerts and Caldera's dashboards read."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from federation import metrics
from federation.fleet_metrics import FleetCollector, fleet_families
from member_agent.metrics import AgentMetrics
from tests.monitoring.tools import needs_promtool, promtool

NOW = datetime(2026, 12, 3, 8, 0, 0, tzinfo=UTC).timestamp()
CLUSTERS = [
    {"metadata": {"name": "cluster-a"},
     "status": {"conditions": [{"type": "Ready", "status": "True"}],
                "nodeSummary": {"totalNum": 8, "readyNum": 8},
                "resourceSummary": {"allocatable": {"cpu": "512", "memory": "4Ti", "pods": "880",
                                                    "nvidia.com/gpu": "64"},
                                    "allocated": {"cpu": "16500m", "memory": "64Gi", "pods": "3"}},
                "gpus": [{"product": "NVIDIA-A100", "total": 64, "free": 40, "fragmented": 8}]}},
    {"metadata": {"name": "cluster-b"},
     "status": {"conditions": [{"type": "Ready", "status": "Unknown"}], "nodeSummary": {"totalNum": 16}}},
]
JOBS = [
    {"metadata": {"namespace": "default", "name": "stuck", "creationTimestamp": "2026-12-03T07:00:00Z"},
     "spec": {"queue": "ai-training"},
     "status": {"state": {"phase": "Pending", "lastTransitionTime": "2026-12-03T07:20:00Z"}}},
    {"metadata": {"namespace": "default", "name": "runs"}, "spec": {},
     "status": {"state": {"phase": "Running"}}},
]
BINDINGS = [
    {"metadata": {"namespace": "default", "name": "runs-job", "annotations": {"caldera.io/placed-at":
                                                                               "2026-12-03T07:55:00Z"}},
     "spec": {"clusters": [{"name": "cluster-a", "replicas": 4}, {"name": "cluster-b", "replicas": 12}]},
     "status": {"conditions": [{"type": "Scheduled", "status": "True"}]}},
]
WORKS = [
    {"metadata": {"labels": {"caldera.io/job": "default.runs"}}, "spec": {"placement": {"hold": True}}},
    {"metadata": {"labels": {"caldera.io/job": "default.runs"}}, "spec": {"placement": {"hold": False}}},
    {"metadata": {"labels": {"caldera.io/job": "default.gone"}},
     "spec": {"placement": {"hold": True, "cancelled": True}}},
]
QUEUES = [{"name": "ai-training", "allocated": {"cpu": "8", "nvidia.com/gpu": "24"},
           "capability": {"cpu": "200", "memory": "1024Gi", "nvidia.com/gpu": "32"}},
          {"name": "inference", "allocated": {}, "capability": {"volcano.sh/vgpu-number": "8"}}]


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


#: a Queue as the federation writes its fleet status (docs/queues.md)
FLEET_QUEUES = [{"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "ai-training"},
                 "spec": {"weight": 3, "capability": {"nvidia.com/gpu": "32"}},
                 "status": {"state": "Open", "allocated": {"nvidia.com/gpu": "24"}, "deserved": {"nvidia.com/gpu": "28"},
                            "allocatedByCluster": {"cluster-a": {"nvidia.com/gpu": "8"},
                                                   "cluster-b": {"nvidia.com/gpu": "16"}}}}]


def fleet_text() -> str:
    registry = CollectorRegistry()
    registry.register(FleetCollector(lambda info: {"Cluster": CLUSTERS, "Job": JOBS, "ResourceBinding": BINDINGS,
                                                   "Work": WORKS, "Queue": FLEET_QUEUES}[info.kind], lambda: NOW))
    return generate_latest(registry).decode()


def agent_text() -> str:
    agent = AgentMetrics()
    agent.set_queues(QUEUES)
    agent.set_pod_groups({"ai-training": {"Running": 1, "Pending": 2}})
    agent.set_job_phase("done", "default", "ai-training", "Completed")
    agent.set_job_phase("broke", "default", "ai-training", "Failed")
    agent.observe_job_scheduled("done", "default", "ai-training", 1.5)
    agent.observe_first_pod(0.2)
    agent.observe_evictions(["default/p1", "default/p2"], {"default/p1": "preempt: for x", "default/p2": "preempt: y"})
    return agent.render().decode()


def test_fleet_gauges_from_the_store() -> None:
    got = samples(fleet_text())
    assert got[("cluster_ready_state", (("cluster_name", "cluster-a"),))] == 1
    fleet_gpu = (("nvidia_com_gpu", "nvidia.com/gpu"), ("queue_name", "ai-training"), ("resource", "nvidia.com/gpu"),
                 ("scope", "fleet"))
    assert (got[("volcano_queue_allocated", fleet_gpu)], got[("volcano_queue_capability", fleet_gpu)],
            got[("volcano_queue_deserved", fleet_gpu)]) == (24, 32, 28)  # the fleet's numbers, one series per queue
    assert got[("cluster_ready_state", (("cluster_name", "cluster-b"),))] == 0
    assert got[("cluster_cpu_allocated_number", (("cluster_name", "cluster-a"),))] == 16.5
    assert got[("cluster_memory_allocatable_bytes", (("cluster_name", "cluster-a"),))] == 4 * 2**40
    assert got[("caldera_cluster_resource_allocatable", (("cluster", "cluster-a"), ("nvidia_com_gpu", "nvidia.com/gpu"),
                                                         ("resource", "nvidia.com/gpu")))] == 64
    assert got[("caldera_cluster_gpus_fragmented", (("cluster", "cluster-a"), ("model", "NVIDIA-A100")))] == 8
    # the seed's VolcanoJobPendingTooLong reads job_name; Pending since the last phase change (40 min)
    assert got[("volcano_job_pending_duration_seconds",
                (("job_name", "stuck"), ("job_namespace", "default"), ("queue", "ai-training")))] == 2400
    assert not any(name == "volcano_job_pending_duration_seconds" and ("job_name", "runs") in labels
                   for name, labels in got)
    assert got[("caldera_job_share_replicas", (("cluster", "cluster-b"), ("job_name", "runs"),
                                               ("job_namespace", "default")))] == 12
    assert got[("caldera_cluster_shares", (("cluster", "cluster-a"),))] == 1
    assert got[("caldera_two_phase_held_gangs", ())] == 1  # the cancelled hold does not count
    assert got[("caldera_two_phase_hold_seconds", (("job_name", "runs"), ("job_namespace", "default")))] == 300


def test_fleet_families_of_an_empty_store_are_valid() -> None:
    assert all(f.name for f in fleet_families([], [], [], [], NOW))


def test_agent_queue_gauges_match_the_seed_selector() -> None:
    got = samples(agent_text())
    gpu = (("nvidia_com_gpu", "nvidia.com/gpu"), ("queue_name", "ai-training"), ("resource", "nvidia.com/gpu"),
           ("scope", "cluster"))
    assert got[("volcano_queue_allocated", gpu)] == 24
    assert got[("volcano_queue_capability", gpu)] == 32  # same labels: the seed's division pairs them
    assert got[("volcano_queue_capability", (("memory", "memory"), ("queue_name", "ai-training"),
                                             ("resource", "memory"), ("scope", "cluster")))] == 1024 * 2**30
    # a resource named in the capability but unused is exported as allocated 0 (HAMi's vGPU here)
    vgpu = (("queue_name", "inference"), ("resource", "volcano.sh/vgpu-number"), ("scope", "cluster"),
            ("volcano_sh_vgpu_number", "volcano.sh/vgpu-number"))
    assert got[("volcano_queue_allocated", vgpu)] == 0
    assert got[("volcano_total_preemption_attempts_total", ())] == 1
    assert got[("volcano_pod_preemption_victims", ())] == 2
    assert got[("volcano_queue_capacity_scalar_resources", (("queue_name", "ai-training"),
                                                            ("resource", "nvidia.com/gpu")))] == 32000


@pytest.mark.parametrize(("generation", "trigger", "schedule_type", "event"), [
    (0, "initial placement", "FirstSchedule", "initial"),
    (1, "job spec changed", "ReconcileSchedule", "spec_changed"),
    (2, "cluster lost (cluster-b: deleted)", "FailoverSchedule", "cluster_lost"),
    (3, "reservation cancelled", "ReconcileSchedule", "reservation_cancelled"),
    (1, "retry after clusters changed", "ReconcileSchedule", "cluster_changed"),
    (1, "reschedule requested (rescheduleTriggeredAt)", "ReconcileSchedule", "reschedule_requested"),
    (1, "something new", "ReconcileSchedule", "other"),
])
def test_placement_labels_are_bounded(generation: int, trigger: str, schedule_type: str, event: str) -> None:
    assert metrics.schedule_type(generation, trigger) == schedule_type
    assert metrics.trigger_event(trigger) == event


def test_decision_metrics_are_registered() -> None:
    metrics.two_phase_outcome("released", 4.0)
    metrics.observe_schedule("success", metrics.schedule_type(0, "initial placement"), 0.02)
    metrics.INCOMING_BINDINGS.labels(event=metrics.trigger_event("cluster lost (cluster-b: deleted)")).inc()
    got = samples(generate_latest(metrics.REGISTRY).decode())
    assert got[("caldera_cross_cluster_gang_wait_seconds_count", (("outcome", "released"),))] >= 1
    assert got[("karmada_scheduler_schedule_attempts_total", (("result", "success"),
                                                              ("schedule_type", "FirstSchedule")))] >= 1
    assert got[("karmada_scheduler_queue_incoming_bindings_total", (("event", "cluster_lost"),))] >= 1


def volcano_lint_exception(finding: str) -> bool:
    """Volcano's own names break promtool's naming lint (``*_milliseconds``, gauges ending in ``_count``);
    they stay as Volcano spells them so Volcano's dashboards work. Nothing else may draw a finding."""
    name = finding.split()[0].removesuffix("_created")
    return name.startswith("volcano_") and (
        (name.endswith("_milliseconds") and 'base unit "seconds"' in finding)
        or (name.endswith("_count") and '"_count" suffix' in finding))


def lint_findings(text: str) -> list[str]:
    """promtool's findings on an exposition that are not Volcano's names; fails if it does not parse."""
    done = promtool("check", "metrics", stdin=text)
    assert done.returncode in (0, 3), f"not parseable: {done.stdout}{done.stderr}"  # 3: lint findings only
    return [line for line in done.stderr.splitlines() if line.strip() and not volcano_lint_exception(line)]


@needs_promtool
def test_exposition_passes_promtool_check_metrics() -> None:
    for name, text in (("federation", generate_latest(metrics.REGISTRY).decode() + fleet_text()),
                       ("agent", agent_text())):
        unexpected = lint_findings(text)
        assert not unexpected, f"{name}: " + "\n".join(unexpected)


def test_volcano_exceptions_are_only_volcano_names() -> None:
    assert volcano_lint_exception('volcano_unschedule_job_count non-histogram and non-summary metrics should not '
                                  'have "_count" suffix')
    assert not volcano_lint_exception('caldera_cluster_gpus_total non-counter metrics should not have "_total" suffix')
    assert not volcano_lint_exception('caldera_jobs_count non-histogram and non-summary metrics should not have '
                                      '"_count" suffix')
