"""Issue 42: a key that keeps failing is retried for ever; its backoff never overflows.

The worker computed ``base * 2 ** (count - 1)``: after 1,025 failures of one key the power no
longer fits a float, OverflowError escaped the worker and the controller silently stopped.
"""

from __future__ import annotations

import asyncio

from federation.controllers.runner import WorkQueue, run_workers

FAILURES = 1_100  # past the 1,025th failure that used to kill the worker


async def test_a_key_failing_past_1025_times_is_still_retried() -> None:
    queue, stop, succeeded = WorkQueue(), asyncio.Event(), asyncio.Event()
    calls = 0

    async def reconcile(key: object) -> None:
        nonlocal calls
        calls += 1
        if calls <= FAILURES:
            raise RuntimeError(f"failure {calls}")
        succeeded.set()

    # a zero cap retries at once, so 1,100 failures take well under a second
    workers = asyncio.create_task(run_workers(queue, reconcile, stop, workers=1, base_backoff=0.5,
                                              max_backoff=0.0, name="overflow"))
    queue.add("key")
    try:
        await asyncio.wait_for(succeeded.wait(), timeout=20)
    finally:
        stop.set()
        await workers
    assert calls == FAILURES + 1
