"""Why a task found no node: per-node reason codes, summarised Volcano's way (``FitErrors``)."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

import numpy as np

from member_agent.scheduler.framework.status import Code

if TYPE_CHECKING:
    from member_agent.scheduler.framework.session import Session
    from member_agent.scheduler.framework.shape_cache import ShapeCache


class FitErrors:
    """Per-node failure reasons of one task, summarised Volcano's way."""

    def __init__(self, ssn: Session, codes: np.ndarray, prefix: str = "") -> None:
        self.ssn = ssn
        self.codes = codes  # one code per node row (0 where the node was not the reason)
        self.prefix = prefix

    def histogram(self) -> Counter[str]:
        counts = np.bincount(self.codes[self.codes > 0])
        texts = self.ssn.reasons.texts
        return Counter({texts[c]: int(k) for c, k in enumerate(counts) if k and c})

    def unresolvable_rows(self) -> np.ndarray:
        kinds = np.array(self.ssn.reasons.kinds, dtype=np.int32)
        return np.flatnonzero(kinds[self.codes] == Code.UNRESOLVABLE)

    def message(self) -> str:
        hist = self.histogram()
        n = len(self.ssn.node_names)
        parts = sorted(f"{count} {text}" for text, count in hist.items())
        return f"{self.prefix}0/{n} nodes are unavailable: {', '.join(parts)}."


SIBLING_FAILED = "node(s) failed for another task of the same role"


def reason_codes(ssn: Session, cache: ShapeCache, rows: np.ndarray, check_resources: bool,
                 failed: np.ndarray | None) -> np.ndarray:
    """A reason code per row of ``rows`` from the shape's entries (0: the row passes): a short
    FutureIdle first (the resource check runs before the other predicates in allocate's predicate),
    then the predicates' code, then a sibling's failure (``failed``) on a row that would pass now."""
    codes = cache.codes[rows].copy()
    if check_resources:
        short = ~cache.fit_future[rows]
        if short.any():
            codes[short] = cache.insufficient_reasons(ssn, rows[short])
    if failed is not None:  # a node a sibling failed on that would pass now (resources freed since)
        sibling = ssn.reasons.code(SIBLING_FAILED, Code.UNSCHEDULABLE)
        codes[(codes == 0) & failed[rows]] = sibling
    reasons: np.ndarray = codes
    return reasons
