"""The agent's call into the Volcano Job controller: one pure ``plan`` per Work per pass.

``plan(record, podgroup, pods, now) -> JobPlan`` says which pods to create and delete, the
desired PodGroup, and the Job status. The full controller (policies, maxRetry, job plugins'
environment) is ``member_agent/controllers`` (another engineer's area); until it exports a
``reconcile`` this module uses :func:`standin_plan`, a deliberately small Volcano-shaped
controller: PodGroup ``<job>-<uid>`` with ``minMember = minAvailable``; pods
``<job>-<task>-<global index>`` created once the PodGroup has left ``Pending``; Job phase
Pending → Running (running + finished ≥ minAvailable) → Completed / Failed (all pods finished:
succeeded ≥ minAvailable or not). Pods always carry the Work uid and placement generation
labels the agent uses to find them after a restart.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Optional

from member_agent.cluster.clock import rfc3339
from member_agent.cluster.gateway import GROUP_NAME_ANNOTATION, Obj, pod_phase, pod_terminating
from member_agent.works import GENERATION_LABEL, WORK_UID_LABEL, WorkRecord

PODGROUP_API = "scheduling.volcano.sh/v1beta1"
TERMINAL_JOB_PHASES = ("Completed", "Failed", "Terminated", "Aborted")


@dataclass
class JobPlan:
    pods_to_create: list[Obj] = field(default_factory=list)
    pods_to_delete: list[str] = field(default_factory=list)  # pod names in the job's namespace
    podgroup: Optional[Obj] = None
    job_status: Obj = field(default_factory=dict)
    events: list[tuple[str, str, str]] = field(default_factory=list)  # (type, reason, message)


def _annotations_json(job: Obj, key: str) -> dict[str, int]:
    raw = ((job.get("metadata") or {}).get("annotations") or {}).get(key)
    try:
        value = json.loads(raw) if raw else {}
    except ValueError:
        return {}
    return {str(k): int(v) for k, v in value.items()} if isinstance(value, dict) else {}


def podgroup_name(job: Obj) -> str:
    md = job.get("metadata") or {}
    uid = md.get("uid") or ""
    return f"{md.get('name')}-{uid}" if uid else str(md.get("name"))


def desired_pods(job: Obj) -> dict[str, tuple[Obj, int]]:
    """Pod name -> (task, global index)."""
    offsets = _annotations_json(job, "caldera.io/task-offsets")
    out: dict[str, tuple[Obj, int]] = {}
    name = (job.get("metadata") or {}).get("name")
    for task in (job.get("spec") or {}).get("tasks") or []:
        offset = offsets.get(task.get("name", ""), 0)
        for i in range(int(task.get("replicas", 0))):
            out[f"{name}-{task['name']}-{offset + i}"] = (task, offset + i)
    return out


def build_pod(job: Obj, record: WorkRecord, task: Obj, index: int, pod_name: str, pg_name: str) -> Obj:
    md = job.get("metadata") or {}
    template = copy.deepcopy(task.get("template") or {})
    tmd = template.get("metadata") or {}
    spec = template.get("spec") or {}
    spec.setdefault("schedulerName", (job.get("spec") or {}).get("schedulerName") or "volcano")
    if (job.get("spec") or {}).get("priorityClassName"):
        spec.setdefault("priorityClassName", job["spec"]["priorityClassName"])
    for container in spec.get("containers") or []:
        env = container.setdefault("env", [])
        names = {e.get("name") for e in env}
        for key in ("VC_TASK_INDEX", "VK_TASK_INDEX"):
            if key not in names:
                env.append({"name": key, "value": str(index)})
    annotations = dict(tmd.get("annotations") or {})
    annotations.update({
        GROUP_NAME_ANNOTATION: pg_name,
        "volcano.sh/task-spec": task.get("name", ""),
        "volcano.sh/task-index": str(index),
        "volcano.sh/job-name": md.get("name", ""),
        "volcano.sh/queue-name": (job.get("spec") or {}).get("queue") or "default",
        "volcano.sh/job-version": "0",
    })
    for key in ("caldera.io/sim-duration", "caldera.io/sim-exit-code", "caldera.io/sim-start-delay"):
        value = (md.get("annotations") or {}).get(key)
        if value is not None:
            annotations.setdefault(key, value)
    labels = dict(tmd.get("labels") or {})
    labels.update({
        "volcano.sh/job-name": md.get("name", ""),
        "volcano.sh/job-namespace": md.get("namespace", ""),
        "volcano.sh/task-spec": task.get("name", ""),
        "volcano.sh/task-index": str(index),
        "volcano.sh/queue-name": (job.get("spec") or {}).get("queue") or "default",
        WORK_UID_LABEL: record.uid,
        GENERATION_LABEL: str(record.placement.generation),
    })
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": pod_name, "namespace": md.get("namespace"), "labels": labels, "annotations": annotations},
        "spec": spec,
    }


def _counts(pods: list[Obj]) -> dict[str, int]:
    counts = {"pending": 0, "running": 0, "succeeded": 0, "failed": 0, "terminating": 0, "unknown": 0}
    for pod in pods:
        phase = pod_phase(pod)
        if pod_terminating(pod) and phase in ("Pending", "Running"):
            counts["terminating"] += 1
        elif phase in ("Pending", "Running", "Succeeded", "Failed"):
            counts[phase.lower()] += 1
        else:
            counts["unknown"] += 1
    return counts


def standin_plan(record: WorkRecord, podgroup: Optional[Obj], pods: list[Obj], now: float,
                 previous_status: Optional[Obj] = None) -> JobPlan:
    job = record.job or {}
    md = job.get("metadata") or {}
    spec = job.get("spec") or {}
    total = sum(int(t.get("replicas", 0)) for t in spec.get("tasks") or [])
    min_available = int(spec.get("minAvailable", total) or 0)
    pg_name = podgroup_name(job)
    phase_now = ((podgroup or {}).get("status") or {}).get("phase") or "Pending"
    desired_pg = {
        "apiVersion": PODGROUP_API, "kind": "PodGroup",
        "metadata": {"name": pg_name, "namespace": md.get("namespace"),
                     "annotations": {"caldera.io/work": record.key}},
        "spec": {
            "minMember": min_available,
            "minTaskMember": {t["name"]: int(t.get("minAvailable", t.get("replicas", 0)))
                              for t in spec.get("tasks") or []},
            "queue": spec.get("queue") or "default",
            **({"priorityClassName": spec["priorityClassName"]} if spec.get("priorityClassName") else {}),
        },
        "status": dict((podgroup or {}).get("status") or {"phase": "Pending"}),
    }
    plan = JobPlan(podgroup=desired_pg)
    previous = previous_status or {}
    old_phase = ((previous.get("state") or {}).get("phase")) or "Pending"
    desired = desired_pods(job)
    by_name = {p["metadata"]["name"]: p for p in pods}
    counts = _counts(pods)
    finished = counts["succeeded"] + counts["failed"]
    if old_phase in TERMINAL_JOB_PHASES:
        phase = old_phase
    elif total and finished >= total and not counts["pending"] and not counts["running"]:
        phase = "Completed" if counts["succeeded"] >= min_available else "Failed"
    elif counts["running"] + finished >= min_available and (counts["running"] or finished):
        phase = "Running"
    else:
        phase = "Pending"
    if phase not in TERMINAL_JOB_PHASES and phase_now != "Pending":
        for name, (task, index) in desired.items():
            if name not in by_name:
                plan.pods_to_create.append(build_pod(job, record, task, index, name, pg_name))
    for name, pod in by_name.items():
        if name not in desired and not pod_terminating(pod):
            plan.pods_to_delete.append(name)
    task_counts: dict[str, dict[str, dict[str, int]]] = {}
    for pod in pods:
        task = ((pod["metadata"].get("annotations") or {}).get("volcano.sh/task-spec")) or "default"
        bucket = task_counts.setdefault(task, {"phase": {}})["phase"]
        bucket[pod_phase(pod)] = bucket.get(pod_phase(pod), 0) + 1
    transition = (previous.get("state") or {}).get("lastTransitionTime") if phase == old_phase else None
    plan.job_status = {
        "state": {"phase": phase, "lastTransitionTime": transition or rfc3339(now)},
        "minAvailable": min_available,
        **counts,
        "version": int(previous.get("version", 0) or 0),
        "retryCount": int(previous.get("retryCount", 0) or 0),
        "taskStatusCount": task_counts,
    }
    if phase != old_phase:
        plan.events.append(("Normal", "JobStatusChanged", f"Job {md.get('namespace')}/{md.get('name')} is {phase}"))
    return plan


def plan(record: WorkRecord, podgroup: Optional[Obj], pods: list[Obj], now: float,
         previous_status: Optional[Obj] = None) -> JobPlan:
    """The plan for one Work's job (the stand-in until the controller exports ``reconcile``)."""
    result = standin_plan(record, podgroup, pods, now, previous_status)
    for pod in result.pods_to_create:
        labels = pod["metadata"].setdefault("labels", {})
        labels[WORK_UID_LABEL] = record.uid
        labels[GENERATION_LABEL] = str(record.placement.generation)
    return result


def job_phase(status: Obj) -> str:
    return str(((status.get("state") or {}).get("phase")) or "Pending")

