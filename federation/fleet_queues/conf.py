"""The federation's ``volcano-scheduler.conf``: which queue plugin rules the fleet's queues.

Read with the same parser as the agents' (policies/scheduler_conf.py), plus one rule of the
federation's own: proportion and capacity are two answers to "what does a queue deserve", and
Volcano's capacity plugin says not to combine them; a fleet must have one answer, so a conf naming
both is refused, with the field path of the second one.
"""

from __future__ import annotations

from typing import Any, Mapping

import yaml

from federation.fleet_queues.model import FleetConf, QueuePlugin
from policies.errors import InvalidConfiguration
from policies.scheduler_conf import CONF_KEY, DEFAULT_CONF, SchedulerConf, parse_scheduler_conf

QUEUE_PLUGINS: tuple[QueuePlugin, ...] = ("proportion", "capacity")


def fleet_conf(conf: SchedulerConf = DEFAULT_CONF) -> FleetConf:
    """The fleet admission settings of a parsed conf (the first queue plugin wins; see :func:`load`)."""
    plugin: QueuePlugin | None = None
    hierarchical = False
    enqueue = True
    factor: float | None = None
    for tier in conf.tiers:
        for option in tier.plugins:
            if option.name in QUEUE_PLUGINS and plugin is None:
                plugin = "proportion" if option.name == "proportion" else "capacity"
                hierarchical = option.name == "capacity" and option.enabled("enableHierarchy")
                enqueue = option.enabled("enableJobEnqueued")
            elif option.name == "overcommit" and option.enabled("enableJobEnqueued") and \
                    "overcommit-factor" in option.arguments:
                factor = _factor(option.arguments)  # only a written factor: the fleet's room is placement's
    reclaim = any(action in ("reclaim", "gangreclaim") for action in conf.actions)
    return FleetConf(plugin=plugin, hierarchical=hierarchical, enqueue=enqueue, overcommit_factor=factor,
                     reclaim=reclaim)


def _factor(arguments: Mapping[str, Any]) -> float:
    """overcommit-factor: a number; below 1 Volcano resets it to 1.2."""
    raw = arguments.get("overcommit-factor", 1.2)
    if isinstance(raw, bool) or not isinstance(raw, (int, float, str)):
        raise InvalidConfiguration(f"{CONF_KEY}: overcommit argument overcommit-factor must be a number, got {raw!r}")
    try:
        value = float(raw)
    except ValueError as exc:
        raise InvalidConfiguration(f"{CONF_KEY}: overcommit argument overcommit-factor must be a number, "
                                   f"got {raw!r}") from exc
    return value if value >= 1.0 else 1.2


def load(text: str) -> tuple[SchedulerConf, FleetConf]:
    """Parse a conf for the federation; raises :class:`InvalidConfiguration` naming the field path."""
    conf = parse_scheduler_conf(text)
    _refuse_both(text)
    return conf, fleet_conf(conf)


def _refuse_both(text: str) -> None:
    document = yaml.safe_load(text) or {}
    tiers = document.get("tiers") if isinstance(document, Mapping) else None
    seen: list[tuple[str, str]] = []
    for t_index, tier in enumerate(tiers if isinstance(tiers, list) else []):
        plugins = tier.get("plugins") if isinstance(tier, Mapping) else None
        for p_index, plugin in enumerate(plugins if isinstance(plugins, list) else []):
            name = plugin.get("name") if isinstance(plugin, Mapping) else plugin
            if name in QUEUE_PLUGINS:
                seen.append((str(name), f"tiers[{t_index}].plugins[{p_index}].name"))
    names = {name for name, _ in seen}
    if len(names) > 1:
        first, (second, path) = seen[0], next(s for s in seen if s[0] != seen[0][0])
        raise InvalidConfiguration(
            f"{CONF_KEY}: {path}: plugin {second!r} conflicts with {first[0]!r} ({first[1]}): proportion and "
            "capacity cannot be enabled together (Volcano's capacity plugin: \"do not combine with proportion\"); "
            "the federation's queues need one rule for what a queue deserves")

