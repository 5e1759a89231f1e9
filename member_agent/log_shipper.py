"""Ship container logs to the federation when it asks (push on request, docs/protocol.md "Member pods").

The agent long-polls ``GET /caldera/v1/clusters/<cluster>/logrequests``; for each request it reads
the pod's log through the gateway (the sim kubelet's log, or the member API's ``pods/log``) and
streams it as the body of ``POST .../logrequests/<id>``. A pod the member does not have is answered
``?code=404``. The federation ends the POST when its client has everything or went away, which
stops a followed log here. The agent opens every connection; the federation never calls it.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, AsyncIterator
from urllib.parse import quote

import aiohttp

from member_agent.cluster.clock import Clock
from member_agent.cluster.gateway import ClusterGateway, NotFound

log = logging.getLogger("caldera.agent.logs")
POLL_SECONDS = 10
#: how long the first chunk of a log may take before the answer starts without it
FIRST_CHUNK_WAIT = 5.0


class LogShipper:
    def __init__(self, cluster: str, api: Any, gateway: ClusterGateway, clock: Clock) -> None:
        self.cluster = cluster
        self.api = api
        self.gateway = gateway
        self.clock = clock
        self.shipped = 0
        self._tasks: set[asyncio.Task[None]] = set()

    def _rest(self) -> Any:
        endpoints = getattr(self.api, "endpoints", None)
        return endpoints[self.api.active] if endpoints else self.api

    def _url(self, suffix: str = "") -> str:
        return f"/caldera/v1/clusters/{quote(self.cluster)}/logrequests{suffix}"

    async def run(self) -> None:
        try:
            await self._poll_forever()
        finally:  # stopping (or losing the Lease): no log keeps streaming
            for task in list(self._tasks):
                task.cancel()

    async def _poll_forever(self) -> None:
        while True:
            try:
                doc = await self._rest().request("log requests", "GET", self._url(),
                                                 params={"timeoutSeconds": str(POLL_SECONDS)})
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - the federation may be away (or an old one without logs)
                log.debug("polling log requests failed: %s", exc)
                await self.clock.sleep(2.0)
                continue
            for item in doc.get("items") or []:
                task = asyncio.ensure_future(self.ship(item))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)

    async def ship(self, item: dict[str, Any]) -> None:
        rest = self._rest()
        url = rest.server + self._url(f"/{quote(str(item.get('id')))}")
        namespace, name = str(item.get("namespace")), str(item.get("name"))
        try:
            stream = self.gateway.pod_log(namespace, name, bool(item.get("follow")), item.get("tailLines"),
                                          item.get("limitBytes"), str(item.get("container") or "")).__aiter__()
            # the first chunk says whether there is a log at all (a member answers 404 at once); a
            # followed log that has nothing yet starts streaming without it
            first = asyncio.ensure_future(stream.__anext__())
            await asyncio.wait([first], timeout=FIRST_CHUNK_WAIT)
            if first.done() and first.exception() is not None and not isinstance(first.exception(),
                                                                                   StopAsyncIteration):
                raise first.exception()  # type: ignore[misc]
        except NotFound:
            await self._refuse(rest, url, 404, f'pods "{name}" not found in member cluster {self.cluster}')
            return
        except Exception as exc:  # noqa: BLE001 - say why to the client
            await self._refuse(rest, url, 500, f"reading the log of {namespace}/{name} failed: {exc}")
            return

        async def body() -> AsyncIterator[bytes]:
            try:
                yield await first
            except StopAsyncIteration:
                return
            async for chunk in stream:
                yield chunk

        try:
            async with rest.session.post(url, data=body(), ssl=rest.ssl,
                                         timeout=aiohttp.ClientTimeout(total=None, sock_connect=15)) as resp:
                await resp.read()
            self.shipped += 1
        except (aiohttp.ClientError, OSError) as exc:
            log.debug("shipping the log of %s/%s ended: %s", namespace, name, exc)

    async def _refuse(self, rest: Any, url: str, code: int, message: str) -> None:
        try:
            async with rest.session.post(url, params={"code": str(code), "message": message}, ssl=rest.ssl,
                                         timeout=aiohttp.ClientTimeout(total=15)) as resp:
                await resp.read()
        except (aiohttp.ClientError, OSError) as exc:
            log.debug("answering log request %s failed: %s", url, exc)
