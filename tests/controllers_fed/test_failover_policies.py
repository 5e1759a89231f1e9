"""A lost cluster's shares are evicted pods: the Job's PodEvicted policy decides what happens."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from federation.controllers.failover import decide
from federation.controllers.status_aggregate import aggregate
from tests.controllers_fed.conftest import DATA, SEED, Fed, load, until
from tests.controllers_fed.test_placement_dispatch import _reasons, _works_of_generation

RB = {"spec": {"clusters": [
    {"name": "a", "replicas": 3, "components": [{"name": "master", "replicas": 1}, {"name": "worker", "replicas": 2}]},
    {"name": "b", "replicas": 6, "components": [{"name": "master", "replicas": 0}, {"name": "worker", "replicas": 6}]},
]}}


def _job(job_policies: list[dict[str, Any]] | None = None,
         task_policies: dict[str, list[dict[str, Any]]] | None = None) -> dict[str, Any]:
    tasks = [{"name": t, "replicas": n, **({"policies": task_policies[t]} if t in (task_policies or {}) else {})}
             for t, n in (("master", 1), ("worker", 8))]
    spec: dict[str, Any] = {"tasks": tasks}
    if job_policies is not None:
        spec["policies"] = job_policies
    return {"spec": spec}


# (name, job policies, task policies, lost cluster, expected action, expected phase, expected source)
DECIDE_CASES: list[tuple[str, Any, Any, str, str, str, str]] = [
    ("no policy restarts the whole job", None, None, "a", "RestartJob", "", "default"),
    ("job policy AbortJob", [{"event": "PodEvicted", "action": "AbortJob"}], None, "b", "AbortJob", "Aborted",
     "job policy"),
    ("job policy TerminateJob from an events list",
     [{"events": ["PodFailed", "PodEvicted"], "action": "TerminateJob"}], None, "a", "TerminateJob", "Terminated",
     "job policy"),
    ("wildcard event CompleteJob", [{"event": "*", "action": "CompleteJob"}], None, "a", "CompleteJob", "Completed",
     "job policy"),
    ("a policy for another event does not apply", [{"event": "PodFailed", "action": "AbortJob"}], None, "a",
     "RestartJob", "", "default"),
    ("exit-code policies do not apply", [{"exitCode": 3, "action": "AbortJob"}], None, "a", "RestartJob", "",
     "default"),
    ("task policy before the job's", [{"event": "PodEvicted", "action": "AbortJob"}],
     {"worker": [{"event": "PodEvicted", "action": "RestartJob"}]}, "b", "RestartJob", "", "task worker policy"),
    ("only the affected tasks' policies count", [{"event": "PodEvicted", "action": "RestartJob"}],
     {"master": [{"event": "PodEvicted", "action": "TerminateJob"}]}, "b", "RestartJob", "", "job policy"),
    ("an affected task without a policy does not outvote one with it", None,
     {"worker": [{"event": "PodEvicted", "action": "AbortJob"}]}, "a", "AbortJob", "Aborted", "task worker policy"),
    ("restart actions restart the whole gang", [{"event": "PodEvicted", "action": "RestartTask"}], None, "a",
     "RestartJob", "", "job policy"),
]


@pytest.mark.parametrize("case", DECIDE_CASES, ids=[c[0] for c in DECIDE_CASES])
def test_decide_table(case: tuple[str, Any, Any, str, str, str, str]) -> None:
    _name, job_policies, task_policies, lost, action, phase, source = case
    result = decide(_job(job_policies, task_policies), RB, {lost: "cluster deleted"})
    assert (result.action, result.phase, result.source) == (action, phase, source)
    assert f"cluster {lost} lost (cluster deleted): PodEvicted" in result.message


async def _setup(fed: Fed, name: str, policies: list[dict[str, Any]] | None) -> dict[str, Any]:
    for cluster in load(DATA / "clusters-small-a.yaml"):
        await fed.apply(cluster)
    for doc in load(SEED / "propagationpolicy-volcano-job-policy.yaml"):
        await fed.apply(doc)
    job = load(SEED / "job-gpu-dist-training.yaml")[0]
    job["metadata"]["name"] = name
    if policies is not None:
        job["spec"]["policies"] = policies
    return await fed.apply(job)


@pytest.mark.parametrize("action, phase", [("AbortJob", "Aborted"), ("TerminateJob", "Terminated"),
                                           ("CompleteJob", "Completed")])
async def test_lost_cluster_ends_the_job_under_its_policy(fed: Fed, action: str, phase: str) -> None:
    name = f"ends-{phase.lower()}"
    job = await _setup(fed, name, [{"event": "PodEvicted", "action": action}])
    await until(lambda: _works_of_generation(fed, name, 1, 2), "generation 1 shares")
    await fed.gang("cluster-a", name, 1, "Running")
    await fed.gang("cluster-b", name, 1, "Running")
    await fed.patch("cluster.karmada.io/v1alpha1", "Cluster", "cluster-a",
                    {"spec": {"taints": [{"key": "cluster.karmada.io/not-ready", "effect": "NoExecute"}]}})
    assert await until(lambda: _no_works(fed, name), "every Work withdrawn (on both clusters)")
    rb = await fed.rb(name)
    ended = json.loads(rb["metadata"]["annotations"]["caldera.io/ended"])
    assert ended["phase"] == phase and ended["action"] == action
    assert ended["message"].startswith(f"cluster cluster-a lost (untolerated taint cluster.karmada.io/not-ready:"
                                       f"NoExecute): PodEvicted → {action}")
    assert rb["spec"]["clusters"] == [] and rb["metadata"]["annotations"]["caldera.io/placement-generation"] == "2"
    scheduled = next(c for c in rb["status"]["conditions"] if c["type"] == "Scheduled")
    assert (scheduled["status"], scheduled["reason"]) == ("False", phase)
    assert await until(lambda: _reasons(fed, name, phase), f"a {phase} event")
    # what the status aggregator makes of it
    status = aggregate(job, rb, [], datetime.now(UTC)).status
    assert status["state"]["phase"] == phase and status["state"]["reason"] == "ClusterLost"
    assert f"PodEvicted → {action}" in status["state"]["message"]
    # the cluster coming back does not place the ended job again
    await fed.patch("cluster.karmada.io/v1alpha1", "Cluster", "cluster-a", {"spec": {"taints": []}})
    await fed.patch("cluster.karmada.io/v1alpha1", "Cluster", "cluster-b", {"metadata": {"labels": {"poke": "1"}}})
    # (a job applied after the Cluster events gets placed: the controller has seen them by then)
    probe = load(SEED / "job-gpu-dist-training.yaml")[0]
    probe["metadata"]["name"] = f"probe-{phase.lower()}"
    await fed.apply(probe)
    await until(lambda: _works_of_generation(fed, probe["metadata"]["name"], 1, 2), "the probe job placed")
    later = await fed.rb(name)
    assert later["metadata"]["annotations"]["caldera.io/placement-generation"] == "2"
    assert later["spec"]["clusters"] == []
    assert not await fed.works(name)


async def test_restart_job_policy_replaces_the_whole_job(fed: Fed) -> None:
    await _setup(fed, "restarts", [{"event": "PodEvicted", "action": "RestartJob"}])
    await until(lambda: _works_of_generation(fed, "restarts", 1, 2), "generation 1 shares")
    await fed.delete("cluster.karmada.io/v1alpha1", "Cluster", "cluster-a")
    works = await until(lambda: _works_of_generation(fed, "restarts", 2, 1), "the job re-placed on cluster-b")
    assert list(works) == ["cluster-b"]
    rb = await fed.rb("restarts")
    assert "caldera.io/ended" not in rb["metadata"]["annotations"]


async def _no_works(fed: Fed, job: str) -> bool:
    return not await fed.works(job)
