"""The actions, one module each, listed explicitly by name and module (see ``framework/registry.py``).

Nothing is imported here: an action's module loads the first time a conf names it.
"""

from __future__ import annotations

from member_agent.scheduler.framework.registry import Registry

REGISTRY = Registry("action", {
    "enqueue": f"{__name__}.enqueue",
    "allocate": f"{__name__}.allocate",
    "backfill": f"{__name__}.backfill",
    "preempt": f"{__name__}.preempt",
    "reclaim": f"{__name__}.reclaim",
    "gangpreempt": f"{__name__}.gangpreempt",
    "gangreclaim": f"{__name__}.gangreclaim",
})
