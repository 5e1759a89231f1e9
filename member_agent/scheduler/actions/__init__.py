"""The actions, one module each, listed explicitly (see ``framework/registry.py``)."""

from __future__ import annotations

from member_agent.scheduler.actions import (
    allocate,
    backfill,
    enqueue,
    gangpreempt,
    gangreclaim,
    preempt,
    reclaim,
)
from member_agent.scheduler.framework.registry import Registry

REGISTRY = Registry("action", [enqueue, allocate, backfill, preempt, reclaim, gangpreempt, gangreclaim])
