"""volcano-scheduler.conf parsing, and the registries agreeing with the known names."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from member_agent.scheduler.actions import REGISTRY as ACTIONS
from member_agent.scheduler.cycle import build_plugins
from member_agent.scheduler.plugins import REGISTRY as PLUGINS
from policies.errors import InvalidConfiguration
from policies.scheduler_conf import (
    DEFAULT_CONF,
    SUPPORTED_ACTIONS,
    SUPPORTED_PLUGINS,
    from_configmap,
    parse_scheduler_conf,
)


def test_registries_match_known_names() -> None:
    assert set(ACTIONS.names()) == set(SUPPORTED_ACTIONS)
    assert set(PLUGINS.names()) == set(SUPPORTED_PLUGINS)


def test_default_conf_is_volcanos() -> None:
    assert DEFAULT_CONF.actions == ("enqueue", "allocate", "backfill")
    assert [[p.name for p in t.plugins] for t in DEFAULT_CONF.tiers] == [
        ["priority", "gang", "conformance"], ["overcommit", "drf", "predicates", "proportion", "nodeorder"]]


CONF_DIR = Path(__file__).resolve().parents[1] / "data" / "scheduler_confs"
CASES = yaml.safe_load((CONF_DIR / "cases.yaml").read_text())
CORPUS = sorted(CONF_DIR.glob("*.conf"))


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_conf_cases(case: dict[str, Any]) -> None:
    if "error" in case:
        with pytest.raises(InvalidConfiguration) as info:
            parse_scheduler_conf(case["conf"])
        assert case["error"] in str(info.value)
        return
    conf = parse_scheduler_conf(case["conf"])
    for expected in case.get("warnings", []):
        assert any(expected in w for w in conf.warnings), (expected, conf.warnings)
    if case.get("noWarnings"):
        assert conf.warnings == ()
    if "actions" in case:
        assert list(conf.actions) == case["actions"]
    if "plugins" in case:
        assert conf.plugin_names() == case["plugins"]
    options = {p.name: p for t in conf.tiers for p in t.plugins}
    for plugin, switches in case.get("switches", {}).items():
        for switch, value in switches.items():
            assert options[plugin].enabled(switch) is value, (plugin, switch)


@pytest.mark.parametrize("path", CORPUS, ids=[p.stem for p in CORPUS])
def test_real_world_confs_are_accepted_and_build_a_session(path: Path) -> None:
    conf = parse_scheduler_conf(path.read_text())
    tiers, _warnings = build_plugins(conf, PLUGINS)
    assert sum(len(t) for t in tiers) == len(conf.plugin_names()) > 0
    written = [ln.split("name:", 1)[1].strip() for ln in path.read_text().splitlines() if "- name:" in ln]
    skipped = [n for n in written if n not in SUPPORTED_PLUGINS and n not in SUPPORTED_ACTIONS]
    for name in skipped:  # every plugin Caldera lacks is named in a warning
        assert any(repr(name) in w for w in conf.warnings), (name, conf.warnings)


def test_unknown_switch_key_is_rejected_by_the_accessor() -> None:
    with pytest.raises(KeyError):
        DEFAULT_CONF.tiers[0].plugins[0].enabled("enableNothing")


def test_argument_types_checked_when_the_session_is_built() -> None:
    conf = parse_scheduler_conf("tiers:\n- plugins:\n  - name: binpack\n    arguments: {binpack.weight: heavy}\n")
    with pytest.raises(InvalidConfiguration, match="plugin binpack: argument binpack.weight"):
        build_plugins(conf, PLUGINS)


def test_seed_configmap_parses_with_a_warning_for_the_unknown_key(data_dir) -> None:  # type: ignore[no-untyped-def]
    import yaml

    doc = yaml.safe_load((data_dir / "seed" / "configmap-volcano-scheduler-config.yaml").read_text())
    conf = from_configmap(doc)
    _tiers, warnings = build_plugins(conf, PLUGINS)
    assert any("binpack.nvidia.com/gpu" in w for w in warnings)


def test_configmap_without_the_key_is_an_error() -> None:
    with pytest.raises(InvalidConfiguration, match="volcano-scheduler.conf is missing"):
        from_configmap({"metadata": {"name": "x"}, "data": {}})
