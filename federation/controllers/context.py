"""What a federation controller is given: where the API is and how to reach it, nothing more.

A controller is ``async def controller(ctx: ControllerContext) -> None``: it opens its own
Kubernetes API client from ``ctx.kubeconfig``, works until ``ctx.stop`` is set and returns (or is
cancelled). It never sees the API server's objects, so the same controller runs in the ``caldera
serve`` process or in a separate ``caldera controllers`` process against any Caldera API server.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class ControllerContext:
    #: the API server's base URL (the kubeconfig's current cluster)
    url: str
    #: a kubeconfig dict for the API (admin role under ``caldera serve``)
    kubeconfig: dict[str, Any]
    #: set when the controller must stop (shutdown, or leadership lost)
    stop: asyncio.Event
    #: a directory the controller may keep local files in
    data_dir: Path
    #: options set by command-line flags (e.g. cluster health thresholds, federation/health_options.py)
    extra: dict[str, Any] = field(default_factory=dict)


Controller = Callable[[ControllerContext], Awaitable[None]]
