"""``caldera simulate`` job mode over several clusters: the federation's placement divides each job
(tests/data/simulate/weighted.yaml: cluster-a and cluster-b, weights 1:1) and a job split over
both starts in two phases (every share reserved, then all released at the same tick).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from policies.scheduler_conf import DEFAULT_CONF
from simulator.cli import build_parser, main
from simulator.job_cli import load_trace, run_job_mode
from simulator.job_mode import JobResult

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "simulate"
CLUSTERS = [str(ROOT / "examples" / "clusters" / f"cluster-{x}.yaml") for x in "ab"]


def replay(*extra: str) -> dict[str, JobResult]:
    args = build_parser().parse_args(["--trace", str(DATA / "wait.jsonl"), "--clusters", *CLUSTERS,
                                      "--policy", str(DATA / "weighted.yaml"), "-o", "unused", *extra])
    run, summary = run_job_mode(args, load_trace(args), DEFAULT_CONF, "default")
    assert summary["crossClusterJobs"] == sum(1 for j in run.jobs if len(j.clusters) > 1)
    return {j.name: j for j in run.jobs}


def test_jobs_are_divided_by_weight_and_gangs_start_together() -> None:
    jobs = replay()
    first = jobs["first"]
    assert first.clusters == {"cluster-a": 4, "cluster-b": 4}  # 8 pods, weights 1:1
    assert first.status == "Completed"
    # two-phase start: both shares began at the same tick
    assert len(set(first.share_starts.values())) == 1 and set(first.share_starts) == set(first.clusters)
    # a 72-GPU gang (above cluster-a's 64 GPUs) is divided too, and its shares start together
    gang = jobs["huge-gang"]
    assert gang.status == "Completed" and len(gang.clusters) == 2
    assert sum(gang.clusters.values()) == 9
    assert len(set(gang.share_starts.values())) == 1


def test_a_pod_no_cluster_can_hold_is_unfittable_with_the_placements_reason() -> None:
    jobs = replay()
    assert jobs["huge-pod"].status == "Unfittable"
    assert "cannot divide it even over empty clusters" in jobs["huge-pod"].reason


def test_a_bad_policy_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "pp.yaml"
    bad.write_text("apiVersion: policy.karmada.io/v1alpha1\nkind: PropagationPolicy\nmetadata: {name: x}\nspec: {}\n")
    code = main(["--trace", str(DATA / "wait.jsonl"), "--clusters", *CLUSTERS, "--policy", str(bad),
                 "--no-progress", "-o", str(tmp_path / "out")])
    assert code == 1
    assert "spec.placement is required" in capsys.readouterr().err
