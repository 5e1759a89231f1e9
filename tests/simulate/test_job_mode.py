"""``caldera simulate`` job mode on one cluster: tiny traces (tests/data/simulate, tests/data/traces)
on the seed cluster-a layout (8 nodes x 8 GPUs).

What is checked: a job waits for room and starts once the job holding it ends; a job no node or
no gang could ever fit is reported Unfittable with its reason (not left pending); idle periods
cost no session; the summary has the stable keys and is byte-identical for the same inputs with
``--no-wall-clock``; --until and --limit cut the replay; every trace format runs.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from simulator.cli import main

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
CLUSTER = ROOT / "examples" / "clusters" / "cluster-a.yaml"
WAIT = DATA / "simulate" / "wait.jsonl"
KEYS = {"jobs", "pods", "gpuAllocationRatio", "arrivedLoadRatio", "firstRejection", "jct", "queueingDelay",
        "simulatedSeconds", "wallSeconds"}


def simulate(out: Path, trace: Path = WAIT, *extra: str) -> dict[str, Any]:
    assert main(["--trace", str(trace), "--clusters", str(CLUSTER), "--no-progress", "-o", str(out), *extra]) == 0
    return dict(json.loads((out / "summary.json").read_text()))


def jobs(out: Path) -> dict[str, dict[str, str]]:
    with (out / "jobs.csv").open(newline="") as handle:
        return {row["job"]: row for row in csv.DictReader(handle)}


def test_a_job_waits_for_room_and_unfittable_jobs_are_reported(tmp_path: Path) -> None:
    summary = simulate(tmp_path)
    rows = jobs(tmp_path)
    first, second = rows["first"], rows["second"]
    assert first["status"] == second["status"] == "Completed"
    # 'first' holds all 64 GPUs; 'second' can only start once it ended
    assert float(second["start"]) >= float(first["end"])
    assert float(second["queueingDelay"]) == pytest.approx(float(second["start"]) - 10)
    assert float(second["end"]) - float(second["start"]) == pytest.approx(100)
    assert rows["huge-pod"]["status"] == rows["huge-gang"]["status"] == "Unfittable"
    assert "fits no node" in rows["huge-pod"]["reason"]
    assert "72 GPUs" in rows["huge-gang"]["reason"]
    assert summary["unfittable"]["count"] == 2
    assert {j["name"] for j in summary["unfittable"]["jobs"]} == {"huge-pod", "huge-gang"}
    assert summary["finished"] == 2 and summary["unschedulable"]["count"] == 0
    assert set(summary) >= KEYS
    assert summary["pods"] is None and summary["firstRejection"] is None
    assert summary["jct"]["mean"] == pytest.approx((float(first["jct"]) + float(second["jct"])) / 2)
    # > 1,000 simulated seconds, a handful of sessions: idle periods are skipped
    assert summary["simulatedSeconds"] >= 1100
    assert summary["sessions"] <= 10
    for name in ("index.html", "utilisation.png", "cdf.png", "series.csv"):
        assert (tmp_path / name).stat().st_size > 0


def test_summary_is_byte_identical_for_the_same_inputs(tmp_path: Path) -> None:
    simulate(tmp_path / "a", WAIT, "--no-wall-clock", "--seed", "3")
    simulate(tmp_path / "b", WAIT, "--no-wall-clock", "--seed", "3")
    first = (tmp_path / "a" / "summary.json").read_bytes()
    assert first == (tmp_path / "b" / "summary.json").read_bytes()
    assert json.loads(first)["wallSeconds"] is None
    assert simulate(tmp_path / "c")["wallSeconds"] >= 0


def test_until_and_limit_cut_the_replay(tmp_path: Path) -> None:
    cut = simulate(tmp_path / "until", WAIT, "--until", "500")
    assert cut["simulatedSeconds"] <= 500 and cut["finished"] == 0
    assert jobs(tmp_path / "until")["second"]["status"] == "Pending"
    limited = simulate(tmp_path / "limit", WAIT, "--limit", "1")
    assert limited["jobs"] == 1 and limited["finished"] == 1


@pytest.mark.parametrize("trace", ["traces/caldera-small.jsonl", "traces/philly-small.csv", "traces/itp-small.csv"])
def test_every_trace_format_replays_to_the_end(tmp_path: Path, trace: str) -> None:
    summary = simulate(tmp_path, DATA / trace)
    assert summary["jobs"] > 0
    assert summary["finished"] + summary["unfittable"]["count"] == summary["jobs"]


@pytest.mark.parametrize(("extra", "message"), [
    (["--clusters", str(CLUSTER), str(CLUSTER)], "need --policy"),
    (["--clusters", str(CLUSTER), "--period", "0"], "must be > 0"),
    (["--mode", "jobs"], "needs --clusters"),
])
def test_bad_flags_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str],
                               message: str) -> None:
    assert main(["--trace", str(WAIT), "--no-progress", "-o", str(tmp_path), *extra]) == 2
    assert message in capsys.readouterr().err


def test_the_replay_collects_garbage_less_often_and_restores_the_thresholds() -> None:
    import gc

    from member_agent.session_gc import SESSION_GC_THRESHOLD
    from policies.cluster_layout import load_cluster_file
    from policies.scheduler_conf import DEFAULT_CONF
    from simulator.clock import VirtualClock
    from simulator.job_mode import EPOCH, run_jobs, single_cluster
    from simulator.member import Member
    from simulator.trace_formats import read_trace

    trace = read_trace(str(WAIT))
    clock = VirtualClock(EPOCH)
    member = Member("a", load_cluster_file(str(CLUSTER)).nodes, DEFAULT_CONF, clock)
    before = gc.get_threshold()
    seen: list[int] = []
    run = run_jobs(trace.jobs, [member], single_cluster(member), clock,
                   progress=lambda done, total: seen.append(gc.get_threshold()[0]))
    assert run.jobs and seen and set(seen) == {SESSION_GC_THRESHOLD}
    assert gc.get_threshold() == before
