"""Watches older than the store's cache, answered from etcd's own history.

A watch from a resourceVersion the cache no longer covers is replayed by an etcd watch with
previous values from that revision on (etcd keeps history until compaction); a compacted
revision is ``410 Expired``, as kube-apiserver answers it.
"""

from __future__ import annotations

import asyncio
import logging

import grpc
import grpc.aio

from federation.apiserver.etcd_client import EtcdConnection, prefix_end
from federation.apiserver.etcd_keys import KeyLayout, decode, deleted_at
from federation.apiserver.storage import Expired, HistorySink, StorageUnavailable

log = logging.getLogger("caldera.apiserver.etcd")
DELETE = 1  # mvccpb.Event.EventType


async def follow_history(conn: EtcdConnection, keys: KeyLayout, resource: str, namespace: str | None,
                         since: int, sink: HistorySink) -> asyncio.Task[None]:
    """Replay and follow ``resource`` from revision ``since + 1`` into ``sink`` (Expired when
    etcd compacted that revision away)."""
    start = keys.resource_prefix(resource, namespace)
    try:
        await conn.range(start, prefix_end(start), revision=since + 1, count_only=True)
    except StorageUnavailable as exc:
        if "compacted" in str(exc):
            raise Expired(since, 0) from None
        raise
    return asyncio.create_task(_replay(conn, keys, resource, start, since, sink), name="etcd-history-watch")


async def _replay(conn: EtcdConnection, keys: KeyLayout, resource: str, start: bytes, since: int,
                  sink: HistorySink) -> None:
    stream = conn.watch_stream(start, prefix_end(start), since + 1, True)
    try:
        async for response in stream:
            if response.compact_revision or response.canceled:
                return  # the client re-watches and then hears 410 (or resumes elsewhere)
            for event in response.events:
                if keys.parse(event.kv.key) is None:
                    continue
                revision = int(event.kv.mod_revision)
                prev = decode(event.prev_kv.value, event.prev_kv.mod_revision) if event.prev_kv.key else None
                if event.type == DELETE:
                    if prev is not None:
                        sink("DELETED", resource, deleted_at(prev, revision), prev)
                else:
                    sink("MODIFIED" if prev is not None else "ADDED", resource, decode(event.kv.value, revision), prev)
    except grpc.aio.AioRpcError as exc:
        log.info("etcd history watch ended: %s", why(exc))
    finally:
        stream.cancel()


def why(exc: BaseException) -> str:
    """A gRPC failure in one line."""
    if isinstance(exc, grpc.aio.AioRpcError):
        return f"{exc.code().name}: {exc.details()}"
    return str(exc)
