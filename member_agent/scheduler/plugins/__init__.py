"""The plugins, one module each, listed explicitly (see ``framework/registry.py``)."""

from __future__ import annotations

from member_agent.scheduler.framework.registry import Registry
from member_agent.scheduler.plugins import (
    binpack,
    capacity,
    conformance,
    deadline,
    deviceshare,
    drf,
    fgd,
    gang,
    nodeorder,
    numa_aware,
    overcommit,
    predicates,
    priority,
    proportion,
    sla,
    task_topology,
    tdm,
)

REGISTRY = Registry(
    "plugin",
    [priority, gang, conformance, predicates, nodeorder, binpack, drf, proportion, capacity, overcommit,
     numa_aware, task_topology, deviceshare, fgd, sla, deadline, tdm],
)
