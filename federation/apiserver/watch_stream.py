"""Watch streams: the initial state, then the hub's events, as JSON lines or protobuf frames.

A watch with ``resourceVersion`` "" or "0" (or ``sendInitialEvents``) starts with the current objects;
one from a resourceVersion older than the hub's history is fed from the store's own history (etcd's
watch from that revision), and answered 410 Expired once the backend compacted it. Events are written
only once committed (group commit), coalesced on a busy stream; bookmarks keep an idle client's
resourceVersion fresh. kubernetes-asyncio reads a watch's errors as one-line ERROR events on a 200
stream, so errors after the stream starts are sent that way.
"""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
from aiohttp import web

from federation.apiserver import params, protobuf, table
from federation.apiserver import status as st
from federation.apiserver.protobuf.media import preference
from federation.apiserver.registry import resource_key
from federation.apiserver.state import ApiServerState
from federation.apiserver.status import expired
from federation.apiserver.storage import Expired, StoreFailed
from policies.kinds import KindInfo

Obj = dict[str, Any]


def _flag(value: str | None) -> bool:
    return (value or "").lower() in ("true", "1")


def _lookup(state: ApiServerState) -> Any:
    """Objects by kind, namespace and name, for the table columns that read another object."""
    return state.registry.context().get


async def serve(state: ApiServerState, request: web.Request, info: KindInfo, ns: str | None, predicate: Any,
                lister: Any = None, resource: str | None = None) -> web.StreamResponse:
    """A watch of ``info`` in ``ns`` (all namespaces: None) for the objects ``predicate`` selects, as
    the request's query asks. With ``lister`` and ``resource``: a view's watch (its own hub key; no
    store history)."""
    rv_text = request.query.get("resourceVersion") or ""
    initial = rv_text in ("", "0") or _flag(request.query.get("sendInitialEvents"))
    since: int | None = None
    if rv_text not in ("", "0"):
        try:
            since = int(rv_text)
        except ValueError:
            raise st.bad_request(f"invalid resourceVersion {rv_text!r}") from None
    timeout = params.watch_timeout(request.query.get("timeoutSeconds"))
    bookmarks = _flag(request.query.get("allowWatchBookmarks"))
    as_table = table.wants_table(request.headers.get("Accept", ""))
    # a typed client (client-go) watches built-in kinds as length-prefixed protobuf frames
    as_protobuf = (not as_table and preference(request.headers.get("Accept", "")).protobuf_first
                   and protobuf.message_for(info.api_version, info.kind) is not None)
    hub = state.hub
    view = resource is not None
    resource = resource or resource_key(info)
    media = protobuf.WATCH_MEDIA_TYPE if as_protobuf else "application/json"
    response = web.StreamResponse(status=200, headers={"Content-Type": media})
    try:
        since_rv = None if initial else since
        watcher = (hub.subscribe(resource, ns, predicate, since_rv) if view
                   else await _subscribe(state, resource, ns, predicate, since_rv))
    except st.ApiError as exc:
        # kubernetes-asyncio reads watch errors as one-line ERROR events on a 200 stream
        await response.prepare(request)
        await response.write(watch_event(as_protobuf, "ERROR", exc.to_status()))
        return response
    state.metrics.watch_started(info.plural)
    try:
        await response.prepare(request)
        now = state.registry.clock
        include = request.query.get("includeObject", "PartialObjectMetadata")

        def encode(type_: str, obj: Obj, shared: bytes | None = None) -> bytes:
            if as_protobuf:
                return watch_event(True, type_, obj)
            if as_table:
                doc = table.table(info, [obj], now(), _lookup(state), include,
                                  {"resourceVersion": obj["metadata"].get("resourceVersion", "")})
                return orjson.dumps({"type": type_, "object": doc}) + b"\n"
            return shared if shared is not None else orjson.dumps({"type": type_, "object": obj}) + b"\n"

        if initial:
            current = (lister or state.registry.list)(info, ns, predicate)
            await state.store.wait_durable(state.store.rv)
            if current:
                await response.write(b"".join(encode("ADDED", o) for o in current))
            if _flag(request.query.get("sendInitialEvents")) or bookmarks:
                await response.write(_bookmark(state, info, initial_end=True, as_protobuf=as_protobuf))
        await _pump(state, response, watcher, encode, timeout, bookmarks, info, as_protobuf)
    except (ConnectionResetError, asyncio.CancelledError):
        pass
    except StoreFailed:
        pass  # the initial state it was about to send was undone by a failed commit: the client lists again
    finally:
        hub.unsubscribe(watcher)
        state.metrics.watch_ended(info.plural)
    return response

async def _subscribe(state: ApiServerState, resource: str, ns: str | None, predicate: Any, since: int | None) -> Any:
    """A hub watcher; one older than the hub's history is fed from the store's own history (etcd's
    watch from that revision), and 410 Expired once the backend compacted it."""
    hub = state.hub
    if since is None or since >= hub.floor:
        return hub.subscribe(resource, ns, predicate, since)
    watcher = hub.detached(resource, ns, predicate)
    try:
        feeder = await state.store.history(resource, ns, since, watcher.offer_change)
    except Expired:
        feeder = None
    if feeder is None:
        raise expired(since, hub.floor)
    feeder.add_done_callback(lambda _task: watcher.put(None))
    watcher.feeder = feeder
    return watcher

def _bookmark(state: ApiServerState, info: KindInfo, initial_end: bool = False, as_protobuf: bool = False,
              rv: int | None = None) -> bytes:
    meta: Obj = {"resourceVersion": str(state.store.rv if rv is None else rv)}
    if initial_end:
        meta["annotations"] = {"k8s.io/initial-events-end": "true"}
    return watch_event(as_protobuf, "BOOKMARK", {"kind": info.kind, "apiVersion": info.api_version,
                                                       "metadata": meta})

def watch_event(as_protobuf: bool, type_: str, obj: Obj) -> bytes:
    if as_protobuf:
        frame = protobuf.watch_frame(type_, obj)
        if frame is None:  # a stored object its message cannot hold: end the stream, the client relists
            raise ConnectionResetError(f"{obj.get('kind')} {type_} has no protobuf form")
        return frame
    return orjson.dumps({"type": type_, "object": obj}) + b"\n"

async def _pump(state: ApiServerState, response: web.StreamResponse, watcher: Any, encode: Any, timeout: float,
                bookmarks: bool, info: KindInfo, as_protobuf: bool = False) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    queue = watcher.queue
    interval = state.bookmark_interval
    sent = state.metrics.watch_sent.labels(info.plural)  # looked up once, not per write
    newest = 0
    last_write = 0.0
    coalesce = state.store.watch_coalesce_s
    while not state.stopping:
        remaining = deadline - loop.time()
        if remaining <= 0:
            return
        if not await watcher.wait(min(remaining, interval)):
            if bookmarks and (watcher.feeder is None or newest):
                await state.store.wait_durable()
                # a watcher fed from etcd's history may lag the cache: it bookmarks what it sent
                await response.write(_bookmark(state, info, as_protobuf=as_protobuf,
                                                    rv=newest if watcher.feeder else None))
            continue
        if coalesce and loop.time() - last_write < coalesce:
            await asyncio.sleep(coalesce)  # a busy stream: let the next events join this write
        item = queue.get_nowait()
        chunks: list[bytes] = []
        events: list[Any] = []
        done = False
        while True:
            if item is None:
                done = True
                break
            type_, event = item
            if as_protobuf:  # a protobuf frame per event, shared by the kind's protobuf watchers
                chunks.append(event.frame(type_, lambda t, o: watch_event(True, t, o)))
            else:
                chunks.append(encode(type_, event.obj, event.line(type_)))
            events.append(event)
            newest = event.rv
            if queue.empty() or len(chunks) >= 512:
                break
            item = queue.get_nowait()
        if chunks:
            try:
                await state.store.wait_durable(newest)  # events are sent once committed
            except StoreFailed:  # a failed commit undid some of them (SQLite): send the rest only
                chunks = [chunk for chunk, event in zip(chunks, events, strict=True) if not event.undone]
        if chunks:
            await response.write(b"".join(chunks))
            last_write = loop.time()
            sent.inc(len(chunks))
        if done:
            return
