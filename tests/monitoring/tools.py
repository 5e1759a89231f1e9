"""Prometheus's own tools for the monitoring tests: ``promtool`` and a real ``prometheus`` on loopback.

Each helper returns what the tool said, so a failing test shows promtool's message, which names the
file and line (``file.yaml: 5:15: group "x", rule 1, "A": could not parse expression ...``).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PROMETHEUS_DIR = REPO / "deploy" / "prometheus"
GRAFANA_DIR = REPO / "deploy" / "grafana"
PROMTOOL = shutil.which("promtool")

needs_promtool = pytest.mark.skipif(PROMTOOL is None, reason="promtool not installed (Debian package 'prometheus'; "
                                                             ".ci/run installs it)")


def promtool(*args: str, cwd: Path | None = None, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    assert PROMTOOL is not None
    return subprocess.run([PROMTOOL, *args], capture_output=True, text=True, timeout=60, cwd=cwd, input=stdin)


def rule_files() -> list[Path]:
    return sorted(PROMETHEUS_DIR.glob("*.yaml"))


def rule_tests() -> list[Path]:
    return sorted((PROMETHEUS_DIR / "tests").glob("*.yaml"))


def check_rules(path: Path) -> tuple[bool, str]:
    """``promtool check rules``: (ok, output)."""
    done = promtool("check", "rules", str(path))
    return done.returncode == 0, (done.stdout + done.stderr).strip()


def dashboard_queries(path: Path) -> list[tuple[str, str, int]]:
    """Every panel target's PromQL in a Grafana dashboard: (panel title, expr, line in the file)."""
    text = path.read_text()
    board = json.loads(text)  # a JSON error names line and column itself
    found = []
    for panel in _panels(board.get("panels") or []):
        for target in panel.get("targets") or []:
            expr = target.get("expr")
            if expr:
                needle = json.dumps(expr, ensure_ascii=False)
                line = text[:max(0, text.find(needle))].count("\n") + 1
                found.append((str(panel.get("title")), str(expr), line))
    return found


def _panels(panels: list[dict]) -> list[dict]:  # type: ignore[type-arg]
    out = []
    for panel in panels:
        out.append(panel)
        out.extend(_panels(panel.get("panels") or []))  # rows carry their panels when collapsed
    return out


def check_exprs(queries: list[tuple[str, str, int]], source: Path, work: Path) -> list[str]:
    """Parse every PromQL with one promtool run (each as a recording rule); errors as ``file:line: panel: message``."""
    rules = [{"record": f"panel:expr_{i}", "expr": expr} for i, (_, expr, _) in enumerate(queries)]
    rule_file = work / "panel-exprs.yaml"
    rule_file.write_text(json.dumps({"groups": [{"name": "panels", "rules": rules}]}))
    ok, out = check_rules(rule_file)
    if ok:
        return []
    errors = []
    for i, (title, _, line) in enumerate(queries):
        said = [text for text in out.splitlines() if f'"panel:expr_{i}"' in text]
        if said:
            errors.append(f"{source}:{line}: panel {title!r}: {said[0].split(': ', 2)[-1]}")
    return errors or [f"{source}: {out}"]
