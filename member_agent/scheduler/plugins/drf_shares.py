"""Dominant-resource shares: the arithmetic ``drf`` (between jobs) and its hierarchical mode
``hdrf`` (between queues) both use, in one module below both.

A share is the largest ``allocated / cluster total`` over every dimension whose cluster total is
at least 0.1 (``pods`` included; Volcano's ``TotalResource.ResourceNames()``).
"""

from __future__ import annotations

import numpy as np

from member_agent.scheduler.framework.dims import Vector
from member_agent.scheduler.framework.memo import remember


def _inverse(total: Vector) -> tuple[bool, Vector]:
    """Whether any dimension counts, and ``1 / total`` on the counted ones (read-only), remembered
    by the total's bytes: every session of a cluster whose nodes did not change has the same."""
    key = total.tobytes()
    found = _INVERSES.get(key)
    if found is None or found[1].shape != total.shape:
        counted = total >= 0.1
        inverse = np.zeros_like(total)
        inverse[counted] = 1.0 / total[counted]
        inverse.setflags(write=False)
        found = remember(_INVERSES, key, (bool(counted.any()), inverse), 8)
    return found


_INVERSES: dict[bytes, tuple[bool, Vector]] = {}


class DominantShares:
    """Each job's allocated vector and dominant share, kept current as tasks come and go.

    A share is worked out when it is read (:meth:`current`), not on every change: it is a function
    of the allocated vector alone, so the value read is the one an update per change would have
    left, and a job's shares are read by the job order a few times per job while its placements
    change them once per task."""

    def __init__(self, total: Vector) -> None:
        self.total = total
        self.any_dim, self.inv_total = _inverse(total)
        self._inv = self.inv_total.tolist()
        self.allocated: dict[str, Vector] = {}
        #: uid -> the share of ``allocated[uid]``, or None when it changed since last read.
        self.share: dict[str, float | None] = {}

    def share_of(self, allocated: Vector) -> float:
        """max over the counted dimensions of allocated / total (0 when none counts)."""
        if not self.any_dim:
            return 0.0
        return largest_product(allocated.tolist(), self._inv)

    def track(self, uid: str, allocated: Vector) -> None:
        self.allocated[uid] = allocated
        self.share[uid] = None

    def current(self, uid: str) -> float:
        """The job's dominant share (of its allocation as it is now)."""
        share = self.share[uid]
        if share is None:
            share = self.share[uid] = self.share_of(self.allocated[uid])
        return share

    def add(self, uid: str, request: Vector, sign: float = 1.0) -> Vector:
        """Add ``request`` (``sign`` -1: take it away) to the job's allocation, in place (no
        temporary: a placement's handler); the new allocation."""
        allocated = self.allocated[uid]
        if sign > 0:
            allocated += request
        else:
            allocated -= request
        self.share[uid] = None
        return allocated


def largest_product(values: list[float], factors: list[float]) -> float:
    """``max(v * f ...)`` pairwise, as ``float(max((values * factors).tolist()))`` on arrays gives
    it: the same IEEE products, and ``max``'s rule (the first, replaced only by a greater one).
    A plain loop: on a few dims numpy's multiply, or ``max`` over a comprehension, costs twice as
    much, paid per placement by drf's and proportion's handlers."""
    best = values[0] * factors[0]
    for k in range(1, len(values)):
        product = values[k] * factors[k]
        if product > best:
            best = product
    return best
