"""Composition at the edge: the API server and the controller manager, started together or apart.

Neither component imports the other. ``caldera serve`` runs :class:`FederationServer` (an
:class:`~federation.apiserver.server.ApiServer` that, once listening, starts a
:class:`~federation.controllers.manager.ControllerManager` with its own admin kubeconfig);
``caldera controllers`` runs a controller manager alone against any API server's kubeconfig.

Tests use :class:`FederationServer` like an ApiServer::

    async with FederationServer(ServerConfig(data_dir=tmp_path), controllers=[placement_controller]) as server:
        ...
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from federation.apiserver.server import ApiServer, ServerConfig
from federation.controllers.context import Controller
from federation.controllers.manager import ControllerManager, Gate, always_lead

Announce = Callable[[str], None]


class FederationServer(ApiServer):
    """An API server with a controller manager in the same process (none in member mode).

    ``controllers`` defaults to every registered controller; ``controller_options`` reach each
    controller as ``ControllerContext.extra``; ``gate`` decides when they run (leader election).
    """

    def __init__(self, config: ServerConfig, controllers: Sequence[Controller] | None = None, *,
                 run_controllers: bool = True, controller_options: dict[str, Any] | None = None,
                 gate: Gate = always_lead, election: Any = None) -> None:
        super().__init__(config)
        #: an ElectionConfig: lead only while holding the controllers' Lease (federation/controllers/leader_election.py)
        self.election = election
        self.controllers = controllers
        self.run_controllers = run_controllers and not config.member_mode
        self.controller_options = dict(controller_options or {})
        self.gate = gate
        self.manager: ControllerManager | None = None

    async def start(self) -> "FederationServer":
        await super().start()
        if self.run_controllers:
            try:
                kubeconfig = self.kubeconfig("admin", token=self.admin_token)
                self.manager = ControllerManager(kubeconfig, self.controllers, data_dir=self.data_dir,
                                                 options=self.controller_options,
                                                 gate=election_gate(kubeconfig, self.election, self.gate))
                await self.manager.start()
            except BaseException:
                await super().stop()
                raise
        return self

    async def stop(self) -> None:
        """The controllers first (they would only see their API vanish), then the API server."""
        manager, self.manager = self.manager, None
        if manager is not None:
            await manager.stop()
        await super().stop()


def election_gate(kubeconfig: dict[str, Any], election: Any, default: Gate = always_lead) -> Gate:
    if election is None:
        return default
    from federation.controllers.leader_election import leader_gate

    return leader_gate(kubeconfig, election)[0]


async def wait_for_signal() -> None:
    """Return on SIGTERM or SIGINT."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    await stop.wait()


async def serve_forever(server: ApiServer, announce: Announce = print) -> int:
    """``caldera serve``: start ``server``, say where it is, run until a signal, stop."""
    config = server.config
    await server.start()
    store = server.store.describe if config.etcd else str(server.data_dir.resolve())
    announce(f"caldera API server listening on {server.url} (data: {store})")
    if server.admin_token and config.token_file is None:
        announce(f"admin kubeconfig: {(server.data_dir / 'admin.kubeconfig').resolve()}  "
                 f"(export KUBECONFIG=... or pass --kubeconfig)")
    election = getattr(server, "election", None)
    if election is not None and getattr(server, "run_controllers", False):
        announce(f"leader election on Lease caldera-system/caldera-controllers as {election.identity}")
    for cluster in config.agent_kubeconfigs:
        announce(f"agent kubeconfig for cluster {cluster}: {(server.data_dir / f'agent-{cluster}.kubeconfig').resolve()}")
    await wait_for_signal()
    announce("caldera API server shutting down")
    await server.stop()
    return 0


async def controllers_forever(kubeconfig: dict[str, Any], data_dir: Path, options: dict[str, Any],
                              announce: Announce = print, election: Any = None) -> int:
    """``caldera controllers``: run every registered controller against ``kubeconfig`` until a signal."""
    manager = ControllerManager(kubeconfig, data_dir=data_dir, options=options,
                                gate=election_gate(kubeconfig, election))
    if election is not None:
        announce(f"leader election on Lease caldera-system/caldera-controllers as {election.identity}")
    await manager.start()
    names = ", ".join(getattr(c, "__name__", str(c)).removesuffix("_controller") for c in manager.controllers)
    announce(f"caldera controller manager running {len(manager.controllers)} controllers ({names}) "
             f"against {manager.url}")
    await wait_for_signal()
    announce("caldera controller manager shutting down")
    await manager.stop()
    return 0
