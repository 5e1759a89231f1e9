"""deploy/grafana: the dashboard is valid JSON, every panel's PromQL parses (promtool) and is built on
the shipped recording rules; a broken dashboard fails naming the file and line. (That every query
returns data from a real Prometheus is e2e/test_observability.py.)"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from tests.monitoring.tools import GRAFANA_DIR, PROMETHEUS_DIR, check_exprs, dashboard_queries, needs_promtool

BOARDS = sorted(GRAFANA_DIR.glob("*.json"))
SECTIONS = ("Fleet overview", "Per-cluster GPU use", "Queue shares", "Placement latency", "Two-phase start")


def recorded() -> set[str]:
    groups = yaml.safe_load((PROMETHEUS_DIR / "caldera-recording.yaml").read_text())["groups"]
    return {rule["record"] for group in groups for rule in group["rules"]}


def test_the_dashboard_has_its_sections_and_a_datasource_variable() -> None:
    assert BOARDS, f"no dashboards in {GRAFANA_DIR}"
    board = json.loads(BOARDS[0].read_text())
    assert [p["title"] for p in board["panels"] if p["type"] == "row"] == list(SECTIONS)
    assert [v["name"] for v in board["templating"]["list"]] == ["datasource"]
    ids = [p["id"] for p in board["panels"]]
    assert len(ids) == len(set(ids))


@pytest.mark.parametrize("board", BOARDS, ids=[b.name for b in BOARDS])
def test_every_panel_reads_a_recording_rule(board: Path) -> None:
    names = recorded()
    for title, expr, line in dashboard_queries(board):
        used = set(re.findall(r"[a-zA-Z_:][a-zA-Z0-9_:]*", expr))
        assert used & names, f"{board}:{line}: panel {title!r} reads no recording rule: {expr}"


@needs_promtool
@pytest.mark.parametrize("board", BOARDS, ids=[b.name for b in BOARDS])
def test_every_panel_query_parses(board: Path, tmp_path: Path) -> None:
    errors = check_exprs(dashboard_queries(board), board, tmp_path)
    assert not errors, "\n".join(errors)


@needs_promtool
def test_a_bad_panel_query_names_file_line_and_panel(tmp_path: Path) -> None:
    board = json.loads(BOARDS[0].read_text())
    board["panels"][1]["targets"][0]["expr"] = "sum(rate(caldera:clusters:count[5m]"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(board, indent=2))
    (error,) = check_exprs(dashboard_queries(bad), bad, tmp_path)
    line = next(i for i, text in enumerate(bad.read_text().splitlines(), 1) if "sum(rate(caldera:clusters" in text)
    assert error.startswith(f"{bad}:{line}: panel {board['panels'][1]['title']!r}:")
    assert "unclosed left parenthesis" in error


def test_malformed_json_names_line_and_column(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{\n  "panels": [\n    {"title": "x",}\n  ]\n}\n')
    with pytest.raises(json.JSONDecodeError, match=r"line 3 column"):
        dashboard_queries(bad)
