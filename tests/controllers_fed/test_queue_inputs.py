"""Pure inputs of the scheduling queue: which events move waiting jobs, and schedulePriority resolution."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from federation.controllers import binding_priority as bp
from federation.controllers import requeue_events as ev


def cluster(free_gpus: int = 0, ready: bool = True, taints: list[dict[str, str]] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": "c1"}, "spec": {"taints": taints or []},
            "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
                       "resourceSummary": {"allocatable": {"nvidia.com/gpu": "8"},
                                           "allocated": {"nvidia.com/gpu": str(8 - free_gpus)}},
                       "nodeShapes": [{"count": 1, "free": {"nvidia.com/gpu": str(free_gpus)}}]}}


NOT_READY = {"key": "cluster.karmada.io/not-ready", "effect": "NoSchedule"}

CLUSTER_CASES = [
    ("joined", "ADDED", cluster(), None, "joined"),
    ("deleted", "DELETED", cluster(), cluster(), None),
    ("became Ready", "MODIFIED", cluster(), cluster(ready=False), "became Ready"),
    ("lost a taint", "MODIFIED", cluster(), cluster(taints=[NOT_READY]), "lost a taint"),
    ("gained a taint", "MODIFIED", cluster(taints=[NOT_READY]), cluster(), None),
    ("more free GPUs", "MODIFIED", cluster(4), cluster(0), "more nvidia.com/gpu"),
    ("fewer free GPUs", "MODIFIED", cluster(0), cluster(4), None),
    ("same report again", "MODIFIED", cluster(4), cluster(4), None),
]


@pytest.mark.parametrize(("kind", "new", "old", "needle"), [c[1:] for c in CLUSTER_CASES],
                         ids=[c[0] for c in CLUSTER_CASES])
def test_cluster_events(kind: str, new: dict[str, Any], old: dict[str, Any] | None, needle: str | None) -> None:
    reason = ev.cluster_event(kind, new, old)
    assert (reason is None) if needle is None else (reason is not None and needle in reason), reason


def job(phase: str | None) -> dict[str, Any]:
    return {"metadata": {"name": "j", "namespace": "ns"}, "status": {"state": {"phase": phase}} if phase else {}}


@pytest.mark.parametrize(("kind", "new", "old", "moves"), [
    ("DELETED", job("Running"), job("Running"), True),
    ("MODIFIED", job("Completed"), job("Running"), True),
    ("MODIFIED", job("Completed"), job("Completed"), False),
    ("MODIFIED", job("Running"), job("Pending"), False),
    ("ADDED", job(None), None, False),
])
def test_job_events(kind: str, new: dict[str, Any], old: dict[str, Any] | None, moves: bool) -> None:
    assert (ev.job_event(kind, new, old) is not None) == moves


def test_policy_events() -> None:
    pp = {"kind": "PropagationPolicy", "metadata": {"name": "p", "namespace": "ns"}, "spec": {"priority": 1}}
    changed = copy.deepcopy(pp)
    changed["spec"]["priority"] = 2
    assert ev.policy_event("MODIFIED", pp, pp) is None
    assert "changed" in (ev.policy_event("MODIFIED", changed, pp) or "")
    assert "added" in (ev.policy_event("ADDED", pp, None) or "")


def pc(name: str, value: int, policy: str | None = None, default: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {"metadata": {"name": name}, "value": value, "globalDefault": default}
    if policy:
        out["preemptionPolicy"] = policy
    return out


CLASSES = {"high": pc("high", 1000), "calm": pc("calm", 500, "Never")}
WITH_DEFAULTS = {**CLASSES, "d1": pc("d1", 7, default=True), "d2": pc("d2", 3, "Never", default=True)}
POD_JOB = {"spec": {"tasks": [{"template": {"spec": {"priorityClassName": "calm"}}}]}}


def policy(source: str | None = None, name: str | None = None) -> dict[str, Any]:
    if source is None:
        return {"spec": {}}
    return {"spec": {"schedulePriority": {"priorityClassSource": source, "priorityClassName": name}}}


PRIORITY_CASES = [
    ("no schedulePriority", policy(), {}, CLASSES, (0, "Never", None, False)),
    ("KubePriorityClass", policy("KubePriorityClass", "high"), {}, CLASSES,
     (1000, "PreemptLowerPriority", {"priority": 1000, "preemptionPolicy": "PreemptLowerPriority"}, False)),
    ("class with Never", policy("KubePriorityClass", "calm"), {}, CLASSES,
     (500, "Never", {"priority": 500, "preemptionPolicy": "Never"}, False)),
    ("missing class, no global default", policy("KubePriorityClass", "gone"), {}, CLASSES,
     (0, "Never", {"priority": 0, "preemptionPolicy": "Never"}, True)),
    ("missing class: the smallest global default", policy("KubePriorityClass", "gone"), {}, WITH_DEFAULTS,
     (3, "Never", {"priority": 3, "preemptionPolicy": "Never"}, True)),
    ("PodPriorityClass from the task template", policy("PodPriorityClass"), POD_JOB, CLASSES,
     (500, "Never", {"priority": 500, "preemptionPolicy": "Never"}, False)),
    ("PodPriorityClass, pods name none: global default", policy("PodPriorityClass"), {"spec": {}}, WITH_DEFAULTS,
     (3, "Never", {"priority": 3, "preemptionPolicy": "Never"}, False)),
    ("unknown source (old object)", policy("FederatedPriorityClass", "high"), {}, CLASSES,
     (0, "Never", {"priority": 0, "preemptionPolicy": "Never"}, True)),
]


@pytest.mark.parametrize(("pol", "job_obj", "classes", "expected"), [c[1:] for c in PRIORITY_CASES],
                         ids=[c[0] for c in PRIORITY_CASES])
def test_schedule_priority(pol: dict[str, Any], job_obj: dict[str, Any], classes: dict[str, Any],
                           expected: tuple[int, str, dict[str, Any] | None, bool]) -> None:
    got = bp.resolve(pol, job_obj, classes)
    assert (got.priority, got.preemption_policy, got.spec(), bool(got.fallback)) == expected
