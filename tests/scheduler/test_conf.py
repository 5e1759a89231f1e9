"""volcano-scheduler.conf parsing, and the registries agreeing with the known names."""

from __future__ import annotations

import pytest

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


def test_switches_default_true_except_hierarchy_and_explicit_false_honoured() -> None:
    conf = parse_scheduler_conf("tiers:\n- plugins:\n  - name: gang\n    enablePreemptable: false\n  - name: drf\n")
    gang, drf = conf.tiers[0].plugins
    assert not gang.enabled("enablePreemptable")
    assert gang.enabled("enableJobReady")
    assert not drf.enabled("enableHierarchy")


@pytest.mark.parametrize(("text", "message"), [
    ('actions: "enqueue, nope"', "unknown action 'nope'"),
    ("tiers:\n- plugins:\n  - name: nope\n", "unknown plugin 'nope'; known: priority"),
    ("tiers:\n- plugins:\n  - name: gang\n    enableJobReady: maybe\n", "must be true or false"),
    ("tiers:\n- plugins:\n  - name: gang\n    enableJobRedy: false\n", "unknown plugin field"),
    ("tiers:\n- plugins:\n  - {name: drf, enableHierarchy: true}\n  - {name: proportion}\n",
     "proportion and drf with hierarchy enabled conflicts"),
    ("bogus: 1\n", "unknown field"),
])
def test_invalid_configurations(text: str, message: str) -> None:
    with pytest.raises(InvalidConfiguration, match=message):
        parse_scheduler_conf(text)


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
