"""``caldera simulate --mode fgd`` on a small slice of the openb trace (examples/traces).

Every 60th node of the openb node list (a mix of 2-, 4- and 8-GPU nodes) and the full pod
list, sampled to 130 % of that slice's GPUs: the summary keys of the stable interface, a
byte-identical summary for the same seed, no GPU over capacity, bad rows named by file, line
and column.
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

from simulator.cli import main

TRACES = Path(__file__).resolve().parents[2] / "examples" / "traces"
PODS = TRACES / "openb_pod_list_default.csv"
NODES = TRACES / "openb_node_list_gpu_node.csv"
ROOT = Path(__file__).resolve().parents[2]
GPU_PACKING = ROOT / "examples" / "scheduler-conf" / "gpu-packing.conf"
KEYS = {"pods", "gpuAllocationRatio", "arrivedLoadRatio", "firstRejection", "jct", "queueingDelay",
        "simulatedSeconds", "wallSeconds"}

@pytest.fixture(scope="module")
def node_slice(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("openb") / "nodes.csv"
    with NODES.open(newline="") as src, out.open("w", newline="") as dst:
        rows = list(csv.reader(src))
        writer = csv.writer(dst)
        writer.writerow(rows[0])
        writer.writerows(rows[1::60])
    return out


def simulate(nodes: Path, out: Path, *extra: str) -> int:
    return main(["--trace", str(PODS), "--nodes", str(nodes), "--mode", "fgd", "--scheduler-conf", str(GPU_PACKING),
                 "--seed", "7", "--batch", "25", "--no-progress", "-o", str(out), *extra])


@pytest.mark.slow
def test_summary_is_complete_and_byte_identical_for_one_seed(node_slice: Path, tmp_path: Path) -> None:
    assert simulate(node_slice, tmp_path / "a", "--no-wall-clock") == 0
    assert simulate(node_slice, tmp_path / "b", "--no-wall-clock") == 0
    first = (tmp_path / "a" / "summary.json").read_bytes()
    assert first == (tmp_path / "b" / "summary.json").read_bytes()
    summary = json.loads(first)
    assert set(summary) >= KEYS
    assert summary["wallSeconds"] is None and summary["jct"] is None
    assert summary["arrivedLoadRatio"] >= 1.3
    assert 0.5 < summary["gpuAllocationRatio"] <= 1.0
    assert summary["overCapacityGpus"] == 0
    assert summary["placed"] + summary["rejected"] == summary["pods"]
    for name in ("series.csv", "allocation.png", "index.html"):
        assert (tmp_path / "a" / name).stat().st_size > 0


def test_bad_row_is_reported_with_file_line_and_column(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pods = tmp_path / "pods.csv"
    lines = PODS.read_text().splitlines()[:6]
    cells = lines[3].split(",")
    cells[4] = "lots"  # gpu_milli
    lines[3] = ",".join(cells)
    pods.write_text("\n".join(lines) + "\n")
    nodes = tmp_path / "nodes.csv"
    nodes.write_text("\n".join(NODES.read_text().splitlines()[:4]) + "\n")
    args = ["--trace", str(pods), "--nodes", str(nodes), "--no-progress", "--no-wall-clock", "--load", "0.5"]
    assert main([*args, "-o", str(tmp_path / "out")]) == 1
    assert f"{pods}:4: column gpu_milli: 'lots' is not a number" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
    assert main([*args, "--skip-bad", "-o", str(tmp_path / "skip")]) == 0
    summary = json.loads((tmp_path / "skip" / "summary.json").read_text())
    assert summary["inputs"]["badRows"]["count"] == 1
    assert summary["inputs"]["badRows"]["rows"][0]["line"] == 4


def test_caldera_simulate_execs_the_simulator(tmp_path: Path) -> None:
    code = "import sys; from federation.cli import main; sys.exit(main(['simulate', '--help']))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode == 0 and "--scheduler-conf" in done.stdout
