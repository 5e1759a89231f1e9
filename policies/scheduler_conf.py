"""The Volcano scheduler configuration (``volcano-scheduler.conf``), parsed as Volcano parses it.

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

Volcano decodes the file with ``gopkg.in/yaml.v2`` (non-strict) and then checks only two
things; Caldera follows it rule by rule:

* every field of Volcano's ``PluginOption`` is accepted, old and new spellings
  (``enableNamespaceOrder``, ``EnabledClusterOrder`` / ``enabledClusterOrder``); an absent
  switch takes Volcano's YAML default (true, except ``enableHierarchy``);
* a key Volcano does not know is ignored by Volcano; here it is accepted with a warning naming
  the key and its line (kubectl's "unknown field"), so a typo stays visible;
* a value of the wrong type (a switch that is not a boolean, ``actions`` not a string) is a
  decoding error in Volcano: the whole file is refused;
* an action name Volcano does not register refuses the whole file ("failed to find Action");
  ``vc-scheduler`` then keeps its previous configuration (the compiled-in default at start-up),
  which is what the agent does with :class:`InvalidConfiguration`;
* an unknown plugin name passes the parse; at session open Volcano logs "Failed to get plugin"
  and runs without it. Here it is dropped with a warning, as is a Volcano action or plugin
  Caldera does not implement (so a Volcano conf keeps working);
* drf with ``enableHierarchy`` and proportion in one tier is refused (Volcano's one check).

The names known here are kept in step with the scheduler's registries by a test
(``tests/scheduler/test_conf.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping

import yaml

from policies.codec_paths import PathPart, format_path, line_map
from policies.codec_yaml import parse_chunk
from policies.errors import InvalidConfiguration

CONF_KEY = "volcano-scheduler.conf"

#: Every action some Volcano release registers (``actions/factory.go``; ``reserve`` and
#: ``elect`` are the older reservation pair, back in recent installers).
VOLCANO_ACTIONS = (
    "enqueue", "allocate", "backfill", "preempt", "reclaim", "gangpreempt", "gangreclaim", "shuffle",
    "reserve", "elect",
)
#: Every plugin some Volcano release registers (``plugins/factory.go``), YAML spelling.
VOLCANO_PLUGINS = (
    "drf", "gang", "deviceshare", "predicates", "priority", "nodeorder", "conformance", "binpack",
    "resource-strategy-fit", "tdm", "overcommit", "sla", "task-topology", "numa-aware", "cdp",
    "rescheduling", "usage", "pdb", "nodegroup", "network-topology-aware", "proportion", "capacity",
    "extender", "resourcequota", "reservation", "capacity-card",
)

#: The actions Caldera's scheduler implements (must equal ``member_agent.scheduler.actions.REGISTRY``).
SUPPORTED_ACTIONS = ("enqueue", "allocate", "backfill", "preempt", "reclaim", "gangpreempt", "gangreclaim")
#: The plugins Caldera's scheduler implements (must equal ``member_agent.scheduler.plugins.REGISTRY``).
SUPPORTED_PLUGINS = (
    "priority", "gang", "conformance", "predicates", "nodeorder", "binpack", "drf", "proportion",
    "capacity", "overcommit", "numa-aware", "task-topology", "deviceshare", "sla", "deadline",
    "tdm", "fgd", "network-topology-aware",
)

#: Per-extension switches of today's ``PluginOption`` (literal YAML keys, with Volcano's
#: inconsistent ``enable``/``enabled``).
SWITCHES = (
    "enableJobOrder", "enableHierarchy", "enableJobReady", "enableJobPipelined", "enableTaskOrder",
    "enablePreemptable", "enableReclaimable", "enablePreemptive", "enableQueueOrder", "enabledClusterOrder",
    "enablePredicate", "enableBestNode", "enableNodeOrder", "enableTargetJob", "enableReservedNodes",
    "enableJobEnqueued", "enabledVictim", "enableJobStarving", "enabledOverused", "enabledAllocatable",
    "enabledHyperNodeOrder", "enabledSubJobReady", "enabledSubJobPipelined", "enabledSubJobOrder",
    "enabledHyperNodeGradient",
)
#: Older spellings of the same ``PluginOption`` fields (Volcano ≤ 1.7 used ``EnabledClusterOrder``).
SWITCH_ALIASES = MappingProxyType({"EnabledClusterOrder": "enabledClusterOrder"})
#: An action's arguments when the conf's ``configurations`` names none (read-only, shared).
NO_ARGUMENTS: Mapping[str, Any] = MappingProxyType({})
#: Fields older Volcano releases had and Caldera has no extension point for: accepted (typed
#: like Volcano: a boolean), remembered, without effect (no namespace ordering in Caldera).
RETIRED_SWITCHES = ("enableNamespaceOrder",)
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
        switch = SWITCH_ALIASES.get(switch, switch)
        if switch not in SWITCHES and switch not in RETIRED_SWITCHES:
            raise KeyError(f"unknown plugin switch {switch!r}")
        return self.switches.get(switch, switch not in OFF_BY_DEFAULT)


@dataclass(frozen=True)
class Tier:
    plugins: tuple[PluginOption, ...]


@dataclass(frozen=True)
class SchedulerConf:
    """A parsed, checked ``volcano-scheduler.conf`` (``warnings``: what was ignored, and where)."""

    actions: tuple[str, ...]
    tiers: tuple[Tier, ...]
    configurations: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    metrics: Mapping[str, str] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()

    def action_arguments(self, action: str) -> Mapping[str, Any]:
        # one shared empty mapping, so a caller remembering arguments by object sees the same one
        return self.configurations.get(action, NO_ARGUMENTS)

    def plugin_names(self) -> list[str]:
        return [p.name for tier in self.tiers for p in tier.plugins]


class _Reader:
    """One parse: the line of every field path, and the warnings gathered so far."""

    def __init__(self, lines: Mapping[str, int]) -> None:
        self.lines = lines
        self.warnings: list[str] = []

    def where(self, parts: list[PathPart]) -> str:
        path = format_path(parts)
        line = self.lines.get(path)
        return f"{path} (line {line})" if line else path

    def fail(self, parts: list[PathPart], message: str) -> InvalidConfiguration:
        return InvalidConfiguration(f"{CONF_KEY}: {self.where(parts)}: {message}")

    def warn(self, parts: list[PathPart], message: str) -> None:
        line = self.lines.get(format_path(parts))
        at = f" line {line}" if line else ""
        self.warnings.append(f"{CONF_KEY}{at}: {message}")

    def unknown_field(self, parts: list[PathPart], known: tuple[str, ...]) -> None:
        self.warn(parts, f'unknown field "{format_path(parts)}" (Volcano ignores it; known here: '
                  f"{', '.join(known)})")


def _parse_actions(reader: _Reader, value: object) -> tuple[str, ...]:
    if not isinstance(value, str):
        raise reader.fail(["actions"], f"must be a comma-separated string, got {type(value).__name__}"
                          " (Volcano refuses the file)")
    names = tuple(part.strip() for part in value.split(","))
    kept = []
    for index, name in enumerate(names):
        if name in SUPPORTED_ACTIONS:
            kept.append(name)
        elif name in VOLCANO_ACTIONS:
            reader.warn(["actions"], f"action {name!r} is a Volcano action Caldera does not implement; skipped")
        else:
            known = ", ".join(SUPPORTED_ACTIONS)
            shown = f"unknown action {name!r}" if name else "an empty action name"
            raise reader.fail(["actions"], f"{shown} (item {index}); Volcano refuses the whole file "
                              f"(\"failed to find Action\") and keeps its previous configuration; known: {known}")
    if not kept:
        raise reader.fail(["actions"], "no action Caldera implements is configured")
    return tuple(kept)


def _parse_switch(reader: _Reader, parts: list[PathPart], value: object) -> bool:
    if not isinstance(value, bool):
        raise reader.fail(parts, f"must be true or false, got {value!r} (Volcano refuses the file)")
    return value


def _parse_plugin(reader: _Reader, raw: object, parts: list[PathPart]) -> PluginOption | None:
    if isinstance(raw, str):  # the compact `plugins: [priority, gang]` form
        raw = {"name": raw}
    if not isinstance(raw, Mapping):
        raise reader.fail(parts, f"a plugin must be a mapping with a name, got {type(raw).__name__}")
    switches: dict[str, bool] = {}
    arguments: Mapping[str, Any] = {}
    for key, value in raw.items():
        here = [*parts, str(key)]
        if key == "name":
            continue
        if key == "arguments":
            if value is not None and not isinstance(value, Mapping):
                raise reader.fail(here, f"must be a mapping, got {type(value).__name__}")
            arguments = {str(k): v for k, v in (value or {}).items()}
        elif key in SWITCHES or key in RETIRED_SWITCHES or key in SWITCH_ALIASES:
            switches[SWITCH_ALIASES.get(key, key)] = _parse_switch(reader, here, value)
        else:
            reader.unknown_field(here, ("name", "arguments", *SWITCHES, *SWITCH_ALIASES, *RETIRED_SWITCHES))
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        reader.warn([*parts], f"{format_path(parts)}: a plugin without a name; Volcano fails to get it and "
                    "runs without it (skipped)")
        return None
    if name not in SUPPORTED_PLUGINS:
        if name in VOLCANO_PLUGINS:
            what = "a Volcano plugin Caldera does not implement; skipped"
        else:
            what = (f"an unknown plugin (Volcano logs \"Failed to get plugin\" and runs without it); skipped; "
                    f"known: {', '.join(SUPPORTED_PLUGINS)}")
        reader.warn([*parts, "name"], f"plugin {name!r} is {what}")
        return None
    return PluginOption(name, MappingProxyType(switches), MappingProxyType(dict(arguments)))


def _parse_tiers(reader: _Reader, value: object) -> tuple[Tier, ...]:
    if not isinstance(value, list):
        raise reader.fail(["tiers"], "must be a list of {plugins: [...]}")
    tiers = []
    for t_index, raw_tier in enumerate(value):
        where: list[PathPart] = ["tiers", t_index]
        if not isinstance(raw_tier, Mapping):
            raise reader.fail(where, "a tier must be a mapping with a 'plugins' list")
        for key in raw_tier:
            if key != "plugins":
                reader.unknown_field([*where, str(key)], ("plugins",))
        raw_plugins = raw_tier.get("plugins") or []
        if not isinstance(raw_plugins, list):
            raise reader.fail([*where, "plugins"], "must be a list of plugins")
        _check_conflict(reader, where, raw_plugins)
        parsed = (_parse_plugin(reader, raw, [*where, "plugins", p_index]) for p_index, raw in enumerate(raw_plugins))
        tiers.append(Tier(tuple(p for p in parsed if p is not None)))
    return tuple(tiers)


def _check_conflict(reader: _Reader, where: list[PathPart], raw_plugins: list[Any]) -> None:
    """Volcano's only semantic check, made on the names as written (before any is skipped)."""
    entries = [p for p in raw_plugins if isinstance(p, Mapping)]
    hierarchical_drf = any(p.get("name") == "drf" and p.get("enableHierarchy") is True for p in entries)
    proportion = any((p.get("name") if isinstance(p, Mapping) else p) == "proportion" for p in raw_plugins)
    if hierarchical_drf and proportion:
        raise reader.fail(where, "proportion and drf with hierarchy enabled conflicts")


def _parse_configurations(reader: _Reader, value: object) -> Mapping[str, Mapping[str, Any]]:
    if value is None:
        return MappingProxyType({})
    if not isinstance(value, list):
        raise reader.fail(["configurations"], "must be a list of {name, arguments}")
    out: dict[str, Mapping[str, Any]] = {}
    for index, raw in enumerate(value):
        where: list[PathPart] = ["configurations", index]
        if not isinstance(raw, Mapping):
            raise reader.fail(where, "must be a mapping with name and arguments")
        for key in raw:
            if key not in ("name", "arguments"):
                reader.unknown_field([*where, str(key)], ("name", "arguments"))
        arguments = raw.get("arguments") or {}
        if not isinstance(arguments, Mapping):
            raise reader.fail([*where, "arguments"], "must be a mapping")
        name = raw.get("name")
        if name not in SUPPORTED_ACTIONS:
            # Volcano looks configurations up by action name; one no action asks for is unused.
            reader.warn([*where, "name"], f"configuration for {name!r}, not an action Caldera implements; ignored")
            continue
        out[str(name)] = MappingProxyType({str(k): v for k, v in arguments.items()})
    return MappingProxyType(out)


def parse_scheduler_conf(text: str) -> SchedulerConf:
    """Parse the YAML text of ``volcano-scheduler.conf``; raises :class:`InvalidConfiguration`."""
    try:
        node, document = parse_chunk(text, 0)
    except yaml.YAMLError as exc:
        raise InvalidConfiguration(f"{CONF_KEY}: not valid YAML: {exc}") from exc
    if document is None:
        document = {}
    if not isinstance(document, Mapping):
        raise InvalidConfiguration(f"{CONF_KEY}: must be a YAML mapping, got {type(document).__name__}")
    reader = _Reader(line_map(node, 0))
    for key in document:
        if key not in _TOP_LEVEL_KEYS:
            reader.unknown_field([str(key)], _TOP_LEVEL_KEYS)
    if "actions" in document:
        actions = _parse_actions(reader, document["actions"])
    else:
        # Volcano refuses a file without actions and keeps its previous (default) conf;
        # Caldera has always run the default actions with the file's tiers instead.
        reader.warn([], "no actions: Volcano refuses such a file; Caldera runs the default actions "
                    f"({', '.join(DEFAULT_CONF.actions)}) with its tiers")
        actions = DEFAULT_CONF.actions
    tiers = _parse_tiers(reader, document["tiers"]) if "tiers" in document else DEFAULT_CONF.tiers
    metrics = document.get("metrics") or {}
    if not isinstance(metrics, Mapping):
        raise reader.fail(["metrics"], "must be a mapping of strings")
    return SchedulerConf(
        actions=actions,
        tiers=tiers,
        configurations=_parse_configurations(reader, document.get("configurations")),
        metrics=MappingProxyType({str(k): str(v) for k, v in metrics.items()}),
        warnings=tuple(reader.warnings),
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
