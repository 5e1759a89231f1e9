"""The job-trace readers (Philly csv, ITP csv inside the tarball, Caldera JSONL): small fixture
traces under tests/data/traces, and one bad row per rule (tests/data/traces/bad-rows.yaml)
reported with file, line and column, or counted with ``skip_bad``."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from simulator.errors import TraceError
from simulator.trace import gpu_pods
from simulator.trace_formats import read_trace

DATA = Path(__file__).resolve().parents[1] / "data" / "traces"
BAD = yaml.safe_load((DATA / "bad-rows.yaml").read_text())


def test_philly_rows_become_gang_jobs_sorted_by_arrival() -> None:
    trace = read_trace(str(DATA / "philly-small.csv"))
    assert trace.format == "philly" and trace.bad == []
    assert [j.name for j in trace.jobs] == ["philly-000003", "philly-000004", "philly-000002"]
    first, second, last = trace.jobs
    assert first.arrival == 0 and second.arrival == 33 and last.arrival == 48 * 60 + 52
    assert first.queue == "vc-6214e9" and last.queue == "vc-11cb48"
    # 12 GPUs on 8-GPU nodes: two pods of 6; 16: two of 8; a gang of every pod
    assert [(t.replicas, t.gpus_per_pod) for t in first.tasks] == [(2, 6.0)]
    assert first.gpus == 12 and second.gpus == 16 and last.gpus == 1
    spec = first.manifest("uid-1")["spec"]
    assert spec["minAvailable"] == 2 and spec["queue"] == "vc-6214e9"
    assert spec["tasks"][0]["template"]["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] == "6"


@pytest.mark.parametrize(("gpus", "per_node", "expected"),
                         [(1, 8, (1, 1)), (8, 8, (1, 8)), (12, 8, (2, 6)), (24, 8, (3, 8)), (7, 2, (7, 1)),
                          (128, 8, (16, 8)), (4, 1, (4, 1))])
def test_gpu_pods_are_the_fewest_equal_pods_that_fit_a_node(gpus: int, per_node: int, expected: tuple[int, int]) -> None:
    assert gpu_pods(gpus, per_node) == expected


def test_itp_member_is_read_from_the_tarball_without_extracting(tmp_path: Path) -> None:
    tarball = tmp_path / "raw-traces.tar.gz"
    body = (DATA / "itp-small.csv").read_bytes()
    with tarfile.open(tarball, "w:gz") as archive:
        info = tarfile.TarInfo("cluster05.csv")
        info.size = len(body)
        archive.addfile(info, io.BytesIO(body))
    trace = read_trace(f"{tarball}#cluster05", gpus_per_pod=4)
    assert trace.format == "itp"
    assert [(j.arrival, j.duration, j.gpus, j.pods) for j in trace.jobs] == [(9940, 16235, 1, 1), (11086, 16627, 8, 2)]
    with pytest.raises(TraceError, match="holds cluster05"):
        read_trace(str(tarball))
    with pytest.raises(TraceError, match="no member 'cluster99'"):
        read_trace(f"{tarball}#cluster99")


def test_caldera_jsonl_keeps_tasks_priority_min_available_and_fractional_gpu() -> None:
    trace = read_trace(str(DATA / "caldera-small.jsonl"))
    serve, llm = trace.jobs  # sorted by arrival
    assert serve.name == "job-4" and serve.queue == "default" and serve.gpus == 0.25
    assert dict(serve.tasks[0].requests)["nvidia.com/gpucores"] == "25"
    assert llm.priority == 100 and llm.min_available == 5 and llm.pods == 5 and llm.gpus == 8
    spec = llm.manifest("u")["spec"]
    assert spec["priorityClassName"] == "sim-priority-100" and [t["name"] for t in spec["tasks"]] == ["master", "worker"]


@pytest.mark.parametrize("case", BAD, ids=[f"{c['file']}:{c['error']['column']}" for c in BAD])
def test_a_bad_row_names_file_line_and_column(case: dict[str, Any], tmp_path: Path) -> None:
    path = tmp_path / case["file"]
    path.write_text(case["text"])
    want = case["error"]
    with pytest.raises(TraceError) as caught:
        read_trace(str(path))
    error = caught.value
    assert (error.path, error.line, error.column) == (str(path), want["line"], want["column"])
    assert want["words"] in str(error) and str(error).startswith(f"{path}:{want['line']}: column {want['column']}: ")
    if want["line"] > 1:  # a row, not the header: skip_bad counts it and keeps the others
        trace = read_trace(str(path), skip_bad=True)
        assert [b.line for b in trace.bad] == [want["line"]]
        assert len(trace.jobs) == len([t for t in case["text"].splitlines()[1 if path.suffix == ".csv" else 0:] if t]) - 1
