"""The demo's pure parts: what it applies, how it reads Works, how it times jobs, how it cleans up."""

from __future__ import annotations

import re
import signal
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from federation.demo.manifests import SIM_DURATION, clusters_from_file, demo_plan
from federation.demo.observe import JobView, Snapshot, Timeline, derived_phase, shares_by_job
from federation.demo.processes import ManagedProcess, StartupError, leftover_processes
from policies.codec import admit_all, decode_text

TERMINAL = {"Completed", "Failed", "Succeed"}


def test_plan_applies_the_seed_objects_with_short_durations() -> None:
    plan = demo_plan()
    kinds = [(m["kind"], m["metadata"]["name"]) for m in plan.manifests]
    assert kinds[:4] == [("Queue", "ai-training"), ("Queue", "inference"), ("PriorityClass", "high-priority"),
                         ("PropagationPolicy", "volcano-job-policy")]
    assert set(plan.expected) == {("Job", "gpu-dist-training"), ("Job", "pytorch-dist-training"),
                                  ("Job", "pytorch-ddp"), ("Job", "resv-example"), ("Job", "shared-gpu-inference"),
                                  ("JobFlow", "ml-pipeline")}
    assert plan.expected[("JobFlow", "ml-pipeline")] == "Succeed"
    for manifest in plan.manifests:
        if manifest["kind"] in ("Job", "JobTemplate"):
            assert manifest["metadata"]["annotations"][SIM_DURATION].endswith("s")
            for task in manifest["spec"]["tasks"]:
                assert task["template"]["metadata"]["annotations"][SIM_DURATION]
    inference = next(m for m in plan.manifests if m["metadata"]["name"] == "shared-gpu-inference")
    assert inference["spec"]["queue"] == "inference" and any("inference-queue" in n for n in plan.notes)
    # templates come before the flow that names them, queues before the jobs that use them
    names = [name for _, name in kinds]
    assert names.index("training-job") < names.index("ml-pipeline")


def test_every_demo_manifest_passes_admission_offline() -> None:
    decoded = decode_text(yaml.safe_dump_all(demo_plan().manifests), "demo")
    assert not decoded.errors
    admitted = admit_all(decoded)
    assert not admitted.errors, [e.describe() for e in admitted.errors]
    assert len(admitted.objects) == len(demo_plan().manifests)


def test_policy_follows_other_cluster_names() -> None:
    plan = demo_plan(cluster_names=["cluster-a", "cluster-c"])
    policy = next(m for m in plan.manifests if m["kind"] == "PropagationPolicy")
    placement = policy["spec"]["placement"]
    assert placement["clusterAffinity"]["clusterNames"] == ["cluster-a", "cluster-c"]
    weights = {e["targetCluster"]["clusterNames"][0]: e["weight"]
               for e in placement["replicaScheduling"]["weightPreference"]["staticWeightList"]}
    assert weights == {"cluster-a": 1, "cluster-c": 1}


@pytest.mark.parametrize(("text", "error"), [
    ("clusters: []", "expected a cluster file"),
    ("- {name: a}", "clusters[0] needs name and file"),
    ("- {name: a, file: missing.yaml}", "does not exist"),
    ("- {name: a, file: one.yaml}\n- {name: a, file: one.yaml}", "must be unique"),
])
def test_bad_clusters_file_says_why(tmp_path: Path, text: str, error: str) -> None:
    (tmp_path / "one.yaml").write_text("name: a\npools: []\n")
    path = tmp_path / "clusters.yaml"
    path.write_text(text)
    with pytest.raises(ValueError, match=error.replace("[", r"\[").replace("]", r"\]")):
        clusters_from_file(path)


def test_clusters_file_forms(tmp_path: Path) -> None:
    (tmp_path / "one.yaml").write_text("name: east\npools: []\n")
    assert [c.name for c in clusters_from_file(tmp_path / "one.yaml")] == ["east"]
    (tmp_path / "list.yaml").write_text("- {name: east, file: one.yaml}\n- {name: west, file: one.yaml}\n")
    specs = clusters_from_file(tmp_path / "list.yaml")
    assert [(c.name, c.sim_file.name) for c in specs] == [("east", "one.yaml"), ("west", "one.yaml")]


def work(cluster: str, generation: int, replicas: int, *, cancelled: bool = False, running: int = 0,
         gang: str = "", clusters: int = 2) -> dict[str, Any]:
    return {"metadata": {"name": "default.j", "namespace": f"karmada-es-{cluster}",
                         "labels": {"caldera.io/job": "default.j"}},
            "spec": {"placement": {"generation": generation, "cancelled": cancelled, "hold": True,
                                   "clusters": clusters},
                     "workload": {"manifests": [{"spec": {"minAvailable": replicas, "tasks": [
                         {"name": "worker", "replicas": replicas}]}}]}},
            "status": {"manifestStatuses": [{"status": {"running": running, "state": {"phase": "Running"}}}],
                       "gang": {"generation": generation, "phase": gang}}}


def test_shares_are_the_newest_generation_without_cancelled_works() -> None:
    shares = shares_by_job([work("cluster-a", 1, 3, cancelled=True), work("cluster-b", 1, 5, cancelled=True),
                            work("cluster-a", 2, 8, gang="Reserved", clusters=1)])
    (share,) = shares["default.j"]
    assert (share.cluster, share.generation, share.replicas, share.min_available) == ("cluster-a", 2, 8, 8)
    assert share.gang == "Reserved" and not share.hold
    assert derived_phase([]) == "Pending"


def test_timeline_records_each_step_once() -> None:
    timeline = Timeline()
    key = ("Job", "j")
    timeline.submitted(key, 100.0)

    def snap(at: float, phase: str, works: list[dict[str, Any]]) -> Snapshot:
        shares = shares_by_job(works).get("default.j", [])
        return Snapshot(at, [], {key: JobView("Job", "j", phase, 99.0, shares)})

    timeline.observe(snap(101.0, "Pending", [work("cluster-a", 1, 3, gang="Pending"),
                                             work("cluster-b", 1, 5, gang="Reserved")]), TERMINAL)
    timeline.observe(snap(102.0, "Pending", [work("cluster-a", 1, 3, gang="Released"),
                                             work("cluster-b", 1, 5, gang="Released")]), TERMINAL)
    timeline.observe(snap(103.0, "Running", [work("cluster-a", 1, 3, gang="Running", running=3),
                                             work("cluster-b", 1, 5, gang="Running", running=5)]), TERMINAL)
    timeline.observe(snap(109.0, "Completed", [work("cluster-a", 1, 3, gang="Running"),
                                               work("cluster-b", 1, 5, gang="Running")]), TERMINAL)
    timeline.observe(snap(110.0, "Completed", []), TERMINAL)
    m = timeline.jobs[key]
    assert (m.submitted, m.placed, m.released, m.running, m.finished) == (100.0, 101.0, 102.0, 103.0, 109.0)
    assert m.held and [s.replicas for s in m.shares] == [3, 5]


def test_stopping_a_process_group_leaves_nothing(tmp_path: Path) -> None:
    # a leader that starts a child in its own group: both must go
    script = "import subprocess, time; subprocess.Popen(['sleep', '60']); print('up', flush=True); time.sleep(60)"
    proc = ManagedProcess("sleeper", [sys.executable, "-c", script], tmp_path / "sleeper.log").start()
    proc.wait_for(re.compile("up"), 10)
    assert len(leftover_processes({proc.pid})) == 2
    code = proc.stop(timeout=5)
    assert code == -signal.SIGTERM
    assert leftover_processes({proc.pid}) == []


def test_a_process_that_dies_at_start_reports_its_output(tmp_path: Path) -> None:
    proc = ManagedProcess("broken", [sys.executable, "-c", "print('bad flag'); raise SystemExit(2)"],
                          tmp_path / "broken.log").start()
    with pytest.raises(StartupError, match="bad flag"):
        proc.wait_for(re.compile("listening"), 10)
    assert proc.stop() == 2
