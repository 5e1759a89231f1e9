"""The Volcano scheduler configuration (``volcano-scheduler.conf``), parsed and checked.

The document has the shape Volcano reads (``reference/volcano.md`` §7)::

    actions: "enqueue, allocate, backfill"     # executed in this order
    tiers:
    - plugins:
      - name: gang
        enablePreemptable: false               # per-extension switch
        arguments: {key: value}                # free-form, checked by the plugin
    configurations:                            # per-action arguments
    - name: allocate
      arguments: {predicateErrorCacheEnable: true}

Every ``enable…`` switch that is absent takes Volcano's YAML default (true), except
``enableHierarchy`` (false); an explicit ``false`` is honoured. Unknown action or plugin
names, unknown switches and non-boolean switches are errors naming the place and listing
what is known. The names known here are kept in step with the scheduler's registries by a
test (``tests/scheduler/test_registry.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping

import yaml

from policies.errors import InvalidConfiguration

CONF_KEY = "volcano-scheduler.conf"

#: Every action Volcano registers (``actions/factory.go``).
VOLCANO_ACTIONS = ("enqueue", "allocate", "backfill", "preempt", "reclaim", "gangpreempt", "gangreclaim", "shuffle")
#: Every plugin Volcano registers (``plugins/factory.go``), YAML spelling.
VOLCANO_PLUGINS = (
    "drf", "gang", "deviceshare", "predicates", "priority", "nodeorder", "conformance", "binpack",
    "resource-strategy-fit", "tdm", "overcommit", "sla", "task-topology", "numa-aware", "cdp",
    "rescheduling", "usage", "pdb", "nodegroup", "network-topology-aware", "proportion", "capacity",
    "extender", "resourcequota",
)

#: The actions Caldera's scheduler implements (must equal ``member_agent.scheduler.actions.REGISTRY``).
SUPPORTED_ACTIONS = ("enqueue", "allocate", "backfill", "preempt", "reclaim", "gangpreempt", "gangreclaim")
#: The plugins Caldera's scheduler implements (must equal ``member_agent.scheduler.plugins.REGISTRY``).
SUPPORTED_PLUGINS = (
    "priority", "gang", "conformance", "predicates", "nodeorder", "binpack", "drf", "proportion",
    "capacity", "overcommit", "numa-aware", "task-topology", "deviceshare", "sla", "deadline",
    "tdm", "fgd",
)

#: Per-extension switches (literal YAML keys, with Volcano's inconsistent ``enable``/``enabled``).
SWITCHES = (
    "enableJobOrder", "enableHierarchy", "enableJobReady", "enableJobPipelined", "enableTaskOrder",
    "enablePreemptable", "enableReclaimable", "enablePreemptive", "enableQueueOrder", "enabledClusterOrder",
    "enablePredicate", "enableBestNode", "enableNodeOrder", "enableTargetJob", "enableReservedNodes",
    "enableJobEnqueued", "enabledVictim", "enableJobStarving", "enabledOverused", "enabledAllocatable",
    "enabledHyperNodeOrder", "enabledSubJobReady", "enabledSubJobPipelined", "enabledSubJobOrder",
    "enabledHyperNodeGradient",
)
#: Switches whose absence means false (every other absent switch means true).
OFF_BY_DEFAULT = frozenset({"enableHierarchy"})

_TOP_LEVEL_KEYS = ("actions", "tiers", "configurations", "metrics")


@dataclass(frozen=True)
class PluginOption:
    """One plugin entry of a tier: its name, resolved switches and raw arguments."""

    name: str
    switches: Mapping[str, bool] = field(default_factory=dict)
    arguments: Mapping[str, Any] = field(default_factory=dict)

    def enabled(self, switch: str) -> bool:
        """Whether the extension behind ``switch`` is on (Volcano's YAML defaults)."""
        if switch not in SWITCHES:
            raise KeyError(f"unknown plugin switch {switch!r}")
        return self.switches.get(switch, switch not in OFF_BY_DEFAULT)


@dataclass(frozen=True)
class Tier:
    plugins: tuple[PluginOption, ...]


@dataclass(frozen=True)
class SchedulerConf:
    """A parsed, checked ``volcano-scheduler.conf``."""

    actions: tuple[str, ...]
    tiers: tuple[Tier, ...]
    configurations: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    metrics: Mapping[str, str] = field(default_factory=dict)

    def action_arguments(self, action: str) -> Mapping[str, Any]:
        return self.configurations.get(action, MappingProxyType({}))

    def plugin_names(self) -> list[str]:
        return [p.name for tier in self.tiers for p in tier.plugins]


def _fail(where: str, message: str) -> InvalidConfiguration:
    return InvalidConfiguration(f"{CONF_KEY}: {where}: {message}")


def _parse_actions(value: object) -> tuple[str, ...]:
    if not isinstance(value, str):
        raise _fail("actions", f"must be a comma-separated string, got {type(value).__name__}")
    names = tuple(part.strip() for part in value.split(",") if part.strip())
    if not names:
        raise _fail("actions", "no action configured")
    for index, name in enumerate(names):
        if name not in SUPPORTED_ACTIONS:
            raise _fail(f"actions[{index}]", _unknown("action", name, VOLCANO_ACTIONS, SUPPORTED_ACTIONS))
    return names


def _unknown(what: str, name: str, volcano: tuple[str, ...], supported: tuple[str, ...]) -> str:
    known = ", ".join(supported)
    if name in volcano:
        return f"{what} {name!r} is a Volcano {what} that Caldera does not implement yet; known: {known}"
    return f"unknown {what} {name!r}; known: {known}"


def _parse_plugin(raw: object, where: str) -> PluginOption:
    if isinstance(raw, str):  # the compact `plugins: [priority, gang]` form
        raw = {"name": raw}
    if not isinstance(raw, Mapping):
        raise _fail(where, f"a plugin must be a mapping with a name, got {type(raw).__name__}")
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        raise _fail(f"{where}.name", "required, a plugin name")
    if name not in SUPPORTED_PLUGINS:
        raise _fail(f"{where}.name", _unknown("plugin", name, VOLCANO_PLUGINS, SUPPORTED_PLUGINS))
    switches: dict[str, bool] = {}
    arguments: Mapping[str, Any] = {}
    for key, value in raw.items():
        if key == "name":
            continue
        if key == "arguments":
            if value is None:
                continue
            if not isinstance(value, Mapping):
                raise _fail(f"{where}.arguments", f"must be a mapping, got {type(value).__name__}")
            arguments = {str(k): v for k, v in value.items()}
        elif key in SWITCHES:
            if not isinstance(value, bool):
                raise _fail(f"{where}.{key}", f"must be true or false, got {value!r}")
            switches[key] = value
        else:
            raise _fail(f"{where}.{key}", f"unknown plugin field; known: name, arguments, {', '.join(SWITCHES)}")
    return PluginOption(name, MappingProxyType(switches), MappingProxyType(dict(arguments)))


def _parse_tiers(value: object) -> tuple[Tier, ...]:
    if not isinstance(value, list):
        raise _fail("tiers", "must be a list of {plugins: [...]}")
    tiers = []
    for t_index, raw_tier in enumerate(value):
        where = f"tiers[{t_index}]"
        if not isinstance(raw_tier, Mapping) or not isinstance(raw_tier.get("plugins"), list):
            raise _fail(where, "a tier must be a mapping with a 'plugins' list")
        for key in raw_tier:
            if key != "plugins":
                raise _fail(f"{where}.{key}", "unknown tier field; known: plugins")
        plugins = tuple(
            _parse_plugin(raw, f"{where}.plugins[{p_index}]") for p_index, raw in enumerate(raw_tier["plugins"])
        )
        tiers.append(Tier(plugins))
    _check_conflicts(tiers)
    return tuple(tiers)


def _check_conflicts(tiers: list[Tier]) -> None:
    for index, tier in enumerate(tiers):
        names = {p.name for p in tier.plugins}
        hierarchical_drf = any(p.name == "drf" and p.enabled("enableHierarchy") for p in tier.plugins)
        if hierarchical_drf and "proportion" in names:
            raise _fail(f"tiers[{index}]", "proportion and drf with hierarchy enabled conflicts")


def _parse_configurations(value: object) -> Mapping[str, Mapping[str, Any]]:
    if value is None:
        return MappingProxyType({})
    if not isinstance(value, list):
        raise _fail("configurations", "must be a list of {name, arguments}")
    out: dict[str, Mapping[str, Any]] = {}
    for index, raw in enumerate(value):
        where = f"configurations[{index}]"
        if not isinstance(raw, Mapping):
            raise _fail(where, "must be a mapping with name and arguments")
        name = raw.get("name")
        if not isinstance(name, str) or name not in SUPPORTED_ACTIONS:
            raise _fail(f"{where}.name", _unknown("action", str(name), VOLCANO_ACTIONS, SUPPORTED_ACTIONS))
        arguments = raw.get("arguments") or {}
        if not isinstance(arguments, Mapping):
            raise _fail(f"{where}.arguments", "must be a mapping")
        out[name] = MappingProxyType({str(k): v for k, v in arguments.items()})
    return MappingProxyType(out)


def parse_scheduler_conf(text: str) -> SchedulerConf:
    """Parse the YAML text of ``volcano-scheduler.conf``; raises :class:`InvalidConfiguration`."""
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise InvalidConfiguration(f"{CONF_KEY}: not valid YAML: {exc}") from exc
    if document is None:
        document = {}
    if not isinstance(document, Mapping):
        raise InvalidConfiguration(f"{CONF_KEY}: must be a YAML mapping, got {type(document).__name__}")
    for key in document:
        if key not in _TOP_LEVEL_KEYS:
            raise _fail(str(key), f"unknown field; known: {', '.join(_TOP_LEVEL_KEYS)}")
    # Volcano's loader starts from the compiled-in default and overlays the file.
    actions = _parse_actions(document["actions"]) if "actions" in document else DEFAULT_CONF.actions
    tiers = _parse_tiers(document["tiers"]) if "tiers" in document else DEFAULT_CONF.tiers
    metrics = document.get("metrics") or {}
    if not isinstance(metrics, Mapping):
        raise _fail("metrics", "must be a mapping of strings")
    return SchedulerConf(
        actions=actions,
        tiers=tiers,
        configurations=_parse_configurations(document.get("configurations")),
        metrics=MappingProxyType({str(k): str(v) for k, v in metrics.items()}),
    )


def from_configmap(obj: object) -> SchedulerConf:
    """The configuration carried by a ConfigMap (a wire dict or a model with ``data``)."""
    data = obj.get("data") if isinstance(obj, Mapping) else getattr(obj, "data", None)
    name = _configmap_name(obj)
    if not isinstance(data, Mapping) or CONF_KEY not in data:
        raise InvalidConfiguration(f"ConfigMap {name}: data.{CONF_KEY} is missing")
    text = data[CONF_KEY]
    if not isinstance(text, str):
        raise InvalidConfiguration(f"ConfigMap {name}: data.{CONF_KEY} must be a string")
    try:
        return parse_scheduler_conf(text)
    except InvalidConfiguration as exc:
        raise InvalidConfiguration(f"ConfigMap {name}: {exc}") from exc


def _configmap_name(obj: object) -> str:
    meta = obj.get("metadata") if isinstance(obj, Mapping) else getattr(obj, "metadata", None)
    if isinstance(meta, Mapping):
        return f"{meta.get('namespace') or 'default'}/{meta.get('name') or '?'}"
    if meta is not None:
        return f"{getattr(meta, 'namespace', None) or 'default'}/{getattr(meta, 'name', '?')}"
    return "?"


def _plain_plugin(name: str) -> PluginOption:
    return PluginOption(name, MappingProxyType({}), MappingProxyType({}))


#: Volcano's compiled-in default (``pkg/scheduler/util.go``), used when no ConfigMap is given.
DEFAULT_CONF = SchedulerConf(
    actions=("enqueue", "allocate", "backfill"),
    tiers=(
        Tier(tuple(_plain_plugin(n) for n in ("priority", "gang", "conformance"))),
        Tier(tuple(_plain_plugin(n) for n in ("overcommit", "drf", "predicates", "proportion", "nodeorder"))),
    ),
)
