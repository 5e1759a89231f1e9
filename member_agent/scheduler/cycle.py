"""``run_cycle``: one scheduling session, a pure function of (snapshot, conf, clock).

open (build every plugin from its arguments, tier by tier; they register callbacks) →
run the configured actions in order → close (plugins' close hooks, PodGroup phases and
conditions, reasons) → :class:`CycleResult`. No I/O; time comes from ``clock``.
"""

from __future__ import annotations

import hashlib
from typing import Any

from member_agent.scheduler.actions import REGISTRY as ACTIONS
from member_agent.scheduler.actions.enqueue import Enqueue
from member_agent.scheduler.framework.clock import FixedClock, SessionClock
from member_agent.scheduler.framework.close import close_session
from member_agent.scheduler.framework.registry import Registry
from member_agent.scheduler.framework.result import CycleResult
from member_agent.scheduler.framework.session import Session, SessionOptions
from member_agent.scheduler.framework.snapshot import Snapshot
from member_agent.scheduler.plugins import REGISTRY as PLUGINS
from member_agent.scheduler.shape_carry import carry_for
from policies.scheduler_conf import DEFAULT_CONF, SchedulerConf


def session_uid(clock: SessionClock, snapshot: Snapshot) -> str:
    """A stable id: the same snapshot at the same time gives the same session UID."""
    digest = hashlib.sha1(f"{clock.now():.6f}/{len(snapshot.jobs)}/{len(snapshot.nodes)}".encode()).hexdigest()
    return f"{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}"


def build_plugins(conf: SchedulerConf, plugins: Registry) -> tuple[list[list[tuple[Any, Any]]], list[str]]:
    """Every plugin instance of every tier, arguments checked (errors name plugin and key)."""
    tiers: list[list[tuple[Any, Any]]] = []
    warnings: list[str] = []
    for tier in conf.tiers:
        built = []
        for option in tier.plugins:
            plugin, notes = plugins.build(option.name, option.arguments)
            warnings.extend(notes)
            built.append((option, plugin))
        tiers.append(built)
    return tiers, warnings


def build_actions(conf: SchedulerConf, actions: Registry) -> tuple[list[Any], list[str]]:
    built, warnings = [], []
    for name in conf.actions:
        action, notes = actions.build(name, conf.action_arguments(name))
        warnings.extend(notes)
        built.append(action)
    return built, warnings


def open_session(snapshot: Snapshot, conf: SchedulerConf, clock: SessionClock,
                 options: SessionOptions = SessionOptions(), plugins: Registry = PLUGINS, *,
                 enqueue_first: bool = False) -> Session:
    tiers, warnings = build_plugins(conf, plugins)
    warnings = [*conf.warnings, *warnings]
    ssn = Session(snapshot, conf, session_uid(clock, snapshot), options)
    ssn.enqueue_first = enqueue_first
    ssn.now = clock.now()
    for warning in warnings:
        ssn.warn(warning)
    if options.verbosity >= 2:  # the lines are not built in a session that keeps none
        ssn.log(3, f"Open Session {ssn.uid} with <{len(snapshot.jobs)}> Job and <{len(ssn.queues)}> Queues")
        ssn.log(2, f"Session Open {ssn.uid}: {len(ssn.node_names)} nodes, {len(snapshot.jobs)} jobs, {len(ssn.queues)} queues")
    for tier in tiers:
        ssn.begin_tier()
        for option, plugin in tier:
            ssn.open_plugin(option, plugin)
    ssn.finish_open()
    return ssn


def _enqueue_first(actions: list[Any]) -> bool:
    """Whether ``enqueue`` runs first and never again (``Session.enqueue_first``)."""
    return bool(actions) and isinstance(actions[0], Enqueue) and not any(isinstance(a, Enqueue) for a in actions[1:])


def run_cycle(snapshot: Snapshot, conf: SchedulerConf = DEFAULT_CONF, clock: SessionClock | None = None, *,
              options: SessionOptions = SessionOptions(), plugins: Registry = PLUGINS,
              actions: Registry = ACTIONS) -> CycleResult:
    """Run one session over ``snapshot`` and return what it decided."""
    clock = clock or FixedClock()
    started = clock.monotonic()
    built_actions, warnings = build_actions(conf, actions)
    ssn = open_session(snapshot, conf, clock, options, plugins, enqueue_first=_enqueue_first(built_actions))
    carry = carry_for(snapshot)  # shape caches from this scheduler cache's last session (shape_carry.py)
    if carry is not None:
        carry.begin(ssn)
    for warning in warnings:
        ssn.warn(warning)
    for action in built_actions:
        action.execute(ssn)
    if carry is not None:
        carry.end(ssn)
    result = close_session(ssn, clock.monotonic() - started)
    ssn.dispose()  # the result holds plain data only
    return result
