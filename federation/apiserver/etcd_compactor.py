"""Compact etcd's history, as kube-apiserver does (``--etcd-compaction-interval``, 5 min).

Every interval each replica tries to claim the round with a transaction on one bookkeeping key
(``PREFIX/compact_rev_key``, compared by version, so exactly one replica wins per round) and the
winner compacts to the revision it saw one interval earlier. A watch or a continue token older
than the compacted revision then gets 410 Expired; a client relists.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Protocol

from federation.apiserver.etcd_client import op_put
from federation.apiserver.etcdpb import rpc_pb2 as pb
from federation.apiserver.storage import StorageUnavailable


class EtcdStore(Protocol):
    """What the compactor reads of :class:`federation.apiserver.etcd_store.EtcdStore` (which starts
    it): a protocol, so the two modules do not import each other."""

    prefix: bytes
    conn: Any
    config: Any

log = logging.getLogger("caldera.apiserver.etcd")


def _compare_version(key: bytes, version: int) -> Any:
    return pb.Compare(result=pb.Compare.EQUAL, target=pb.Compare.VERSION, key=key, version=version)


async def compact_once(store: EtcdStore, version: int, revision: int) -> tuple[int, int]:
    """Claim round ``version`` and compact to ``revision``; returns (the key's version, current revision)."""
    key = store.prefix + b"compact_rev_key"
    response = await store.conn.txn([_compare_version(key, version)], [op_put(key, str(revision).encode())],
                                    [pb.RequestOp(request_range=pb.RangeRequest(key=key))])
    current = int(response.header.revision)
    if not response.succeeded:  # another replica compacted this round
        kvs = [kv for op in response.responses for kv in op.response_range.kvs]
        return (int(kvs[0].version) if kvs else 0), current
    if revision > 0:
        await store.conn.compact(revision)
        log.info("compacted etcd history up to revision %d", revision)
    return version + 1, current


async def run_compactor(store: EtcdStore) -> None:
    interval = store.config.compaction_interval
    version, last = 0, 0
    while True:
        await asyncio.sleep(interval)
        try:
            version, last = await compact_once(store, version, last)
        except StorageUnavailable as exc:
            log.warning("etcd compaction skipped: %s", exc)
