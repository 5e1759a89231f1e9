"""The Prometheus configuration ``caldera demo --prometheus`` generates passes ``promtool check config``
(which also checks every rule file, the token file and the CA it names), and ``for_override`` shortens
every alert's ``for:`` and nothing else."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from federation.demo.prometheus import RULES_DIR, copy_rules, prometheus_config
from tests.monitoring.tools import needs_promtool, promtool


def _agent_ca_pem(directory: Path) -> str:
    from federation.apiserver.tls import ensure_self_signed

    cert, _ = ensure_self_signed(directory, "127.0.0.1")
    return cert.read_text()


def _config(tmp_path: Path) -> Path:
    token = tmp_path / "viewer.token"
    token.write_text("secret\n")
    rules = copy_rules(tmp_path / "rules", "2s")
    ca = tmp_path / "agents-ca.crt"
    ca.write_text(_agent_ca_pem(tmp_path / "tls"))
    config = prometheus_config("https://127.0.0.1:7443", {"cluster-b": "https://127.0.0.1:9002",
                                                          "cluster-a": "https://127.0.0.1:9001"},
                               token, None, rules, interval="1s", agent_ca_file=ca)
    path = tmp_path / "prometheus.yml"
    path.write_text(yaml.safe_dump(config))
    return path


def test_config_scrapes_the_federation_over_tls_with_a_token_and_labels_each_agent(tmp_path: Path) -> None:
    config = yaml.safe_load(_config(tmp_path).read_text())
    fed, agents = config["scrape_configs"]
    assert fed["scheme"] == "https" and fed["static_configs"] == [{"targets": ["127.0.0.1:7443"]}]
    assert fed["authorization"] == {"type": "Bearer", "credentials_file": str(tmp_path / "viewer.token")}
    assert "secret" not in yaml.safe_dump(config)  # the token stays in its file
    assert agents["scheme"] == "https" and agents["authorization"] == fed["authorization"]
    assert agents["tls_config"] == {"ca_file": str(tmp_path / "agents-ca.crt")}
    assert agents["static_configs"] == [{"targets": ["127.0.0.1:9001"], "labels": {"cluster": "cluster-a"}},
                                        {"targets": ["127.0.0.1:9002"], "labels": {"cluster": "cluster-b"}}]


def test_agents_on_both_schemes_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="both http and https"):
        prometheus_config("https://127.0.0.1:7443", {"a": "https://127.0.0.1:1", "b": "http://127.0.0.1:2"},
                          tmp_path / "t", None, [])


def test_for_override_rewrites_only_the_for_durations(tmp_path: Path) -> None:
    (copied,) = [p for p in copy_rules(tmp_path, "2s") if p.name == "volcano-alerts.yaml"]
    original, short = (yaml.safe_load(p.read_text())["groups"][0]["rules"] for p in (RULES_DIR / copied.name, copied))
    assert [r["for"] for r in short] == ["2s", "2s"]
    assert [{k: v for k, v in r.items() if k != "for"} for r in short] == \
        [{k: v for k, v in r.items() if k != "for"} for r in original]


@needs_promtool
def test_generated_config_passes_promtool_check_config(tmp_path: Path) -> None:
    done = promtool("check", "config", str(_config(tmp_path)))
    assert done.returncode == 0, done.stdout + done.stderr


def test_demo_prometheus_without_the_binary_refuses_before_starting_anything(tmp_path: Path) -> None:
    env = {**os.environ, "PATH": str(tmp_path)}  # no prometheus there
    done = subprocess.run([sys.executable, "-m", "federation", "demo", "--prometheus", "--data-dir", str(tmp_path / "d")],
                          capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 2
    assert "--prometheus needs the 'prometheus' binary" in done.stderr
    assert not (tmp_path / "d").exists()  # nothing was started
