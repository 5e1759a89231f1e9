"""Caldera's session scheduler: a pure, synchronous re-implementation of Volcano's.

``run_cycle(snapshot, conf, clock) -> CycleResult``; build the snapshot with
``build_snapshot(objects)`` from Kubernetes objects. See docs/scheduler.md.

The names below are loaded on first use (PEP 562), so importing a light submodule such as
``member_agent.scheduler.framework.result`` does not load every action and plugin.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "run_cycle": "member_agent.scheduler.cycle",
    "build_snapshot": "member_agent.scheduler.framework.builder",
    "FixedClock": "member_agent.scheduler.framework.clock",
    "CycleResult": "member_agent.scheduler.framework.result",
    "JobReport": "member_agent.scheduler.framework.result",
    "SessionOptions": "member_agent.scheduler.framework.session",
}

__all__ = ["CycleResult", "FixedClock", "JobReport", "SessionOptions", "build_snapshot", "run_cycle"]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
