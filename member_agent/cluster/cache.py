"""The agent's view of the member cluster: nodes and pods kept current by list + watch.

One :class:`ClusterCache` per agent. :meth:`run` lists nodes and pods through the gateway,
then follows both watches from the listing's resourceVersion; a :class:`Gone` (410) or a
dropped watch means list again. Readers get plain dicts (copies are theirs to change) and
:attr:`changed`, an event set after every change so loops can wake up instead of polling.
Pod requests are computed once per pod uid (pod specs do not change).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, AsyncIterator, Callable

from member_agent.cluster.clock import Clock
from member_agent.cluster.gateway import ClusterGateway, GatewayError, Listing, Obj, WatchEvent, key_of

log = logging.getLogger("caldera.agent.cache")


class ClusterCache:
    def __init__(self, gateway: ClusterGateway, clock: Clock) -> None:
        self.gateway = gateway
        self.clock = clock
        self.nodes: dict[str, Obj] = {}
        self.pods: dict[str, Obj] = {}
        self.changed = asyncio.Event()
        self.synced = asyncio.Event()
        #: called after every change (the agent counts them, see member_agent/changes.py)
        self.listeners: list[Callable[[], None]] = []
        self._requests: dict[str, dict[str, float]] = {}
        self._listed: set[str] = set()

    def request_of(self, pod: Obj, compute: Callable[[Obj], dict[str, float]]) -> dict[str, float]:
        uid = (pod.get("metadata") or {}).get("uid", "")
        cached = self._requests.get(uid)
        if cached is None:
            cached = self._requests[uid] = compute(pod)
        return cached

    def pod_requests(self) -> dict[str, dict[str, float]]:
        return self._requests

    async def run(self) -> None:
        await asyncio.gather(
            self._follow("Node", self.gateway.list_nodes, self.gateway.watch_nodes, self.nodes),
            self._follow("Pod", self.gateway.list_pods, self.gateway.watch_pods, self.pods),
        )

    async def _follow(self, kind: str, lister: Callable[[], Any], watcher: Callable[[str], AsyncIterator[WatchEvent]],
                      table: dict[str, Obj]) -> None:
        while True:
            try:
                listing: Listing = await lister()
                fresh = {key_of(o): o for o in listing.items}
                table.clear()
                table.update(fresh)
                self._prune_requests()
                self._touch(kind)
                async for event in watcher(listing.resource_version):
                    key = key_of(event.object)
                    if event.type == "DELETED":
                        table.pop(key, None)
                        uid = (event.object.get("metadata") or {}).get("uid", "")
                        self._requests.pop(uid, None)
                    else:
                        table[key] = event.object
                    self._touch(kind)
                log.debug("%s watch ended; relisting", kind)
            except asyncio.CancelledError:
                raise
            except GatewayError as exc:
                log.info("%s watch: %s; relisting", kind, exc)
                await self.clock.sleep(0.5)
            except Exception:  # noqa: BLE001 - keep the cache alive, log the surprise
                log.exception("%s watch failed; relisting", kind)
                await self.clock.sleep(1.0)

    def _touch(self, kind: str) -> None:
        self.changed.set()
        for listener in self.listeners:
            listener()
        self._listed.add(kind)
        if len(self._listed) == 2:
            self.synced.set()

    def _prune_requests(self) -> None:
        live = {(p.get("metadata") or {}).get("uid", "") for p in self.pods.values()}
        for uid in list(self._requests):
            if uid not in live:
                del self._requests[uid]
