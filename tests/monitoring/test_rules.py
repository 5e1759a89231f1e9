"""deploy/prometheus: every rule file passes ``promtool check rules`` and every unit test passes;
every alert has a unit test that sees it fire and one that sees it silent; bad input names file and line."""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.monitoring.tools import (
    PROMETHEUS_DIR,
    check_rules,
    needs_promtool,
    promtool,
    rule_files,
    rule_tests,
)

pytestmark = needs_promtool


def test_every_rule_file_passes_promtool_check() -> None:
    assert rule_files(), f"no rule files in {PROMETHEUS_DIR}"
    failures = [out for ok, out in map(check_rules, rule_files()) if not ok]
    assert not failures, "\n".join(failures)


def test_rule_unit_tests_pass() -> None:
    done = promtool("test", "rules", *[p.name for p in rule_tests()], cwd=PROMETHEUS_DIR / "tests")
    assert done.returncode == 0, done.stdout + done.stderr


def _alerts() -> set[str]:
    return {rule["alert"] for path in rule_files() for group in yaml.safe_load(path.read_text())["groups"]
            for rule in group["rules"] if "alert" in rule}


def test_every_alert_is_tested_firing_and_not_firing() -> None:
    firing: set[str] = set()
    silent: set[str] = set()
    for path in rule_tests():
        for case in yaml.safe_load(path.read_text())["tests"]:
            for check in case.get("alert_rule_test") or []:
                (firing if check.get("exp_alerts") else silent).add(check["alertname"])
    alerts = _alerts()
    assert {"VolcanoJobPendingTooLong", "VolcanoQueueGPUSaturation", "CalderaClusterNotReady",
            "CalderaClusterLeaseStale", "CalderaGangHeldTooLong", "CalderaOptimizerFallbackRate",
            "CalderaAgentSyncErrors"} <= alerts
    assert alerts - firing == set(), "alerts never seen firing in a unit test"
    assert alerts - silent == set(), "alerts never seen silent in a unit test"


def test_seed_rules_are_shipped_as_written_reading_the_fleet_series() -> None:
    """As the seed writes them, except that the queue alert selects the federation's fleet-wide series
    (``scope="fleet"``, docs/queues.md): a Queue holds for the whole fleet, not per cluster."""
    (group,) = yaml.safe_load((PROMETHEUS_DIR / "volcano-alerts.yaml").read_text())["groups"]
    rules = {r["alert"]: r for r in group["rules"]}
    assert rules["VolcanoJobPendingTooLong"]["expr"] == "volcano_job_pending_duration_seconds > 1800"
    assert rules["VolcanoQueueGPUSaturation"]["expr"] == (
        'volcano_queue_allocated{scope="fleet", nvidia_com_gpu != ""} / '
        'volcano_queue_capability{scope="fleet", nvidia_com_gpu != ""} > 0.95')
    assert (rules["VolcanoJobPendingTooLong"]["for"], rules["VolcanoQueueGPUSaturation"]["for"]) == ("5m", "10m")


def test_a_malformed_expression_fails_with_file_and_line(tmp_path: Path) -> None:
    bad = tmp_path / "broken.yaml"
    bad.write_text("groups:\n  - name: x\n    rules:\n      - alert: Broken\n        expr: sum(rate(up[5m])\n")
    ok, out = check_rules(bad)
    assert not ok
    assert f"{bad}: 5:" in out and "unclosed left parenthesis" in out


def test_malformed_yaml_fails_with_file_and_line(tmp_path: Path) -> None:
    bad = tmp_path / "broken.yaml"
    bad.write_text("groups:\n  - name: x\n    rules:\n      - alert: A\n        expr: up\n       for: [\n")
    ok, out = check_rules(bad)
    assert not ok
    assert f"{bad}: yaml: line" in out
