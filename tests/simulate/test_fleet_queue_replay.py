"""``caldera simulate --queues``: the replay goes through the fleet queue code (admission, fair share,
reclaim across clusters), or, with ``--queue-scope cluster``, the members' own queues (the comparison).

tests/data/simulate/queues/reclaim.jsonl: team-a fills both seed clusters with three 64-GPU gangs for
1,000 s; team-b's 8-GPU job arrives at 10 s.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from simulator.cli import _conf, build_parser, main
from simulator.job_cli import load_trace, run_job_mode

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "simulate" / "queues"
CLUSTERS = [str(ROOT / "examples" / "clusters" / f"cluster-{x}.yaml") for x in "ab"]
ARGS = ["--trace", str(DATA / "reclaim.jsonl"), "--clusters", *CLUSTERS, "--policy", str(DATA / "pp.yaml"),
        "--queues", str(DATA / "queues.yaml"), "--scheduler-conf", str(DATA / "reclaim.conf"), "--no-progress"]
BAD = yaml.safe_load((DATA / "bad-queues.yaml").read_text())


def replay(scope: str) -> tuple[dict[str, Any], dict[str, Any]]:
    args = build_parser().parse_args([*ARGS, "--queue-scope", scope, "-o", "unused"])
    args.mode = "jobs"
    run, summary = run_job_mode(args, load_trace(args), _conf(args.scheduler_conf), "reclaim.conf")
    return {j.name: j for j in run.jobs}, summary


def test_fleet_queues_reclaim_one_gang_and_the_starved_queue_runs_at_once() -> None:
    jobs, summary = replay("fleet")
    assert summary["reclaims"] == {"count": 1, "byQueue": {"team-a": 1}}
    assert jobs["b-0"].queueing_delay is not None and jobs["b-0"].queueing_delay < 10
    evicted = [n for n in ("a-0", "a-1", "a-2") if jobs[n].end is not None and jobs[n].end > 1050]
    assert len(evicted) == 1, {n: (jobs[n].start, jobs[n].end) for n in jobs}  # it ran again, whole, afterwards
    assert all(j.status == "Completed" for j in jobs.values())
    queues = summary["queues"]
    assert set(queues) == {"default", "team-a", "team-b", "team-c"}  # team-c: named by the trace only
    for block in queues.values():
        assert set(block) == {"peakAllocated", "meanAllocated", "meanDeserved", "queueingDelay"}
    assert queues["team-a"]["peakAllocated"] == {"nvidia.com/gpu": 192}
    assert queues["team-b"]["peakAllocated"] == {"nvidia.com/gpu": 8}
    assert 0 < queues["team-b"]["meanDeserved"]["nvidia.com/gpu"] < queues["team-a"]["meanDeserved"]["nvidia.com/gpu"]


def test_per_cluster_queues_make_the_starved_queue_wait_for_a_gang_to_end() -> None:
    jobs, summary = replay("cluster")
    assert summary["reclaims"]["count"] == 0 and summary["queueScope"] == "cluster"
    assert jobs["b-0"].queueing_delay is not None and jobs["b-0"].queueing_delay >= 990


@pytest.mark.slow  # three plots and the page (~5 s of matplotlib on 2 cores)
def test_the_outputs_carry_the_queues(tmp_path: Path) -> None:
    assert main([*ARGS, "--no-wall-clock", "-o", str(tmp_path)]) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["inputs"]["queues"] == "queues.yaml" and summary["inputs"]["queueScope"] == "fleet"
    assert (tmp_path / "queues.png").stat().st_size > 0
    page = (tmp_path / "index.html").read_text()
    assert "<h2>Queues (fleet)</h2>" in page and "team-b" in page and "gangs reclaimed" in page
    assert "queues.png" in page


@pytest.mark.parametrize("case", BAD, ids=[c["name"] for c in BAD])
def test_a_bad_queues_file_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str], case: dict[str, Any]) -> None:
    path = tmp_path / "queues.yaml"
    path.write_text(case["text"])
    args = [a if a != str(DATA / "queues.yaml") else str(path) for a in ARGS]
    assert main([*args, "-o", str(tmp_path / "out")]) == 1
    assert case["error"] in capsys.readouterr().err
    assert not (tmp_path / "out").exists()  # nothing written
