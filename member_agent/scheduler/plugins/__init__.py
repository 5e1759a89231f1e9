"""The plugins, one module each, listed explicitly (see ``framework/registry.py``)."""

from __future__ import annotations

from member_agent.scheduler.framework.registry import Registry
from member_agent.scheduler.plugins import (
    binpack,
    capacity,
    conformance,
    drf,
    gang,
    nodeorder,
    overcommit,
    predicates,
    priority,
    proportion,
)

REGISTRY = Registry(
    "plugin",
    [priority, gang, conformance, predicates, nodeorder, binpack, drf, proportion, capacity, overcommit],
)
