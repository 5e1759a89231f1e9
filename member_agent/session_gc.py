"""The garbage collector's pace while scheduling sessions run.

A session allocates hundreds of thousands of small objects (job and task infos, plan entries,
per-shape answers) that live until it closes, over a heap of long-lived ones: the scheduler
cache, the informers' stores, a replay's trace and results. With CPython's default first
threshold (700 net allocations) the young generation is walked every few hundred objects, and
each tenth of those promotions ends in a collection of the middle generation; a full collection,
which walks the whole long-lived heap, lands inside a large session now and then: about 0.3 s of
a 20,000-node session with one shape per job (``bench/scheduler.py --mixed --shapes per-job
--nodes 20000``), a fifth of a Philly replay's wall time when it was first measured
(``bench/simulate.py philly``). A session's objects hold few reference cycles and refcounting
frees the rest as soon as they die, so collecting less often while it runs barely moves the
peak memory.

The thresholds are the process's, and the agent runs its sessions in a worker thread while the
event loop goes on: overlapping holders are counted, the first one relaxes the collector and the
last one to leave restores the thresholds it found.
"""

from __future__ import annotations

import gc
import threading
from contextlib import contextmanager
from typing import Iterator, Optional

#: the collector's first threshold while a session (or a replay of many sessions) runs; CPython's is 700
SESSION_GC_THRESHOLD = 200_000
#: the oldest generation's threshold then: full collections at most every 100 middle-generation ones
FULL_COLLECTION_EVERY = 100

_lock = threading.Lock()
_holders = 0
_found: Optional[tuple[int, int, int]] = None


@contextmanager
def relaxed_gc() -> Iterator[None]:
    """Collect garbage less often inside the block; the thresholds found are back when the last holder leaves."""
    global _holders, _found
    with _lock:
        if _holders == 0:
            first, middle, full = gc.get_threshold()
            _found = (first, middle, full)
            gc.set_threshold(max(first, SESSION_GC_THRESHOLD), middle, max(full, FULL_COLLECTION_EVERY))
        _holders += 1
    try:
        yield
    finally:
        with _lock:
            _holders -= 1
            if _holders == 0 and _found is not None:
                gc.set_threshold(*_found)
                _found = None
