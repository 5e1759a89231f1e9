"""The plugins, one module each, listed explicitly by name and module (see ``framework/registry.py``).

Nothing is imported here: a plugin's module loads the first time a conf names it, so importing a
helper such as ``plugins.device_ledger`` (the agent's scheduler cache does) does not load all 17.
"""

from __future__ import annotations

from member_agent.scheduler.framework.registry import Registry

REGISTRY = Registry("plugin", {
    "priority": f"{__name__}.priority",
    "gang": f"{__name__}.gang",
    "conformance": f"{__name__}.conformance",
    "predicates": f"{__name__}.predicates",
    "nodeorder": f"{__name__}.nodeorder",
    "binpack": f"{__name__}.binpack",
    "drf": f"{__name__}.drf",
    "proportion": f"{__name__}.proportion",
    "capacity": f"{__name__}.capacity",
    "overcommit": f"{__name__}.overcommit",
    "numa-aware": f"{__name__}.numa_aware",
    "task-topology": f"{__name__}.task_topology",
    "deviceshare": f"{__name__}.deviceshare",
    "fgd": f"{__name__}.fgd",
    "sla": f"{__name__}.sla",
    "deadline": f"{__name__}.deadline",
    "tdm": f"{__name__}.tdm",
    "network-topology-aware": f"{__name__}.network_topology_aware",
})
