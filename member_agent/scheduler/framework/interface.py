"""What a plugin and an action are, and the extension points plugins register on.

A **plugin** is built per session from its arguments (``new(args)``), then
``on_session_open(ssn)`` registers callbacks on extension points with
``ssn.add(Point.X, self.name, fn)``, and ``on_session_close(ssn)`` runs at the end.
An **action** runs once per session, in the configured order (``execute(ssn)``).

Callbacks see concrete session types; predicates and row-local scores are vectorised
over node rows (see :class:`~member_agent.scheduler.framework.points.Point`).
"""

from __future__ import annotations

from typing import Protocol

# Point lives below the session (framework/points.py); re-exported here, where plugins look for it
from member_agent.scheduler.framework.points import Point as Point
from member_agent.scheduler.framework.session import Session


class Plugin(Protocol):
    name: str

    def on_session_open(self, ssn: Session) -> None: ...

    def on_session_close(self, ssn: Session) -> None: ...


class Action(Protocol):
    name: str

    def execute(self, ssn: Session) -> None: ...
