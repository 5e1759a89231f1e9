"""The replay report: inputs, a headline in units, the comparison (page, CSV, console), trade-offs, inline plots."""

from __future__ import annotations

import contextlib
import csv
import io
import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from simulator.cli import main
from simulator.report_page import render, write_comparison_csv
from simulator.report_view import headline, inputs_rows, trade_offs
from simulator.text_table import comparison_table, print_table
from tests.simulate.test_simulate_cli import NODES, PODS, ROOT

CONFS = ROOT / "examples" / "scheduler-conf"
CHROMIUM = shutil.which("chromium") or ("/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None)
SCREENSHOT = ROOT / "docs" / "simulate-report.png"


def fgd(conf: str, rejected: int, at_full: float, first: dict[str, Any] | None) -> dict[str, Any]:
    return {"mode": "fgd", "pods": 1000, "placed": 1000 - rejected, "rejected": rejected, "gpus": 64,
            "sessions": 20, "gpuAllocationRatio": 0.9125, "arrivedLoadRatio": 1.3, "allocationAtFullLoad": at_full,
            "firstRejection": first, "firstRejectionByGpus": {"8": 0.5}, "overCapacityGpus": 0, "jct": None,
            "queueingDelay": None, "jobs": None, "simulatedSeconds": 20.0, "wallSeconds": None,
            "inputs": {"trace": "pods.csv", "nodes": "nodes.csv", "seed": 7, "load": 1.3, "batch": 50,
                       "schedulerConf": conf, "percentageNodesToFind": 0, "badRows": {"count": 0, "rows": []}}}


def body_text(page: str) -> str:
    body = page.split("<body>", 1)[1]
    return re.sub(r"<[^>]+>", " ", re.sub(r"src='data:[^']+'", "", body))


def test_headline_and_inputs_are_in_words_and_units() -> None:
    s = fgd("gpu-packing.conf", 245, 0.87654, {"allocationRatio": 0.8, "gpus": 2.0})
    rows = dict(headline(s))
    assert rows["rejected"] == "245" and rows["rejected of arrived"] == "24.50 %"
    assert rows["GPU allocation at 100 % arrived"] == "87.65 %"
    assert rows["first rejected request"] == "2 GPUs"
    assert rows["wall clock"] == "—"  # --no-wall-clock: not 'null'
    inputs = dict(inputs_rows(s))
    assert inputs["stop at arrived load"] == "130 % of the cluster's GPUs"
    assert inputs["percentage of nodes to find"] == "adaptive (Volcano's default)"
    assert inputs["unreadable rows skipped"] == "none"


def test_page_has_no_ratios_json_or_null_and_embeds_its_plot(tmp_path: Path) -> None:
    plot = tmp_path / "allocation.png"
    plot.write_bytes(b"\x89PNG fake")
    page = render("r", [fgd("binpack.conf", 10, 0.5, None)], [str(plot)])
    text = body_text(page)
    for bad in ("null", "None", "{", "0.5 ", "0.9125"):
        assert bad not in text, bad
    assert "91.25 %" in text and "50.00 %" in text
    assert "src='data:image/png;base64," in page and "allocation.png" in text


def test_comparison_trade_offs_csv_and_piped_table(tmp_path: Path) -> None:
    runs = [fgd("volcano-default.conf", 198, 0.80, None), fgd("gpu-packing.conf", 245, 0.85, None)]
    offs = trade_offs(runs)
    assert "gpu-packing.conf rejects +47 pods against volcano-default.conf for +5.00 percentage points" in offs[-1]
    rows = list(csv.reader(Path(write_comparison_csv(str(tmp_path), runs)).read_text().splitlines()))
    assert rows[0][:5] == ["conf", "pods arrived", "placed", "rejected", "rejected of arrived (%)"]
    assert [r[0] for r in rows[1:]] == ["volcano-default.conf", "gpu-packing.conf"]
    assert rows[2][3:5] == ["245", "24.5"] and rows[1][rows[0].index("wall clock (s)")] == ""
    out = io.StringIO()  # not a terminal: nothing is cut with an ellipsis
    print_table(comparison_table(runs, "t"), out)
    assert "gpu-packing.conf" in out.getvalue() and "…" not in out.getvalue()


@pytest.fixture(scope="module")
def compared(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """``--compare`` of two confs on every 150th openb node (36 GPUs): the output dir and stdout."""
    tmp = tmp_path_factory.mktemp("compare")
    nodes = tmp / "nodes.csv"
    lines = NODES.read_text().splitlines()
    nodes.write_text("\n".join([lines[0], *lines[1::150]]) + "\n")
    confs = [str(CONFS / "volcano-default.conf"), str(CONFS / "gpu-packing.conf")]
    out = tmp / "out"
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert main(["--trace", str(PODS), "--nodes", str(nodes), "--mode", "fgd", "--seed", "3", "--no-progress",
                     "--no-wall-clock", "--compare", *confs, "-o", str(out)]) == 0
    return out, printed.getvalue()


@pytest.mark.slow
def test_compare_writes_the_report_the_csv_and_prints_whole_cells(compared: tuple[Path, str]) -> None:
    out, printed = compared
    assert "gpu-packing.conf" in printed and "volcano-default.conf" in printed and "…" not in printed
    rows = list(csv.DictReader((out / "comparison.csv").read_text().splitlines()))
    assert [r["conf"] for r in rows] == ["volcano-default.conf", "gpu-packing.conf"]
    assert all(int(r["placed"]) + int(r["rejected"]) == int(r["pods arrived"]) for r in rows)
    page = (out / "index.html").read_text()
    text = body_text(page)
    assert "Comparison" in text and "Trade-offs" in text and "null" not in text
    assert page.count("data:image/png;base64,") == 1
    single = body_text((out / "gpu-packing" / "index.html").read_text())
    assert "Headline" in single and "gpu-packing.conf" in single and "null" not in single


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (Debian package 'chromium')")
def test_report_renders_in_chromium(compared: tuple[Path, str], tmp_path: Path) -> None:
    """The page in headless Chromium: its tables and its inline plot load (no file next to it is needed)."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright (test extra) not installed")
    out, _ = compared
    alone = tmp_path / "report.html"  # copied away from its PNGs: the plot must be inline
    alone.write_text((out / "index.html").read_text())
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, timeout=60_000,
                                     args=["--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page(viewport={"width": 1200, "height": 900})
            page.goto(alone.as_uri())
            page.wait_for_function("[...document.images].every(i => i.complete && i.naturalWidth > 0)",
                                   timeout=60_000)
            assert page.locator("table").count() == 2
            assert "gpu-packing.conf" in page.inner_text("body")
            shot = tmp_path / "simulate-report.png"
            page.screenshot(path=str(shot), full_page=True)
            if os.environ.get("CALDERA_UPDATE_SCREENSHOT") == "1":
                shutil.copyfile(shot, SCREENSHOT)
        finally:
            browser.close()
    assert shot.stat().st_size > 10_000


def test_job_mode_report_and_comparison_in_words(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.simulate.test_job_mode import CLUSTER, WAIT

    out = tmp_path / "jobs"
    assert main(["--trace", str(WAIT), "--clusters", str(CLUSTER), "--no-progress", "--no-wall-clock",
                 "--compare", str(CONFS / "volcano-default.conf"), str(CONFS / "binpack.conf"), "-o", str(out)]) == 0
    assert "binpack.conf" in capsys.readouterr().out
    text = body_text((out / "index.html").read_text())
    assert "null" not in text and "None" not in text and "{" not in text
    assert "jobs finished" in text and "mean JCT" in text
    rows = list(csv.DictReader((out / "comparison.csv").read_text().splitlines()))
    assert [r["conf"] for r in rows] == ["volcano-default.conf", "binpack.conf"]
    assert all(0 <= float(r["GPU allocation (time average) (%)"]) <= 100 for r in rows)
    single = body_text((out / "binpack" / "index.html").read_text())
    assert "Headline" in single and "JCT mean" in single and "cluster-a.yaml" in single
