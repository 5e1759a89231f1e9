"""``placement_trigger``: why a job is (re)placed, as a table over binding and job states."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from federation.controllers import binding as b
from federation.controllers import common as c
from federation.controllers.triggers import Attempt, placement_trigger

NOW = 1_000_000.0
POLICY = {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
          "metadata": {"name": "p", "namespace": "default"},
          "spec": {"placement": {"clusterAffinity": {"clusterNames": ["a", "b"]}}}}
JOB = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
       "metadata": {"name": "j", "namespace": "default", "uid": "u1", "generation": 1},
       "spec": {"minAvailable": 2, "tasks": [{"name": "worker", "replicas": 2}]}}
READY = {"a": {"metadata": {"name": "a"}, "spec": {}}, "b": {"metadata": {"name": "b"}, "spec": {}}}


def placed_binding(**status: Any) -> dict[str, Any]:
    """A binding as the controller leaves it after a successful placement on a and b."""
    clusters = [{"name": "a", "replicas": 1}, {"name": "b", "replicas": 1}]
    rb = b.binding_body(JOB, POLICY, None, clusters, 1, {"clusters": {}}, NOW - 60, placed=True)
    scheduled = {"type": "Scheduled", "status": "True", "reason": "Success"}
    rb["status"] = {"conditions": [scheduled], "schedulerObservedGeneration": 1,
                    "lastScheduledTime": c.rfc3339(NOW - 60), **status}
    return rb


def unschedulable(rb: dict[str, Any]) -> dict[str, Any]:
    rb["status"]["conditions"] = [{"type": "Scheduled", "status": "False", "reason": "NoClusterFit"}]
    return rb


def with_annotations(rb: dict[str, Any], **notes: str) -> dict[str, Any]:
    rb["metadata"]["annotations"].update(notes)
    return rb


def with_job(**meta: Any) -> dict[str, Any]:
    job = copy.deepcopy(JOB)
    job["metadata"].update(meta)
    return job


CASES = [
    # (name, job, binding, clusters, attempt, cluster version, expected reason, delay > 0)
    ("no binding yet", JOB, None, READY, None, 0, "initial placement", False),
    ("placed and nothing changed", JOB, placed_binding(), READY, None, 0, None, False),
    ("spec changed", with_job(generation=2), placed_binding(), READY, None, 0, "job spec changed", False),
    ("finished job never moves", {**with_job(generation=2), "status": {"state": {"phase": "Completed"}}},
     placed_binding(), {"a": READY["a"]}, None, 0, None, False),
    ("cluster deleted", JOB, placed_binding(), {"a": READY["a"]}, None, 0, "cluster lost", False),
    ("reservation cancelled waits for retry-after",
     JOB, with_annotations(placed_binding(), **{c.CANCELLED_GENERATION: "1",
                                               c.RETRY_AFTER: c.rfc3339(NOW + 30)}),
     READY, None, 0, "reservation cancelled", True),
    ("unschedulable, waiting in the scheduling queue", JOB, unschedulable(placed_binding()), READY,
     Attempt(1, NOW + 5, 7, "no fit"), 8, None, False),
    ("unschedulable, no attempt on record (controller restarted)", JOB, unschedulable(placed_binding()), READY,
     None, 8, "retry", False),
    ("unschedulable, an exclusion lapsed", JOB, unschedulable(placed_binding()), READY,
     Attempt(1, NOW + 5, 7, "no fit", wake=NOW - 1), 7, "retry", False),
]


@pytest.mark.parametrize("name,job,rb,clusters,attempt,version,reason,delayed", CASES, ids=[c[0] for c in CASES])
def test_placement_trigger(name: str, job: dict[str, Any], rb: dict[str, Any] | None,
                           clusters: dict[str, Any], attempt: Attempt | None, version: int,
                           reason: str | None, delayed: bool) -> None:
    got, _previous, delay, _wake = placement_trigger(job, rb, POLICY, clusters, attempt, version, NOW)
    if reason is None:
        assert got is None
    else:
        assert isinstance(got, str) and got.startswith(reason), got
    assert (delay > 0) == delayed


def test_policy_change_comes_before_a_lost_cluster() -> None:
    other = copy.deepcopy(POLICY)
    other["spec"]["placement"]["clusterAffinity"]["clusterNames"] = ["a"]
    got, *_ = placement_trigger(JOB, placed_binding(), other, {"a": READY["a"]}, None, 0, NOW)
    assert got == "policy changed"


def test_an_unschedulable_job_popped_from_the_queue_is_tried_at_once() -> None:
    got, _previous, delay, _wake = placement_trigger(JOB, unschedulable(placed_binding()), POLICY, READY,
                                                     Attempt(1, NOW + 3600, 7, "no fit"), 7, NOW, queued=True)
    assert got == "retry from the scheduling queue" and delay == 0.0
