"""What a failed SQLite commit costs: undoing the writes that were not yet durable, and resuming.

    python bench/store_rollback.py [--pending 1000,10000,50000]

For each size, a store (with the watch hub, the registry's owner index and one watcher, as the API server
wires them) takes that many writes in one loop turn, the commit fails as on a full disk (SQLITE_FULL,
injected), and the figures are: the time to undo them everywhere (index, hub history and queue, owner
index) and fail their waiters, then the time from "space is back" to the next write being durable (one
probe transaction and one commit). Prints one row per size.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from federation.apiserver.registry import Registry  # noqa: E402
from federation.apiserver.storage import StoreFailed  # noqa: E402
from federation.apiserver.store import Store  # noqa: E402
from federation.apiserver.watch import WatchHub  # noqa: E402


def _obj(i: int) -> dict[str, Any]:
    return {"metadata": {"name": f"cm-{i}", "namespace": "default", "uid": f"u{i}",
                         "ownerReferences": [{"uid": f"owner-{i % 100}", "name": "o", "kind": "ConfigMap",
                                              "apiVersion": "v1"}]},
            "data": {"payload": "x" * 200}}


async def one_round(pending: int) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp) / "db")
        hub = WatchHub(store.rv)
        store.add_listener(hub.publish)
        store.add_rollback_listener(lambda durable, _changes: hub.roll_back(durable))
        registry = Registry(store)
        hub.subscribe("configmaps", None, None, store.rv)
        write = store._write
        full = [True]

        def failing(batch: Any, rv: int) -> None:
            if full[0]:
                raise sqlite3.OperationalError("database or disk is full")
            write(batch, rv)

        store._write = failing  # type: ignore[method-assign]
        for i in range(pending):
            store.put("configmaps", _obj(i), "ADDED")
        started = time.perf_counter()
        with contextlib.suppress(StoreFailed):
            await store.wait_durable()
        undone = time.perf_counter() - started
        assert store.count("configmaps") == 0 and not registry.owners.by_owner
        full[0] = False
        started = time.perf_counter()
        assert await store.probe()
        store.put("configmaps", _obj(0), "ADDED")
        await store.wait_durable()
        resumed = time.perf_counter() - started
        store.close()
        return undone, resumed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pending", default="1000,10000,50000", help="writes pending when the commit fails")
    args = parser.parse_args()
    print(f"{'pending writes':>15} {'undo (ms)':>10} {'us/write':>9} {'resume (ms)':>12}")
    for pending in (int(p) for p in args.pending.split(",")):
        undone, resumed = asyncio.run(one_round(pending))
        print(f"{pending:>15} {undone * 1000:>10.1f} {undone / pending * 1e6:>9.1f} {resumed * 1000:>12.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
