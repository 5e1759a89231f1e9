"""Caldera's session scheduler: a pure, synchronous re-implementation of Volcano's.

``run_cycle(snapshot, conf, clock) -> CycleResult``; build the snapshot with
``build_snapshot(objects)`` from Kubernetes objects. See docs/scheduler.md.
"""

from member_agent.scheduler.cycle import run_cycle
from member_agent.scheduler.framework.builder import build_snapshot
from member_agent.scheduler.framework.clock import FixedClock
from member_agent.scheduler.framework.result import CycleResult, JobReport
from member_agent.scheduler.framework.session import SessionOptions

__all__ = ["CycleResult", "FixedClock", "JobReport", "SessionOptions", "build_snapshot", "run_cycle"]
