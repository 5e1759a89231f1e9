"""The controller manager: runs the federation controllers against an API server, given only a
kubeconfig.

``caldera controllers --kubeconfig FILE`` runs one on its own; ``caldera serve`` starts one next to
its API server in the same process (federation/cli/serve.py). Either way the controllers reach the
API through the Kubernetes API client only.

In a test::

    async with ControllerManager(server.kubeconfig(), [placement_controller]):
        ...   # the controllers run until the block ends

Leadership: the manager does not run the controllers itself but hands :meth:`ControllerManager.lead`
to its ``gate``. The default gate leads at once, for as long as the manager runs. A leader-election
gate (several replicas, one active) calls ``lead(stop_leading)`` each time it wins the lease and sets
``stop_leading`` when it loses it; ``lead`` then stops every controller and returns, and the gate
may campaign again. The gate must return once the manager's ``stop`` event is set.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from federation.controllers.context import Controller, ControllerContext

log = logging.getLogger("caldera.controllers")

#: run every controller until the event is set
Lead = Callable[[asyncio.Event], Awaitable[None]]
#: ``await gate(lead, stop)``: call ``lead`` while this replica may lead; return once ``stop`` is set
Gate = Callable[[Lead, asyncio.Event], Awaitable[None]]

#: how long the controllers may take to return on their own once their stop event is set, before
#: they are cancelled (short: controllers are cancellation-safe, and some only look at stop now and then)
STOP_GRACE = 0.1
#: how long a controller still running after that may take to finish once cancelled
STOP_TIMEOUT = 5.0


def registered_controllers() -> list[Controller]:
    """Every controller in ``federation.controllers.CONTROLLERS``, in order."""
    from federation.controllers import CONTROLLERS

    return list(CONTROLLERS)


def server_url(kubeconfig: dict[str, Any]) -> str:
    """The API server URL of the kubeconfig's current context; ValueError naming the field at fault."""
    def named(section: str, body: str) -> dict[str, dict[str, Any]]:
        entries = kubeconfig.get(section) or []
        if not isinstance(entries, list):
            raise ValueError(f"{section} must be a list")
        return {e.get("name"): e.get(body) or {} for e in entries if isinstance(e, dict)}

    contexts = named("contexts", "context")
    if not contexts:
        raise ValueError("kubeconfig has no contexts[]")
    current = kubeconfig.get("current-context") or next(iter(contexts))
    if current not in contexts:
        raise ValueError(f"current-context {current!r} is not one of contexts[].name")
    cluster = contexts[current].get("cluster")
    clusters = named("clusters", "cluster")
    if cluster not in clusters:
        raise ValueError(f"contexts[{current}].context.cluster {cluster!r} is not one of clusters[].name")
    server = clusters[cluster].get("server")
    if not isinstance(server, str) or not server.startswith(("http://", "https://")):
        raise ValueError(f"clusters[{cluster}].cluster.server must be an http:// or https:// URL, got {server!r}")
    return server


async def always_lead(lead: Lead, stop: asyncio.Event) -> None:
    """The gate of a single replica: lead from start to stop."""
    await lead(stop)


class ControllerManager:
    def __init__(self, kubeconfig: dict[str, Any], controllers: Sequence[Controller] | None = None, *,
                 data_dir: Path | str = ".", options: dict[str, Any] | None = None,
                 gate: Gate = always_lead, stop_grace: float = STOP_GRACE) -> None:
        self.kubeconfig = kubeconfig
        self.stop_grace = stop_grace
        self.url = server_url(kubeconfig)
        self.controllers = list(controllers) if controllers is not None else registered_controllers()
        self.data_dir = Path(data_dir)
        self.options = dict(options or {})
        self.gate = gate
        self.stop_event = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def context(self, stop: asyncio.Event) -> ControllerContext:
        return ControllerContext(self.url, self.kubeconfig, stop, self.data_dir, dict(self.options))

    async def lead(self, stop_leading: asyncio.Event) -> None:
        """Run every controller until ``stop_leading`` or the manager's stop is set, then stop them."""
        stop = asyncio.Event()
        context = self.context(stop)
        tasks = [asyncio.create_task(self._run_one(controller, context)) for controller in self.controllers]
        waits = [asyncio.ensure_future(stop_leading.wait()), asyncio.ensure_future(self.stop_event.wait())]
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stop.set()
            for waiting in waits:
                waiting.cancel()
            if tasks:
                _, running = await asyncio.wait(tasks, timeout=self.stop_grace)
                for task in running:
                    task.cancel()
                for task in running:
                    with contextlib.suppress(asyncio.CancelledError, Exception):
                        await asyncio.wait_for(task, STOP_TIMEOUT)

    @staticmethod
    async def _run_one(controller: Controller, context: ControllerContext) -> None:
        try:
            await controller(context)
        except asyncio.CancelledError:
            raise
        except Exception:  # a crashed controller is logged; the others keep running
            log.exception("controller %s crashed", getattr(controller, "__name__", controller))

    # -- lifecycle -----------------------------------------------------------------------

    async def start(self) -> "ControllerManager":
        if self._task is None:
            self._task = asyncio.create_task(self.gate(self.lead, self.stop_event))
        return self

    async def stop(self) -> None:
        self.stop_event.set()
        task, self._task = self._task, None
        if task is not None:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(task, STOP_TIMEOUT * 2)

    async def __aenter__(self) -> "ControllerManager":
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()
